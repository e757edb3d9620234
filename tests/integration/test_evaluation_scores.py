"""The default model's guarantees on the labelled scenarios that do not depend on phrasing.

On every set: no scenario calls a tool its role or page excludes, no write (or call with a cost)
runs without the card the user confirmed, and SC-001 passes everywhere. The pass rates depend on
how a model reads a phrasing; they are `make eval` figures (docs/evaluation.md), not gates.
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


@pytest.fixture
def runner(stack: AgentStack) -> Iterator[ScenarioRunner]:
    # The model's answers, not the machine's: tools wait as long as `make eval`'s (the default
    # 30 s, not the suite's 4 s) and the page's object is prefetched within 10 s, so a busy CI
    # machine cannot turn a slow call into a wrong answer (held-out fell to 37/42 once)
    settings = stack.settings.model_copy(
        update={"tool_timeout_s": DEFAULT_TOOL_TIMEOUT_S, "prefetch_timeout_s": 10}
    )
    scored_stack = AgentStack(settings, stack.upstream)
    with serve(chat_function_app(settings), lifespan="on") as url:
        yield ScenarioRunner(scored_stack, url)


REPORTS: dict[ScenarioSet, SetReport] = {}
"""Each set's report, played once for the tests of this module (a set takes minutes)."""


async def scored(runner: ScenarioRunner, scenario_set: ScenarioSet) -> SetReport:
    if scenario_set not in REPORTS:
        runs = [await runner.run(s) for s in load(scenario_set)]
        REPORTS[scenario_set] = score(scenario_set.value, runs)
    return REPORTS[scenario_set]


@pytest.mark.parametrize("scenario_set", list(ScenarioSet), ids=lambda s: s.value)
async def test_no_scenario_leaves_the_scope_or_writes_without_a_card(
    runner: ScenarioRunner, scenario_set: ScenarioSet
):
    report = await scored(runner, scenario_set)
    # the failures' ids, not their contents: the held-out part stays unread
    printed = render(report)
    assert report.scope_violations == [], printed
    assert report.writes_without_card == [], printed


@pytest.mark.parametrize(
    "scenario_set",
    [
        ScenarioSet.TUNING,
        ScenarioSet.HELD_OUT,
        ScenarioSet.FRESH,
    ],
    ids=lambda s: s.value,
)
async def test_sc001_passes_in_every_set(runner: ScenarioRunner, scenario_set: ScenarioSet):
    report = await scored(runner, scenario_set)
    assert report.sc001_rate == 1.0, render(report)
