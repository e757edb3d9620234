"""The evaluation harness observes what the user saw, through the real chat app and upstream.

A scenario the agent meets passes; the same turns with one wrong expectation fail on exactly
that criterion, and the report says which scenario and why.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from evaluation.report import render, score
from evaluation.runner import ScenarioRunner, chat_function_app
from evaluation.scenarios import Scenario
from evaluation.scoring import Criterion
from local.agent_stack import AgentStack
from local.servers import serve
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio


@pytest.fixture
def runner(stack: AgentStack) -> Iterator[ScenarioRunner]:
    with serve(chat_function_app(stack.settings), lifespan="on") as url:
        yield ScenarioRunner(stack, url)


def deploy_scenario(confirm_expect: dict[str, Any]) -> Scenario:
    return Scenario.model_validate(
        {
            "id": "deploy-and-confirm",
            "group": "confirm",
            "role": "engineer",
            "page": DASHBOARD_10,
            "turns": [
                {
                    "say": "задеплой этот дашборд в staging",
                    "expect": {
                        "card": True,
                        "calls": ["deploy_dashboard"],
                        "args": {"deploy_dashboard": {"target_env_id": "staging"}},
                    },
                },
                {"confirm": True, "expect": confirm_expect},
            ],
        }
    )


async def test_a_confirmed_deploy_is_observed_as_the_user_saw_it(
    runner: ScenarioRunner, stack: AgentStack
):
    run = await runner.run(
        deploy_scenario({"calls": ["deploy_dashboard"], "not_facts": ["отменено"]})
    )
    report = score("harness", [run])
    assert report.pass_rate == 1.0, render(report, verbose=True)
    # The confirmed call reached the upstream once, with the card's arguments
    card, confirmed = run.observed
    assert card.card_shown
    assert not confirmed.card_shown
    assert confirmed.calls[0].args == card.calls[0].args
    assert stack.upstream.plan.requests("POST", "/api/dashboards/deploy") == 1


async def test_a_wrong_expectation_fails_on_its_criterion_and_is_reported(
    runner: ScenarioRunner,
):
    run = await runner.run(deploy_scenario({"no_calls": True, "facts": ["nothing changed"]}))
    report = score("harness", [run])
    [scored] = report.scenarios
    first, second = scored.turns
    assert first.passed
    assert second.verdicts == {
        Criterion.SCOPE: True,
        Criterion.NOT_CALLS: False,
        Criterion.FACTS: False,
    }
    printed = render(report, verbose=True)
    assert "0/1 scenarios pass" in printed
    assert "deploy-and-confirm" in printed
    assert "turn 2: not_calls: called ['deploy_dashboard']" in printed


async def test_a_confirm_with_no_card_is_sent_and_its_refusal_observed(runner: ScenarioRunner):
    scenario = Scenario.model_validate(
        {
            "id": "confirm-without-card",
            "group": "confirm",
            "role": "engineer",
            "page": DASHBOARD_10,
            "turns": [
                {"say": "какой статус у этого дашборда?"},
                {"confirm": True, "expect": {"no_calls": True}},
            ],
        }
    )
    run = await runner.run(scenario)
    refused = run.observed[1]
    assert refused.refusal is not None
    assert refused.calls == ()
