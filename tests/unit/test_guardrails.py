"""GuardrailDecision : risk by environment tier and operation."""

from __future__ import annotations

import pytest

from sstools_agent.domain.catalog_types import DASHBOARD_NOUN
from sstools_agent.domain.confirmation_outcomes import (
    abandoned_read_text,
    call_text,
    cancellation_text,
    outcome_text,
    unshown_card_text,
)
from sstools_agent.domain.confirmations import ExecutionState
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.guardrails import GuardrailDecision, edit_asks_again
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_calls import MAX_TOOL_ARGS_BYTES, InvalidToolCall
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.ui_context import UIContext


def dashboard_page(env_id: str | None = "ss-dev") -> UIContext:
    payload = {"contextVersion": 1, "objectType": "dashboard", "objectId": "10", "envId": env_id}
    return UIContext.model_validate(payload, context={"environments": DEFAULT_ENVIRONMENTS})


def deploy(target: str, ids: list[int] | list[str]) -> dict[str, object]:
    return {"dashboard_ids": ids, "source_env_id": "ss-dev", "target_env_id": target}


def test_a_prod_deploy_is_dangerous_destructive_with_the_production_badge(policy):
    # Story 2, acceptance 1
    decision = policy.evaluate(
        Role.ADMIN, "deploy_dashboard", deploy("prod", [10, 11, 12]), dashboard_page()
    )
    assert decision.permission.allowed
    assert decision.requires_confirmation
    assert decision.risk == "dangerous"
    assert decision.tone == "destructive"
    assert decision.badge == "⚠️ PRODUCTION"
    assert decision.environment == "prod"
    assert decision.environment_tier == "prod"
    assert decision.operation == "write"
    assert decision.impact == "3 дашборда будут изменены"
    # The warning names the action and the environment in words; the badge and the impact are
    # the card's own lines (each said once), never the tool's id
    assert decision.prompt == (
        "Внимание, рабочее окружение prod: деплой дашбордов в другое окружение. Подтвердить?"
    )


def test_two_dashboards_to_prod(policy):
    decision = policy.evaluate(
        Role.ADMIN, "deploy_dashboard", deploy("prod", [10, 42]), dashboard_page()
    )
    assert decision.impact == "2 дашборда будут изменены"


@pytest.mark.parametrize(("target", "tier"), [("ss-dev", "dev"), ("staging", "staging")])
def test_a_dev_or_staging_deploy_is_guarded_and_info_toned(policy, target, tier):
    # Story 2, acceptance 2
    decision = policy.evaluate(
        Role.ENGINEER, "deploy_dashboard", deploy(target, [10]), dashboard_page()
    )
    assert decision.permission.allowed
    assert decision.requires_confirmation
    assert decision.risk == "guarded"
    assert decision.tone == "info"
    assert decision.prompt.startswith(f"Изменения в {tier}-окружении")
    assert "⚠️" not in (decision.badge or "") + decision.prompt
    assert decision.impact == "1 дашборд будет изменён"


def test_a_read_is_labelled_reading_with_success_tone(policy):
    # Story 2, acceptance 3 (with HITL enabled for reads by configuration)
    confirming = ToolPolicy(
        CATALOG, DEFAULT_ENVIRONMENTS, confirm_reads=frozenset({"search_dashboards"})
    )
    decision = confirming.evaluate(
        Role.ANALYST, "search_dashboards", {"query": "энерг"}, dashboard_page("prod")
    )
    assert decision.requires_confirmation
    assert decision.risk == "safe"
    assert decision.tone == "success"
    assert decision.label == "чтение данных"
    assert decision.operation == "read"
    assert "⚠️" not in (decision.badge or "") + decision.prompt
    # Without that setting a read needs no confirmation at all
    plain = policy.evaluate(Role.ANALYST, "search_dashboards", {}, dashboard_page("prod"))
    assert plain.requires_confirmation is False


def test_a_denied_call_has_no_confirmation_and_names_the_role(policy):
    # Story 2, acceptance 4: pre-rejected server-side, «Недостаточно прав», no confirm button
    decision = policy.evaluate(
        Role.ANALYST, "commit_changes", {"dashboard_id": 10, "message": "x"}, dashboard_page()
    )
    assert decision.permission.allowed is False
    assert decision.requires_confirmation is False
    assert decision.permission.required_role == Role.ENGINEER
    assert (
        decision.prompt
        == "Недостаточно прав: «коммит изменений дашборда в git» требует роль «инженер»."
    )
    payload = decision.to_payload()
    assert payload["permission"] == {
        "allowed": False,
        "user_role": "analyst",
        "required_role": "engineer",
        "reason": decision.permission.reason,
    }


