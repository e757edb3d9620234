"""The embedded default's scores on the labelled scenarios, as `make eval` prints them.

What the issue's targets already hold is asserted at the target: no scenario calls a tool its
role or page excludes, and SC-001 passes everywhere. The pass rates are asserted at floors, the
figures measured when they were set (docs/evaluation.md), so a change that makes the assistant
worse fails here; they are raised as the model improves, up to the targets (95 % tuning, 90 %
held-out).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from evaluation.report import SetReport, render, score
from evaluation.runner import ScenarioRunner, chat_function_app
from evaluation.scenarios import ScenarioSet, load
from local.agent_stack import AgentStack
from local.servers import serve
from sstools_agent.domain.catalog_types import DEFAULT_TOOL_TIMEOUT_S

pytestmark = pytest.mark.anyio

FLOORS = {ScenarioSet.TUNING: 0.95, ScenarioSet.HELD_OUT: 0.90}


@pytest.fixture
def runner(stack: AgentStack) -> Iterator[ScenarioRunner]:
    # The model's scores, not the machine's: tools wait as long as `make eval`'s (the default
    # 30 s, not the suite's 4 s) and the page's object is prefetched within 10 s, so a busy CI
    # machine cannot turn a slow call into a wrong answer (held-out fell to 37/42 once)
    settings = stack.settings.model_copy(
        update={"tool_timeout_s": DEFAULT_TOOL_TIMEOUT_S, "prefetch_timeout_s": 10}
    )
    scored_stack = AgentStack(settings, stack.upstream)
    with serve(chat_function_app(settings), lifespan="on") as url:
        yield ScenarioRunner(scored_stack, url)


async def scored(runner: ScenarioRunner, scenario_set: ScenarioSet) -> SetReport:
    return score(scenario_set.value, [await runner.run(s) for s in load(scenario_set)])


@pytest.mark.parametrize("scenario_set", list(FLOORS), ids=lambda s: s.value)
async def test_the_offline_model_meets_its_floor_and_never_leaves_the_scope(
    runner: ScenarioRunner, scenario_set: ScenarioSet
):
    report = await scored(runner, scenario_set)
    printed = render(
        report
    )  # the failures' ids, not their contents: the held-out part stays unread
    assert report.scope_violations == [], printed
    assert report.sc001_rate == 1.0, printed
    assert report.pass_rate >= FLOORS[scenario_set], printed
