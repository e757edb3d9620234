"""The plan of a change on its card, through the chat function over HTTP and the sample upstream:
read before the card is shown, in words, what prod holds now; a plan that cannot be read still
leaves a card that says why; a reconnect shows the same plan."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local.agent_stack import AgentStack
from local.fault_injection import Fault, FaultKind
from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.tool_catalog import CATALOG
from tests.support.chat_server import ChatServer, make_chat, post_stream
from tests.support.seed import DASHBOARD_10, DATASET_15

pytestmark = pytest.mark.anyio
DEPLOYS = ("POST", "/api/dashboards/deploy")


@pytest.fixture
def chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from make_chat(stack)


@pytest.fixture
def impatient_chat(stack: AgentStack) -> Iterator[ChatServer]:
    """Plan reads wait 1 s (the default's 5 s, on a machine this busy, would be the same)."""
    yield from make_chat(stack, plan_timeout_s=1.0)


async def card_for(
    chat: ChatServer, message: str, role: str = "admin", page: dict[str, Any] = DASHBOARD_10
) -> dict[str, Any]:
    status, events, _ = await post_stream(chat, {"message": message, "ui_context": page}, role=role)
    assert status == 200
    card: dict[str, Any] = next(e for e in events if e.type == "confirm_required").data["metadata"]
    return card


def stamp(dashboard: dict[str, Any]) -> tuple[str, str]:
    """«12 ноября» and the author of a dashboard's last change, as the upstream holds them."""
    months = "января февраля марта апреля мая июня июля августа сентября октября ноября декабря"
    at = dashboard["last_change"]["at"]
    return f"{int(at[8:10])} {months.split()[int(at[5:7]) - 1]}", dashboard["last_change"]["by"]


async def test_a_prod_deploy_card_names_the_dashboard_and_what_prod_holds_now(chat: ChatServer):
    dashboards = chat.stack.upstream.state.dashboards
    source, target = dashboards["ss-dev"][10], dashboards["prod"][10]
    card = await card_for(chat, "задеплой этот дашборд в prod")
    plan = card["plan"]
    assert plan["title"] == f"Деплой дашборда #10 «{source['title']}»: ss-dev → prod"
    (line,) = plan["lines"]
    when, who = stamp(target)
    assert f"версия {target['version']} в prod (изменена {when}" in line, line
    assert who in line
    assert f"из ss-dev (изменена {stamp(source)[0]}" in line, line
    assert plan["unread"] is None
    assert plan["digest"]
    # The plan was read, nothing was changed
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_a_dashboard_prod_does_not_have_is_planned_as_created(chat: ChatServer):
    assert 42 not in chat.stack.upstream.state.dashboards["prod"]
    card = await card_for(chat, "задеплой дашборд 42 в prod")
    (line,) = card["plan"]["lines"]
    assert "в prod его ещё нет — будет создан из ss-dev" in line, line


async def test_a_plan_read_that_hangs_still_shows_the_card_and_says_why(
    impatient_chat: ChatServer,
):
    chat = impatient_chat
    chat.stack.upstream.plan.add(
        "GET", "/api/environments/prod/dashboards", Fault(FaultKind.HANG, seconds=5, times=1)
    )
    card = await card_for(chat, "задеплой этот дашборд в prod")
    plan = card["plan"]
    assert plan["title"] == "Деплой дашборда #10: ss-dev → prod"
    assert plan["lines"] == []
    assert plan["unread"] == ("План изменения прочитать не удалось: ss-tools не ответил за 1 с.")
    assert plan["digest"] is None
    assert card["decision"]["risk"] == "dangerous"  # never lower for want of a plan
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_a_reconnect_shows_the_card_with_the_plan_it_was_shown_with(chat: ChatServer):
    card = await card_for(chat, "задеплой этот дашборд в prod")
    conversation = card["thread_id"]
    status, replay, _ = await post_stream(
        chat,
        {
            "action": "resume",
            "conversation_id": conversation,
            "last_event_id": f"{conversation}:999",
        },
        role="admin",
    )
    assert status == 200
    again = next(e for e in replay if e.type == "confirm_required").data["metadata"]
    assert again["plan"] == card["plan"]


def confirm(card: dict[str, Any]) -> dict[str, Any]:
    return {
        "action": "confirm",
        "conversation_id": card["thread_id"],
        "confirmation_id": card["confirmation_id"],
    }


async def test_a_card_whose_target_changed_since_it_was_shown_runs_nothing_and_asks_again(
    chat: ChatServer,
):
    # Given two cards for the same prod deploy, in two conversations
    first = await card_for(chat, "задеплой этот дашборд в prod")
    second = await card_for(chat, "задеплой этот дашборд в prod")
    assert first["plan"]["digest"] == second["plan"]["digest"]
    # When the second is confirmed first (prod changes), then the first
    status, events, _ = await post_stream(chat, confirm(second), role="admin")
    assert status == 200
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1
    status, events, _ = await post_stream(chat, confirm(first), role="admin")
    assert status == 200
    # Then the first runs nothing: it resolves as stale and one new card, with the plan of prod
    # as it is now, waits for the person (the same call)
    assert [e.type for e in events] == ["confirm_resolved", "confirm_required", "stream_end"]
    assert events[0].data["metadata"]["result"] == "stale"
    again = events[1].data["metadata"]
    assert again["confirmation_id"] != first["confirmation_id"]
    assert again["tool_call_id"] == first["tool_call_id"]
    assert again["input"] == first["input"]
    assert again["plan"]["digest"] != first["plan"]["digest"]
    prod = chat.stack.upstream.state.dashboards["prod"][10]
    assert f"версия {prod['version']} в prod" in again["plan"]["lines"][0]
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1
    # The stale card is spent; the new one runs the deploy, once
    status, _, error = await post_stream(chat, confirm(first), role="admin")
    assert (status, error and error["code"]) == (409, "ALREADY_DECIDED")
    status, events, _ = await post_stream(chat, confirm(again), role="admin")
    assert status == 200
    assert events[0].data["metadata"]["result"] == "confirmed"
    assert any(e.type == "tool_end" for e in events)
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 2


async def test_a_card_whose_target_is_as_it_was_shown_runs_at_once(chat: ChatServer):
    card = await card_for(chat, "задеплой этот дашборд в prod")
    status, events, _ = await post_stream(chat, confirm(card), role="admin")
    assert status == 200
    assert events[0].data["metadata"]["result"] == "confirmed"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1


SQL_RUNS = ("POST", "/api/environments/staging/sql/execute")
DELETE_9 = "выполни sql `DELETE FROM mart.employees WHERE id < 10`"


async def test_a_delete_card_shows_the_statement_and_the_rows_it_would_delete(chat: ChatServer):
    # Given mart.employees in staging (dataset 15's table)
    dataset = chat.stack.upstream.state.datasets["staging"][15]
    assert (dataset["schema"], dataset["table_name"]) == ("mart", "employees")
    card = await card_for(chat, DELETE_9, "engineer", DATASET_15)
    plan = card["plan"]
    assert plan["title"] == "SQL в staging: DELETE"
    assert plan["statement"] == "DELETE FROM mart.employees\nWHERE\n  id < 10"
    assert plan["lines"] == ["DELETE в mart.employees: удалит 9 строк"]
    # The count was a read (the statement itself was not sent)
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 1
    assert len(chat.stack.upstream.state.tables["staging"]["mart.employees"]) == 15_250
    # Confirmed, the delete removes exactly those rows
    status, events, _ = await post_stream(chat, confirm(card), role="engineer")
    assert status == 200
    end = next(e for e in events if e.type == "tool_end").data["metadata"]
    assert end["output"]["rows_affected"] == 9
    assert len(chat.stack.upstream.state.tables["staging"]["mart.employees"]) == 15_241


async def test_a_delete_whose_rows_were_deleted_meanwhile_is_stale(chat: ChatServer):
    first = await card_for(chat, DELETE_9, "engineer", DATASET_15)
    second = await card_for(chat, DELETE_9, "engineer", DATASET_15)
    status, _, _ = await post_stream(chat, confirm(second), role="engineer")
    assert status == 200
    status, events, _ = await post_stream(chat, confirm(first), role="engineer")
    assert status == 200
    assert [e.type for e in events] == ["confirm_resolved", "confirm_required", "stream_end"]
    assert events[0].data["metadata"]["result"] == "stale"
    assert events[1].data["metadata"]["plan"]["lines"] == [
        "DELETE в mart.employees: удалит 0 строк"
    ]
    assert len(chat.stack.upstream.state.tables["staging"]["mart.employees"]) == 15_241


async def test_a_statement_the_upstream_cannot_count_still_gets_its_card(chat: ChatServer):
    card = await card_for(
        chat, "выполни sql `DELETE FROM mart.employees WHERE name = 'x'`", "engineer", DATASET_15
    )
    plan = card["plan"]
    assert plan["statement"].startswith("DELETE FROM mart.employees")
    assert plan["unread"] == "План изменения прочитать не удалось: ss-tools ответил ошибкой 400."
    assert card["decision"]["requires_confirmation"]


# Every write of the catalog, called as a user would, against the sample upstream as it is
# seeded: (tool, arguments, environment, what its plan says in words).
EVERY_WRITE = [
    (
        "deploy_dashboard",
        {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "prod"},
        "prod",
        "#10 «Отчёт по энергопотреблению»: версия 1 в prod",
    ),
    (
        "superset_execute_sql",
        {"database_id": 1, "sql": "DELETE FROM mart.employees WHERE id < 10"},
        "staging",
        "DELETE в mart.employees: удалит 9 строк",
    ),
    (
        "execute_migration",
        {"migration_id": 3, "target_env_id": "staging"},
        "staging",
        "будут заменены в staging: дашборды 6, 7, 10",
    ),
    (
        "commit_changes",
        {"dashboard_id": 42, "message": "исправлены цвета"},
        "ss-dev",
        "незакоммиченные изменения",
    ),
    (
        "create_branch",
        {"dashboard_id": 10, "branch_name": "feature/kpi"},
        "ss-dev",
        "ветки сейчас: main; новая ветка будет создана от main",
    ),
    (
        "run_llm_documentation",
        {"dashboard_id": 10},
        "ss-dev",
        "описания сейчас нет — будет добавлено текстом, который напишет LLM",
    ),
    (
        "superset_create_dataset",
        {"database_id": 1, "schema_name": "mart", "table_name": "employees"},
        "staging",
        "на таблице mart.employees уже есть датасет #15 — будет создан ещё один",
    ),
    ("run_backup", {"note": "перед релизом"}, "prod", "с пометкой «перед релизом»"),
    (
        "start_maintenance",
        {"reason": "обновление Superset", "duration_minutes": 30},
        "staging",
        "сейчас обслуживания нет",
    ),
    (
        "end_maintenance",
        {"event_id": 507},
        "staging",
        "обслуживание #507 «обновление Superset до 4.1» уже завершено (20 ноября 23:00 UTC)",
    ),
]


def test_every_write_of_the_catalog_is_planned_here():
    writes = [spec for spec in CATALOG if spec.operation is Operation.WRITE]
    assert {spec.name for spec in writes} == {tool for tool, *_ in EVERY_WRITE}
    assert all(spec.plan is not None for spec in writes)


@pytest.mark.parametrize(("tool", "args", "env_id", "said"), EVERY_WRITE, ids=lambda v: v)
async def test_each_write_reads_its_plan_from_the_upstream_in_words(
    stack: AgentStack, tool: str, args: dict[str, Any], env_id: str, said: str
):
    # Given an admin, and the upstream as seeded
    context = stack.context("admin", None)
    # When the plan of the write is read, as before its card
    plan = await stack.agent().plans.read(
        tool, args, env_id, who=context.who, credentials=context.credentials
    )
    # Then it was read, says what is there now and what the call will do, in words
    assert plan is not None
    assert plan.unread is None, plan.unread
    text = " ".join((plan.title, *plan.lines))
    assert said in text, text
    assert tool not in text
    # And it binds the approval to what it read
    assert plan.digest is not None


async def test_a_read_the_deployment_asks_to_confirm_has_no_plan_of_a_write(stack: AgentStack):
    # Given a deployment that asks to confirm SQL reads too
    settings = stack.settings.model_copy(update={"confirm_read_tools": ["superset_execute_sql"]})
    for chat in make_chat(AgentStack(settings, stack.upstream)):
        # When a SELECT gets its card
        card = await card_for(
            chat, "выполни sql `SELECT id FROM mart.employees`", role="engineer", page=DATASET_15
        )
        # Then the card is a read's, without a write's plan («сколько строк затронет»)
        assert card["decision"]["operation"] == "read"
        assert card["plan"] is None
