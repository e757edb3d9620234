"""SQL the parser cannot take, and comments after the last statement, at the chat's surface.

Through the chat function under uvicorn (the stand-in model, which runs the SQL given in backticks):
a statement nested too deep is unparsable SQL, so an analyst is refused and an engineer gets a
card, never an internal error; a comment after the last semicolon runs nothing, so a read with
one stays a read.
"""

from __future__ import annotations

import pytest

from tests.support.chat_http import Received, edit, one, types
from tests.support.chat_server import ChatServer, post_stream
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


@pytest.mark.parametrize("sql", NESTED.values(), ids=list(NESTED))
async def test_an_analysts_sql_nested_too_deep_is_refused_as_a_write(chat: ChatServer, sql):
    # Given an analyst, When they ask to run SQL nested deeper than the parser takes
    events = await run_sql(chat, sql, "analyst")
    # Then it is refused as a write (an engineer's), with no internal error, and nothing ran
    assert "error" not in types(events)
    denied = one(events, "permission_denied")
    assert (denied["tool"], denied["required_role"]) == ("superset_execute_sql", "engineer")
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 0


async def test_an_engineers_sql_nested_too_deep_gets_a_card_saying_it_did_not_parse(
    chat: ChatServer,
):
    # Given an engineer, When they ask to run SQL nested deeper than the parser takes
    events = await run_sql(chat, NESTED["parentheses"], "engineer")
    # Then a card says it did not parse and counts as a change of data; nothing ran
    assert "error" not in types(events)
    card = one(events, "confirm_required")
    assert card["decision"]["impact"] == "SQL не разобран: выполнение считается изменением данных"
    assert card["decision"]["tone"] == "warning"
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 0


async def test_an_edit_to_sql_nested_too_deep_asks_again_and_runs_nothing(chat: ChatServer):
    # Given an engineer's card for a DELETE
    events = await run_sql(chat, "DELETE FROM energy_readings WHERE id = 1", "engineer")
    conversation = events[-1].data["metadata"]["conversation_id"]
    card = one(events, "confirm_required")
    # When they approve it with its SQL edited to SQL nested too deep
    status, events, refused = await post_stream(
        chat, edit(conversation, card, {**card["input"], "sql": NESTED["case"]})
    )
    # Then a new card asks about the edited SQL, and nothing ran
    assert (status, refused) == (200, None)
    assert types(events) == ["confirm_resolved", "confirm_required", "stream_end"]
    assert events[1].data["metadata"]["input"]["sql"] == NESTED["case"]
    assert chat.stack.upstream.sql_writes() == []  # (the card's plan counted rows: a read)


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT count(*) FROM energy_readings; /* посчитать строки */",
        "SELECT count(*) FROM energy_readings;\n-- посчитать строки",
    ],
)
async def test_an_analysts_read_with_a_comment_after_the_semicolon_runs(chat: ChatServer, sql):
    # Given an analyst, When they ask to run a read with a comment after its last semicolon
    events = await run_sql(chat, sql, "analyst")
    # Then it runs as the read it is: no refusal, no card, one run upstream
    assert not [e for e in events if e.type in ("permission_denied", "confirm_required")]
    assert one(events, "tool_end")["tool"] == "superset_execute_sql"
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 1


async def test_a_write_after_a_comment_is_still_a_write(chat: ChatServer):
    # Given an analyst, When they ask to run a read, a comment, then a DELETE
    events = await run_sql(chat, "SELECT 1; /* x */ DELETE FROM energy_readings", "analyst")
    # Then the comment hides nothing: it is refused as a write, and nothing ran
    assert one(events, "permission_denied")["required_role"] == "engineer"
    assert chat.stack.upstream.plan.requests(*SQL_RUNS) == 0