@pytest.mark.parametrize(
    ("sql", "tone", "impact"),
    [
        ("DROP TABLE energy", "warning", "SQL изменит данные (DROP)"),
        ("UPDATE energy SET v = 0 WHERE id = 1", "info", "SQL изменит данные (UPDATE)"),
        ("SELEC broken", "warning", "SQL не разобран: выполнение считается изменением данных"),
    ],
)
def test_sql_writes_outside_prod_are_louder_when_destructive(policy, sql, tone, impact):
    payload = {"contextVersion": 1, "objectType": "dataset", "objectId": "15", "envId": "staging"}
    page = UIContext.model_validate(payload, context={"environments": DEFAULT_ENVIRONMENTS})
    decision = policy.evaluate(
        Role.ENGINEER, "superset_execute_sql", {"database_id": 1, "sql": sql}, page
    )
    assert decision.operation == "write"
    assert decision.tone == tone
    assert decision.impact == impact


def test_admin_only_tools_describe_their_impact(policy):
    decision = policy.evaluate(
        Role.ADMIN,
        "start_maintenance",
        {"reason": "upgrade", "duration_minutes": 30},
        dashboard_page("prod"),
    )
    assert decision.risk == "dangerous"
    assert decision.impact == "окружение prod будет в режиме обслуживания 30 мин"


def test_invalid_arguments_are_refused_with_a_clear_error(policy):
    with pytest.raises(InvalidToolCall) as raised:
        policy.evaluate(Role.ADMIN, "deploy_dashboard", {"dashboard_ids": []}, dashboard_page())
    assert raised.value.code == "VALIDATION_ERROR"
    assert "dashboard_ids" in raised.value.detail
    with pytest.raises(InvalidToolCall, match="not known"):
        policy.evaluate(Role.ADMIN, "deploy_dashboard", deploy("moon", [1]), dashboard_page())
    with pytest.raises(InvalidToolCall, match="Extra inputs are not permitted"):
        policy.evaluate(Role.ADMIN, "run_backup", {"force": True}, dashboard_page())


def test_arguments_too_large_to_keep_are_refused_within_the_length_limits(policy):
    # 100,000 characters of SQL (the schema's limit), every one a 4-byte character: 400 KB, more
    # than the item that keeps the call (its card, history entry) may hold
    sql = "SELECT '" + "😀" * 99_980 + "'"
    with pytest.raises(InvalidToolCall) as raised:
        policy.evaluate(
            Role.ADMIN, "superset_execute_sql", {"database_id": 1, "sql": sql}, dashboard_page()
        )
    assert raised.value.code == "VALIDATION_ERROR"
    assert f"не больше {MAX_TOOL_ARGS_BYTES // 1024} КБ" in raised.value.detail


def test_a_context_tool_without_an_environment_is_refused(policy):
    with pytest.raises(InvalidToolCall, match="no environment"):
        policy.evaluate(Role.ADMIN, "run_backup", {}, dashboard_page(None))


@pytest.mark.parametrize(
    ("count", "phrase"),
    [
        (1, "1 дашборд будет изменён"),
        (2, "2 дашборда будут изменены"),
        (4, "4 дашборда будут изменены"),
        (5, "5 дашбордов будут изменены"),
        (11, "11 дашбордов будут изменены"),
        (12, "12 дашбордов будут изменены"),
        (21, "21 дашборд будет изменён"),
        (22, "22 дашборда будут изменены"),
        (111, "111 дашбордов будут изменены"),
    ],
)
def test_russian_plurals(count, phrase):
    assert DASHBOARD_NOUN.count_phrase(count) == phrase


def test_a_select_with_side_effects_needs_the_confirmation_of_a_prod_write(policy):
    # Given an admin on a prod dataset page
    payload = {"contextVersion": 1, "objectType": "dataset", "objectId": "15", "envId": "prod"}
    page = UIContext.model_validate(payload, context={"environments": DEFAULT_ENVIRONMENTS})
    sql = "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'bob'"
    # When the agent is about to run a SELECT that ends other sessions
    decision = policy.evaluate(
        Role.ADMIN, "superset_execute_sql", {"database_id": 1, "sql": sql}, page
    )
    # Then it gets the card of any prod write, naming the call that makes it one
    assert decision.permission.allowed
    assert decision.requires_confirmation
    assert decision.operation == "write"
    assert decision.risk == "dangerous"
    assert decision.tone == "destructive"
    assert decision.badge == "⚠️ PRODUCTION"
    assert decision.impact == "SQL может изменить данные или сервер: вызывает pg_terminate_backend"
    assert "superset_execute_sql" not in decision.prompt


@pytest.mark.parametrize(
    ("edited", "asks_again"),
    [
        (deploy("staging", [10]), False),  # no change at all
        (deploy("staging", ["10"]), False),  # the same call, as the tool takes it
        (deploy("staging", [11]), True),  # another dashboard: the card's plan named 10
        (deploy("prod", [10]), True),  # riskier, another environment
        (deploy("ss-dev", [10]), True),  # another environment, same risk
        (deploy("staging", [10, 11]), True),  # another impact («2 дашборда»)
    ],
)
def test_an_edit_asks_again_when_its_card_would_say_anything_else(policy, edited, asks_again):
    shown_args = deploy("staging", [10])
    shown = policy.evaluate(Role.ADMIN, "deploy_dashboard", shown_args, dashboard_page())
    decision = policy.evaluate(Role.ADMIN, "deploy_dashboard", edited, dashboard_page())
    spec = CATALOG.get("deploy_dashboard")
    assert edit_asks_again(spec, shown_args, shown.to_payload(), edited, decision) is asks_again


