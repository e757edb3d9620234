"""SQL the parser cannot take, and comments after the last statement, at the chat's surface.

Through the chat function under uvicorn (offline model, which runs the SQL given in backticks):
a statement nested too deep is unparsable SQL, so an analyst is refused and an engineer gets a
card, never an internal error; a comment after the last semicolon runs nothing, so a read with
one stays a read.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.test_chat_function import ChatServer, Received, post_stream
from tests.support.seed import DATASET_15

pytestmark = pytest.mark.anyio
SQL_RUNS = ("POST", "/api/environments/staging/sql/execute")
NESTED = {
    "parentheses": "SELECT " + "(" * 50 + "1" + ")" * 50,
    "case": "SELECT " + "CASE WHEN kwh > 1 THEN " * 51 + "1" + " END" * 51,
    "subqueries": "SELECT * FROM " + "(SELECT * FROM " * 121 + "energy_readings" + ") AS x" * 121,
}


async def run_sql(chat: ChatServer, sql: str, role: str) -> list[Received]:
    """Given a user on the dataset page asks to run `sql`, the events of the turn."""
    body = {"message": f"выполни sql `{sql}`", "ui_context": DATASET_15}
    status, events, refused = await post_stream(chat, body, role=role)
    assert status == 200, refused
    return events


def types(events: list[Received]) -> list[str | None]:
    return [e.type for e in events]


def edit(conversation: str, card: dict[str, Any], sql: str) -> dict[str, Any]:
    """The body that approves `card` with its SQL edited to `sql`."""
    return {
        "action": "edit",
        "conversation_id": conversation,
        "confirmation_id": card["confirmation_id"],
        "edited_args": {**card["input"], "sql": sql},
    }


def one(events: list[Received], kind: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [e.data["metadata"] for e in events if e.type == kind]
    assert len(found) == 1, [e.data for e in events]
    return found[0]


@pytest.mark.parametrize("sql", NESTED.values(), ids=list(NESTED))
async def test_an_analysts_sql_nested_too_deep_is_refused_as_a_write(chat: ChatServer, sql):
    events = await run_sql(chat, sql, "analyst")
    assert "error" not in types(events)
    denied = one(events, "permission_denied")
    assert (denied["tool"], denied["required_role"]) == ("superset_execute_sql", "engineer")
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 0


async def test_an_engineers_sql_nested_too_deep_gets_a_card_saying_it_did_not_parse(
    chat: ChatServer,
):
    events = await run_sql(chat, NESTED["parentheses"], "engineer")
    assert "error" not in types(events)
    card = one(events, "confirm_required")
    assert card["decision"]["impact"] == "SQL не разобран: выполнение считается изменением данных"
    assert card["decision"]["tone"] == "warning"
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 0


async def test_an_edit_to_sql_nested_too_deep_asks_again_and_runs_nothing(chat: ChatServer):
    events = await run_sql(chat, "DELETE FROM energy_readings WHERE id = 1", "engineer")
    conversation = events[-1].data["metadata"]["conversation_id"]
    card = one(events, "confirm_required")
    status, events, refused = await post_stream(chat, edit(conversation, card, NESTED["case"]))
    assert (status, refused) == (200, None)
    assert types(events) == ["confirm_resolved", "confirm_required", "stream_end"]
    assert events[1].data["metadata"]["input"]["sql"] == NESTED["case"]
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 0


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM energy_readings; /* посчитать строки */",
        "SELECT count(*) FROM energy_readings;\n-- посчитать строки",
    ],
)
async def test_an_analysts_read_with_a_comment_after_the_semicolon_runs(chat: ChatServer, sql):
    events = await run_sql(chat, sql, "analyst")
    assert not [e for e in events if e.type in ("permission_denied", "confirm_required")]
    assert one(events, "tool_end")["tool"] == "superset_execute_sql"
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 1


async def test_a_write_after_a_comment_is_still_a_write(chat: ChatServer):
    events = await run_sql(chat, "SELECT 1; /* x */ DELETE FROM energy_readings", "analyst")
    assert one(events, "permission_denied")["required_role"] == "engineer"
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 0
