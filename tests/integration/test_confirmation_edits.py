"""Approve-with-edits over HTTP: the edited call runs once, asks again on a card of its own, or is
refused before anything runs (docs/confirmations.md, "Edits").

Through the chat function under uvicorn, with the confirmations held by the real state machine
in moto; what the sample upstream received is read from its own state.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import httpx
import pytest

from local.agent_stack import PATIENT_TOOL_TIMEOUT_S
from local.fault_injection import Fault, FaultKind
from sstools_agent.domain.audit import AuditKind, args_hash
from sstools_agent.wiring.chat import build_chat
from tests.support.chat_http import confirmation_item, edit, in_flight, types, wait_for
from tests.support.chat_process import chat_process, lapse_lease
from tests.support.chat_server import ChatServer, post_stream
from tests.support.seed import DASHBOARD_10, DATASET_15

pytestmark = pytest.mark.anyio
DEPLOY = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
DEPLOYS = ("POST", "/api/dashboards/deploy")
COMMIT = {"message": "закоммить изменения: «обновлены графики»", "ui_context": DASHBOARD_10}
COMMITS = ("POST", "/api/environments/ss-dev/dashboards/10/git/commits")
COMMIT_FAILED = (
    "TOOL_FAILURE: upstream answered 500: injected fault 500; "
    "operation status unknown — check status"
)


async def ask(
    chat: ChatServer, role: str, body: dict[str, Any] = DEPLOY
) -> tuple[str, dict[str, Any]]:
    status, events, _ = await post_stream(chat, body, role=role)
    assert status == 200
    card = next(e for e in events if e.type == "confirm_required").data["metadata"]
    return events[-1].data["metadata"]["conversation_id"], card


async def refused(
    chat: ChatServer, body: dict[str, Any], role: str = "engineer"
) -> tuple[int, Any]:
    """The status and `code` of a request refused before the stream."""
    status, _, error = await post_stream(chat, body, role=role)
    assert error is not None, "the request was not refused"
    return status, error["code"]


def committed(chat: ChatServer) -> list[str]:
    """The message of each commit the upstream made."""
    return [commit["message"] for commit in chat.stack.upstream.state.commits]


def deployed(chat: ChatServer) -> list[list[int]]:
    """The dashboards of each deploy the upstream made, as its task log has them (its seeded
    tasks carry no dashboards)."""
    tasks = chat.stack.upstream.state.tasks.values()
    return [task["result"]["deployed"] for task in tasks if isinstance(task["result"], dict)]


async def test_an_edit_the_card_covers_runs_once_with_the_edited_arguments(chat: ChatServer):
    # Given a card for committing dashboard 10's changes
    conversation, card = await ask(chat, "engineer", COMMIT)
    assert card["plan"]["title"].startswith("Коммит дашборда #10")
    # When the user confirms it with another message (what the plan is about is unchanged)
    edited = {**card["input"], "message": "исправлены цвета"}
    status, events, error = await post_stream(chat, edit(conversation, card, edited))
    # Then the card's approval covers it: it runs once, with the edited message
    assert (status, error) == (200, None)
    assert events[0].data["metadata"] == {"type": "confirm_resolved", "result": "confirmed"}
    start = next(e for e in events if e.type == "tool_start").data["metadata"]
    assert (start["input"], start["tool_call_id"]) == (edited, card["tool_call_id"])
    assert any(e.type == "tool_end" for e in events)
    assert committed(chat) == ["исправлены цвета"]
    # The history keeps what ran, not what the model proposed
    messages = await chat.store.messages(conversation)
    assert messages[-1].tool_calls[-1]["input"] == edited
    # The edit and the call's outcome are audited with both fingerprints and who edited
    decided = [r for r in chat.audit.records if r.kind is AuditKind.CONFIRMATION_DECIDED]
    assert len(decided) == 1
    assert decided[0].outcome == "edited"
    assert decided[0].detail["edited_by"] == "user.engineer"
    assert decided[0].detail["fingerprint"] != decided[0].detail["edited_fingerprint"]
    called = [r for r in chat.audit.records if r.kind is AuditKind.TOOL_CALLED]
    assert called[-1].detail["edited_fingerprint"] == decided[0].detail["edited_fingerprint"]
    # The card is spent: the same edit again runs nothing
    assert await refused(chat, edit(conversation, card, edited)) == (409, "ALREADY_DECIDED")
    assert committed(chat) == ["исправлены цвета"]


async def test_an_edit_to_another_dashboard_asks_again_with_that_dashboards_plan(
    chat: ChatServer,
):
    # Given a card for deploying dashboard 10 to staging, its plan about dashboard 10
    conversation, card = await ask(chat, "engineer")
    assert card["plan"]["title"].startswith("Деплой дашборда #10")
    # When the user confirms it edited to dashboard 11 (the same weight: one dashboard, staging)
    edited = {**card["input"], "dashboard_ids": [11]}
    status, events, _ = await post_stream(chat, edit(conversation, card, edited))
    # Then nothing runs: the card is superseded by one whose plan names dashboard 11
    assert status == 200
    assert types(events) == ["confirm_resolved", "confirm_required", "stream_end"]
    assert events[0].data["metadata"]["result"] == "superseded"
    new = events[1].data["metadata"]
    assert new["input"] == edited
    assert new["plan"]["title"].startswith("Деплой дашборда #11")
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    # And confirming the new card deploys dashboard 11, once
    confirm = {"action": "confirm", "conversation_id": conversation, **_card_id(new)}
    status, events, _ = await post_stream(chat, confirm)
    assert status == 200
    assert events[0].data["metadata"]["result"] == "confirmed"
    assert deployed(chat) == [[11]]


async def test_a_prod_target_from_a_staging_card_asks_again_on_a_destructive_card(
    chat: ChatServer,
):
    conversation, card = await ask(chat, "admin")
    assert card["decision"]["environment"] == "staging"
    edited = {**card["input"], "target_env_id": "prod"}
    status, events, _ = await post_stream(chat, edit(conversation, card, edited), role="admin")
    assert status == 200
    assert types(events) == ["confirm_resolved", "confirm_required", "stream_end"]
    assert events[0].data["metadata"]["result"] == "superseded"
    new = events[1].data["metadata"]
    assert new["confirmation_id"] != card["confirmation_id"]
    assert new["tool_call_id"] == card["tool_call_id"]
    assert new["input"] == edited
    assert (new["decision"]["environment"], new["decision"]["risk"]) == ("prod", "dangerous")
    assert new["decision"]["badge"] == "⚠️ PRODUCTION"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    # The old card cannot be confirmed any more; the new one runs the prod deploy, once
    old = {"action": "confirm", "conversation_id": conversation, **_card_id(card)}
    assert await refused(chat, old, "admin") == (409, "ALREADY_DECIDED")
    status, events, _ = await post_stream(
        chat,
        {"action": "confirm", "conversation_id": conversation, **_card_id(new)},
        role="admin",
    )
    assert status == 200
    assert events[0].data["metadata"]["result"] == "confirmed"
    assert any(e.type == "tool_end" for e in events)
    assert deployed(chat) == [card["input"]["dashboard_ids"]]
    assert chat.stack.upstream.state.dashboards["prod"]


async def test_an_edit_the_user_may_not_run_is_refused_and_the_card_still_waits(chat: ChatServer):
    conversation, card = await ask(chat, "engineer")
    edited = {**card["input"], "target_env_id": "prod"}
    status, _, error = await post_stream(chat, edit(conversation, card, edited))
    assert status == 403
    assert error is not None
    assert error["code"] == "FORBIDDEN"
    assert "«администратор»" in error["detail"]
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    # Nothing was decided: the card's own call can still be confirmed
    status, _, _ = await post_stream(
        chat, {"action": "confirm", "conversation_id": conversation, **_card_id(card)}
    )
    assert status == 200
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"dashboard_ids": "десять"}, "dashboard_ids"),
        # `true` would deploy dashboard 1 and 11.0 dashboard 11: an id is a whole number
        ({"dashboard_ids": [True]}, "целое число"),
        ({"dashboard_ids": [11.0]}, "целое число"),
        ({"dashboard_ids": [11.5]}, "dashboard_ids"),
        ({"target_env_id": "nowhere"}, "nowhere"),
        ({"tool": "execute_migration"}, "tool"),
    ],
    ids=["words", "true", "11.0", "11.5", "unknown environment", "another tool"],
)
async def test_invalid_edited_arguments_are_a_422_and_nothing_runs(
    chat: ChatServer, change: dict[str, Any], needle: str
):
    conversation, card = await ask(chat, "engineer")
    status, _, error = await post_stream(chat, edit(conversation, card, card["input"] | change))
    assert status == 422
    assert error is not None
    assert error["code"] == "VALIDATION_ERROR"
    assert needle in error["detail"]
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    denied, _, _ = await post_stream(
        chat, {"action": "deny", "conversation_id": conversation, **_card_id(card)}
    )
    assert denied == 200  # the card still waited


async def test_an_edit_cannot_name_another_tool(chat: ChatServer):
    conversation, card = await ask(chat, "engineer")
    body = edit(conversation, card, card["input"]) | {"tool": "run_backup"}
    assert await refused(chat, body) == (422, "VALIDATION_ERROR")
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_an_edit_by_another_user_is_403(chat: ChatServer):
    conversation, card = await ask(chat, "engineer")
    body = edit(conversation, card, card["input"])
    assert await refused(chat, body, "admin") == (403, "FORBIDDEN")
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


def _card_id(card: dict[str, Any]) -> dict[str, str]:
    return {"confirmation_id": card["confirmation_id"]}


async def test_an_edit_that_makes_sql_destructive_asks_again_on_its_own_card(chat: ChatServer):
    body = {"message": "выполни sql `DELETE FROM energy_readings WHERE id = 1`"}
    status, events, _ = await post_stream(chat, body | {"ui_context": DATASET_15})
    assert status == 200
    conversation = events[-1].data["metadata"]["conversation_id"]
    card = next(e for e in events if e.type == "confirm_required").data["metadata"]
    assert card["decision"]["tone"] == "info"
    # Without its WHERE the same DELETE is what a fresh card shows louder («warning»)
    edited = {**card["input"], "sql": "DELETE FROM energy_readings"}
    status, events, _ = await post_stream(chat, edit(conversation, card, edited))
    assert status == 200
    assert types(events) == ["confirm_resolved", "confirm_required", "stream_end"]
    assert events[0].data["metadata"]["result"] == "superseded"
    assert events[1].data["metadata"]["decision"]["tone"] == "warning"
    assert chat.stack.upstream.sql_writes() == []  # (the card's plan counted rows: a read)


async def test_the_edited_call_is_shown_fingerprinted_and_kept_as_it_runs(chat: ChatServer):
    conversation, card = await ask(chat, "engineer", COMMIT)
    edited = {"dashboard_id": "10", "message": "fix"}  # the tool takes the id as the number 10
    status, events, _ = await post_stream(chat, edit(conversation, card, edited))
    assert status == 200
    assert events[0].data["metadata"]["result"] == "confirmed"
    start = next(e for e in events if e.type == "tool_start").data["metadata"]
    assert start["input"] == {"dashboard_id": 10, "message": "fix"}
    assert committed(chat) == ["fix"]
    messages = await chat.store.messages(conversation)
    assert messages[-1].tool_calls[-1]["input"] == {"dashboard_id": 10, "message": "fix"}


async def test_a_superseding_edit_whose_stream_is_dropped_at_once_still_says_nothing_ran(
    chat: ChatServer,
):
    conversation, card = await ask(chat, "admin")
    edited = {**card["input"], "target_env_id": "prod"}
    await send_and_hang_up(chat, edit(conversation, card, edited), "admin")
    status, replay, _ = await post_stream(
        chat, {"action": "resume", "conversation_id": conversation}, role="admin"
    )
    assert status == 200
    said = " ".join(e.data["content"] for e in replay if e.type is None)
    cards = [e.data["metadata"] for e in replay if e.type == "confirm_required"]
    # Either the new card is there to answer, or the user is told nothing ran
    assert (cards and cards[-1]["input"] == edited) or "ничего не изменено" in said, replay
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def send_and_hang_up(chat: ChatServer, body: dict[str, Any], role: str) -> None:
    """Sends the request and closes the connection before reading a byte of the answer, then
    waits until the server has decided the card and let the conversation go."""
    confirmations = build_chat(chat.stack.settings).confirmations
    url = httpx.URL(chat.url)
    payload = json.dumps(body).encode()
    _, writer = await asyncio.open_connection(url.host, url.port)
    writer.write(
        f"POST /api/agent/chat HTTP/1.1\r\nHost: {url.host}\r\n"
        f"Authorization: {chat.headers(role)['Authorization']}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode()
        + payload
    )
    await writer.drain()
    writer.close()
    deadline = time.monotonic() + 60  # about 0.5-1 s here; generous for a busy machine
    while True:
        record = await chat.store.get(body["conversation_id"])
        confirmation = await confirmations.get(body["confirmation_id"])
        decided = confirmation is not None and confirmation.status.value != "pending"
        if decided and record is not None and not record.is_running(time.time()):
            return
        assert time.monotonic() < deadline, "the server never let the conversation go"
        await asyncio.sleep(0.05)


# What the user reads of the edited commit (dashboard 10, another message) whose answer never
# came: the call in the card's words, never the model's note, an identifier or JSON.
UNKNOWN_OF_THE_EDIT = (
    "Статус операции неизвестен — проверьте статус: «коммит изменений дашборда в git» "
    "(дашборд 10, с вашими правками) был отправлен в ss-tools, но ответ не "
    "получен (operation status unknown — check status)."
)
EDITED_MESSAGE = {"dashboard_id": 10, "message": "исправлены цвета"}


async def test_an_edited_call_that_fails_tells_the_user_only_what_a_failure_says(
    chat: ChatServer,
):
    # Given a commit card for dashboard 10 and an upstream that fails the next commit
    conversation, card = await ask(chat, "engineer", COMMIT)
    chat.stack.upstream.plan.add(*COMMITS, Fault(FaultKind.STATUS, status=500))
    # When the user confirms it with another message
    edited = EDITED_MESSAGE
    status, events, _ = await post_stream(chat, edit(conversation, card, edited))
    assert status == 200
    # Then the card and the history say what a failed deploy says, and nothing meant for the model
    [failed] = [e.data["metadata"] for e in events if e.type == "tool_error"]
    assert (failed["code"], failed["error"]) == ("TOOL_FAILURE", COMMIT_FAILED)
    messages = await chat.store.messages(conversation)
    [kept] = [c for c in messages[-1].tool_calls if c["tool_call_id"] == card["tool_call_id"]]
    assert (kept["input"], kept["error"]) == (edited, COMMIT_FAILED)
    assert chat.stack.upstream.plan.requests(*COMMITS) == 1


async def test_an_edited_call_whose_function_was_killed_in_flight_is_told_as_what_ran(
    chat: ChatServer,
):
    # Given a commit card for dashboard 10, its message edited, sent to a chat function whose
    # commit hangs
    conversation, card = await ask(chat, "engineer", COMMIT)
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    edited = EDITED_MESSAGE
    chat.stack.upstream.plan.add(*COMMITS, Fault(FaultKind.HANG))
    with chat_process(chat.stack.settings, tool_timeout_s=PATIENT_TOOL_TIMEOUT_S) as function:
        # When the function is killed while the edited deploy is in flight
        async with in_flight(
            function.url,
            edit(conversation, card, edited),
            chat.headers(),
            lambda: chat.stack.upstream.plan.requests(*COMMITS) == 1,
            timeout_s=60,
        ):
            function.kill()
    lapse_lease(chat.stack.settings, conversation)
    # Then the journal names the edited call, beside the card's
    item = confirmation_item(chat, card["confirmation_id"])
    assert (item["status"], item["execution"]) == ("confirmed", "started")
    assert json.loads(item["edited_args"]) == edited
    assert item["edited_fingerprint"] != item["fingerprint"]
    # And a reconnect says the status is unknown of the call that was sent
    status, replay, _ = await post_stream(
        chat, {"action": "resume", "conversation_id": conversation}
    )
    said = [e.data["content"] for e in replay if e.type is None]
    assert status == 200
    assert UNKNOWN_OF_THE_EDIT in said, said
    # When the user comes back with a new message
    status, events, _ = await post_stream(
        chat,
        {"message": "ну что там?", "conversation_id": conversation, "ui_context": DASHBOARD_10},
    )
    assert status == 200
    # Then the call's card shows the edited input, and its status unknown
    about = [
        e.data for e in events if e.data["metadata"].get("tool_call_id") == card["tool_call_id"]
    ]
    assert [a["metadata"]["type"] for a in about] == ["tool_start", "tool_error"]
    assert about[0]["metadata"]["input"] == edited
    unknown = about[1]["metadata"]
    assert (unknown["code"], unknown["error"]) == ("TOOL_OUTCOME_UNKNOWN", UNKNOWN_OF_THE_EDIT)
    # And the history keeps the input that ran, and what the user was told of it
    messages = await chat.store.messages(conversation)
    [kept] = [c for c in messages[-1].tool_calls if c["tool_call_id"] == card["tool_call_id"]]
    assert (kept["input"], kept["code"]) == (edited, "TOOL_OUTCOME_UNKNOWN")
    assert kept["error"] == UNKNOWN_OF_THE_EDIT
    # And the audit's one record of what became of the call names both fingerprints
    [record] = [r for r in chat.audit.records if r.kind is AuditKind.TOOL_OUTCOME_UNKNOWN]
    assert record.detail["fingerprint"] == item["fingerprint"]
    assert record.detail["edited_fingerprint"] == item["edited_fingerprint"]
    assert record.detail["edited_args_hash"] == args_hash(edited)
    assert record.detail["edited_by"] == "user.engineer"
    assert chat.stack.upstream.plan.requests(*COMMITS) == 1
