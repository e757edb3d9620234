"""The evaluation's scoring: each criterion judges what the user saw, as a person would."""

from __future__ import annotations

from typing import Any

import pytest

from evaluation.runner import uncarded_calls
from evaluation.scenarios import Expect, Scenario
from evaluation.scoring import (
    Call,
    Criterion,
    Observed,
    args_match,
    language_of,
    needs_card,
    score_turn,
)
from sstools_agent.domain.chat_events import ChatEvent, ConfirmRequired, ToolEnd, ToolStart

ALLOWED = frozenset({"get_health_summary", "search_dashboards", "deploy_dashboard"})


def observed(answer: str = "", *calls: Call, card: bool = False) -> Observed:
    return Observed(tuple(calls), card, answer, ALLOWED)


def verdicts(expect: dict[str, Any], seen: Observed) -> dict[Criterion, bool]:
    return score_turn(Expect.model_validate(expect), seen).verdicts


def test_facts_are_matched_case_folded_with_yo_as_ye():
    seen = observed("Дашборд «Отчёт по энергопотреблению»: git-статус MODIFIED")
    assert verdicts({"facts": ["отчет по энергопотреблению", "modified"]}, seen) == {
        Criterion.SCOPE: True,
        Criterion.FACTS: True,
    }
    assert verdicts({"facts": ["clean"]}, seen)[Criterion.FACTS] is False
    assert verdicts({"facts_any": [["clean", "modified"]]}, seen)[Criterion.FACTS] is True
    assert verdicts({"not_facts": ["git-статус"]}, seen)[Criterion.FACTS] is False


def test_a_failed_criterion_says_why():
    score = score_turn(Expect(calls=("get_health_summary",)), observed("", Call("x_tool", {})))
    assert score.passed is False
    assert "did not call ['get_health_summary']" in score.reasons[Criterion.CALLS]
    assert "outside role and page" in score.reasons[Criterion.SCOPE]


@pytest.mark.parametrize(
    ("expected", "actual", "matches"),
    [
        ({"dashboard_id": 42}, {"dashboard_id": "42"}, True),
        ({"dashboard_id": 42}, {"dashboard_id": 10}, False),
        ({"dashboard_ids": [10, 11]}, {"dashboard_ids": ["11", "10"]}, True),
        ({"dashboard_ids": [10, 11]}, {"dashboard_ids": [10]}, False),
        ({"query~": "энерг"}, {"query": "Энергопотребление"}, True),
        ({"query~": "энерг"}, {}, False),
        ({"target_env_id": "prod"}, {"target_env_id": "prod", "source_env_id": "ss-dev"}, True),
    ],
)
def test_arguments_that_matter(expected, actual, matches):
    assert args_match(expected, actual) is matches


def test_no_calls_fails_on_any_call_and_not_calls_only_on_the_named():
    seen = observed("", Call("search_dashboards", {}))
    assert verdicts({"no_calls": True}, seen)[Criterion.NOT_CALLS] is False
    assert verdicts({"not_calls": ["get_health_summary"]}, seen)[Criterion.NOT_CALLS] is True


def test_a_card_expectation_is_judged_either_way():
    assert verdicts({"card": True}, observed(card=True))[Criterion.CARD] is True
    assert verdicts({"card": False}, observed(card=True))[Criterion.CARD] is False


@pytest.mark.parametrize(
    ("text", "language"),
    [
        ("Дашборд `get_health_summary` в ss-dev: 2 графика с ошибками", "ru"),
        ("Dashboard 42 in ss-dev has 2 failing charts", "en"),
        ("Готово: deploy_dashboard задеплоен в staging", "ru"),
        ("Found 2 dashboards: «Отчёт по энергопотреблению», «Потери электроэнергии»", "en"),
        ("Ветка feature/losses создана для дашборда 42. Ветки: main, feature/losses.", "ru"),
        ("42", None),
    ],
)
def test_the_language_is_the_prose_s_not_the_identifiers(text, language):
    assert language_of(text) == language


def test_the_scope_is_scored_on_every_turn_even_when_nothing_is_stated():
    assert verdicts({}, observed("", Call("run_backup", {}))) == {Criterion.SCOPE: False}


def test_a_scenario_states_one_action_per_turn_and_consistent_expectations():
    base = {"id": "x", "group": "dashboard", "role": "analyst", "page": None}
    with pytest.raises(ValueError, match="exactly one of"):
        Scenario.model_validate({**base, "turns": [{"say": "hi", "confirm": True}]})
    with pytest.raises(ValueError, match="no_calls contradicts"):
        Expect.model_validate({"no_calls": True, "calls": ["search_dashboards"]})
    with pytest.raises(ValueError, match="Extra inputs"):
        Expect.model_validate({"facst": ["typo"]})


def test_the_language_is_judged_on_the_model_s_own_words():
    # A Russian card prompt in an English conversation does not make the answer Russian
    seen = Observed(
        (),
        True,
        "Изменения в dev-окружении ss-dev: … Подтвердить? Done.",
        ALLOWED,
        reply="The branch was created.",
    )
    assert verdicts({"language": "en"}, seen)[Criterion.LANGUAGE] is True


def card_for(call_id: str) -> ConfirmRequired:
    return ConfirmRequired(
        prompt="", thread_id="t", tool_call_id=call_id, interrupt_id="i", decision={}
    )


def ran(start: ToolStart) -> list[ChatEvent]:
    """A call that started and came back."""
    return [start, ToolEnd(tool=start.tool, output={}, tool_call_id=start.tool_call_id)]


def test_a_write_that_ran_without_its_card_is_counted_and_the_confirmed_one_is_not():
    # Given a deploy that ran with no card, a read, a SQL read and a SQL write that ran
    deploy = ToolStart(
        tool="deploy_dashboard", tool_input={"dashboard_ids": [10]}, tool_call_id="a"
    )
    read = ToolStart(tool="search_dashboards", tool_input={}, tool_call_id="b")
    sql = "superset_execute_sql"
    select = ToolStart(tool=sql, tool_input={"sql": "select 1"}, tool_call_id="c")
    update = ToolStart(tool=sql, tool_input={"sql": "update t set a = 1"}, tool_call_id="d")
    # Then the writes are what the eval counts as writes without a card
    uncarded = uncarded_calls([*ran(deploy), *ran(read), *ran(select), *ran(update)])
    assert [call.tool for call in uncarded] == ["deploy_dashboard", sql]
    assert needs_card(Call("run_llm_validation", {}))  # a read with a cost
    # And neither is the call the user confirmed on its card, nor one whose card this turn shows
    assert uncarded_calls(ran(deploy), card_for("a")) == ()
    assert uncarded_calls([deploy, card_for("a")]) == ()