@pytest.mark.parametrize(
    ("edited", "asks_again"),
    [
        ({"dashboard_id": 10, "message": "исправлены цвета"}, False),  # the message only
        ({"dashboard_id": 11, "message": "fix colours"}, True),  # another dashboard's changes
    ],
)
def test_an_edit_is_covered_only_while_the_plan_is_about_the_same_objects(
    policy, edited, asks_again
):
    # Given a card for committing dashboard 10's changes (its plan: what 10 has uncommitted)
    shown_args = {"dashboard_id": 10, "message": "fix colours"}
    shown = policy.evaluate(Role.ENGINEER, "commit_changes", shown_args, dashboard_page())
    decision = policy.evaluate(Role.ENGINEER, "commit_changes", edited, dashboard_page())
    # Then the card says the same of both (one dashboard in ss-dev), but only the message edit
    # keeps its plan: another dashboard asks again
    assert decision.to_payload() == shown.to_payload()
    spec = CATALOG.get("commit_changes")
    assert edit_asks_again(spec, shown_args, shown.to_payload(), edited, decision) is asks_again


def test_an_edit_that_only_makes_sql_louder_asks_again(policy: ToolPolicy):
    payload = {"contextVersion": 1, "objectType": "dataset", "objectId": "15", "envId": "staging"}
    page = UIContext.model_validate(payload, context={"environments": DEFAULT_ENVIRONMENTS})

    def decided(sql: str) -> GuardrailDecision:
        args = {"database_id": 1, "sql": sql}
        return policy.evaluate(Role.ENGINEER, "superset_execute_sql", args, page)

    shown = decided("DELETE FROM energy WHERE id = 1")
    louder = decided("DELETE FROM energy")
    assert (louder.risk, louder.impact) == (shown.risk, shown.impact)
    spec = CATALOG.get("superset_execute_sql")
    args = {"database_id": 1, "sql": "DELETE FROM energy WHERE id = 1"}
    louder_args = {"database_id": 1, "sql": "DELETE FROM energy"}
    assert edit_asks_again(spec, args, shown.to_payload(), louder_args, louder)


@pytest.mark.parametrize(
    ("tool", "edited_args", "named"),
    [
        (
            "deploy_dashboard",
            {"dashboard_ids": [11], "source_env_id": "ss-dev", "target_env_id": "prod"},
            "«деплой дашбордов в другое окружение» (дашборд 11, окружение prod, с вашими правками)",
        ),
        (
            "deploy_dashboard",
            {"dashboard_ids": [10, 11], "source_env_id": "ss-dev", "target_env_id": "staging"},
            "«деплой дашбордов в другое окружение» "
            "(дашборды 10, 11, окружение staging, с вашими правками)",
        ),
        (
            "create_branch",
            {"dashboard_id": 10, "branch_name": "fix"},
            "«создание git-ветки дашборда» со значениями, которые вы указали",
        ),
        ("no_such_tool", {"x": 1}, "операция со значениями, которые вы указали"),
    ],
)
def test_an_edited_call_is_named_in_the_cards_words_never_as_json(
    tool: str, edited_args: dict[str, object], named: str
):
    # The catalog's label and what the card words of the arguments; the rest is not spelled out
    assert call_text(tool, {}, edited_args) == named
    assert outcome_text(tool, ExecutionState.SUCCEEDED, {}, edited_args) == (
        f"Операция {named} выполнена."
    )


@pytest.mark.parametrize(
    ("tool", "card_args", "named"),
    [
        (
            "deploy_dashboard",
            {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "prod"},
            "«деплой дашбордов в другое окружение» (дашборд 10, окружение prod)",
        ),
        (
            "create_branch",
            {"dashboard_id": 10, "branch_name": "fix"},
            "«создание git-ветки дашборда»",
        ),
        ("no_such_tool", None, "операция"),
    ],
)
def test_a_call_confirmed_as_the_card_showed_is_named_in_the_cards_words(
    tool: str, card_args: dict[str, object] | None, named: str
):
    # Never its identifier: the person reads what to check, not `deploy_dashboard`
    assert outcome_text(tool, ExecutionState.UNKNOWN, card_args).startswith(
        f"Статус операции неизвестен — проверьте статус: {named} был отправлен"
    )


def test_a_call_that_did_not_run_is_named_in_the_cards_words():
    card = {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "prod"}
    edited = {**card, "dashboard_ids": [13]}
    label = "«деплой дашбордов в другое окружение»"
    assert cancellation_text("deploy_dashboard", "denied", card) == (
        f"Операция {label} (дашборд 10, окружение prod) отменена (отклонено пользователем); "
        "ничего не изменено."
    )
    assert unshown_card_text("deploy_dashboard", card, edited).startswith(
        f"Операция {label} (дашборд 13, окружение prod, с вашими правками) не выполнена: "
        "изменённый вызов ждёт нового подтверждения"
    )
    assert "deploy_dashboard" not in abandoned_read_text("deploy_dashboard")
