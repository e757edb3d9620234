"""«Повторить» on the server: `action: "retry"` runs a failed read again, as a new call through
the same checks, and refuses a write, a call that did not fail, and another user's call."""

from __future__ import annotations

from typing import Any

import pytest

from local.fault_injection import Fault, FaultKind
from sstools_agent.domain.audit import AuditKind
from tests.support.chat_http import Received
from tests.support.chat_server import ChatServer, answer_card, ask, deploys, post_stream

pytestmark = pytest.mark.anyio

ENVIRONMENTS = {"message": "какие есть окружения?"}
ENVIRONMENTS_PATH = "/api/environments"


def calls_of(events: list[Received], kind: str) -> list[dict[str, Any]]:
    return [e.data["metadata"] for e in events if e.type == kind]


def retry(conversation: str, tool_call_id: str) -> dict[str, Any]:
    return {"action": "retry", "conversation_id": conversation, "tool_call_id": tool_call_id}


async def failed_read(chat: ChatServer) -> tuple[str, dict[str, Any]]:
    """A conversation whose read of the environments failed (503 to every attempt)."""
    chat.stack.upstream.plan.add("GET", ENVIRONMENTS_PATH, Fault(FaultKind.STATUS, times=None))
    status, events, _ = await post_stream(chat, ENVIRONMENTS)
    assert status == 200
    (error,) = calls_of(events, "tool_error")
    assert (error["tool"], error["code"]) == ("list_environments", "TOOL_FAILURE")
    return events[-1].data["metadata"]["conversation_id"], error


async def test_a_failed_read_runs_again_once_and_answers(chat: ChatServer):
    # Given a read that failed while the upstream answered 503
    conversation, error = await failed_read(chat)
    plan = chat.stack.upstream.plan
    failed_requests = plan.requests("GET", ENVIRONMENTS_PATH)
    plan.clear()
    # When the user asks to repeat it, once the upstream answers again
    status, events, _ = await post_stream(chat, retry(conversation, error["tool_call_id"]))
    # Then the same read ran once more, as a new call, and its result is answered
    assert status == 200, failed_requests
    (start,) = calls_of(events, "tool_start")
    assert start["tool"] == "list_environments"
    assert start["tool_call_id"] != error["tool_call_id"]
    (end,) = calls_of(events, "tool_end")
    assert end["tool_call_id"] == start["tool_call_id"]
    assert plan.counts() == {f"GET {ENVIRONMENTS_PATH}": 1}
    answer = "".join(e.data["metadata"].get("token", "") for e in events)
    assert "ss-dev" in answer
    # And the repeat is in the history and the audit trail like any call
    history = await chat.store.messages(conversation)
    calls = [call for message in history for call in message.tool_calls]
    assert [call["status"] for call in calls] == ["tool_error", "tool_end"]
    audited = [r for r in chat.audit.records if r.kind is AuditKind.TOOL_CALLED]
    assert any(r.detail.get("tool_call_id") == start["tool_call_id"] for r in audited)


async def test_a_failed_write_is_not_repeated(chat: ChatServer):
    # Given a confirmed deploy that failed upstream (a write: it may have applied)
    chat.stack.upstream.plan.add(
        "POST", "/api/dashboards/deploy", Fault(FaultKind.STATUS, times=None)
    )
    conversation, card = await ask(chat)
    status, events, _ = await answer_card(chat, conversation, card, "confirm")
    (error,) = calls_of(events, "tool_error")
    assert error["tool"] == "deploy_dashboard"
    sent = deploys(chat)
    # When the page asks to repeat it
    status, events, body = await post_stream(chat, retry(conversation, error["tool_call_id"]))
    # Then it is refused with a reason, and nothing was sent upstream
    assert status == 403
    assert body is not None
    assert body["code"] == "FORBIDDEN"
    assert "только чтение" in body["detail"]
    assert deploys(chat) == sent
    # And the conversation is free for the next message
    status, _, _ = await post_stream(chat, {**ENVIRONMENTS, "conversation_id": conversation})
    assert status == 200


async def test_a_call_that_did_not_fail_or_does_not_exist_is_refused(chat: ChatServer):
    status, events, _ = await post_stream(chat, ENVIRONMENTS)
    conversation = events[-1].data["metadata"]["conversation_id"]
    (end,) = calls_of(events, "tool_end")
    status, _, body = await post_stream(chat, retry(conversation, end["tool_call_id"]))
    assert (status, body and body["code"]) == (403, "FORBIDDEN")
    status, _, body = await post_stream(chat, retry(conversation, "call_unknown"))
    assert (status, body and body["code"]) == (404, "NOT_FOUND")


async def test_another_users_failed_read_is_not_found(chat: ChatServer):
    conversation, error = await failed_read(chat)
    chat.stack.upstream.plan.clear()
    status, _, body = await post_stream(
        chat, retry(conversation, error["tool_call_id"]), role="analyst"
    )
    assert (status, body and body["code"]) == (404, "NOT_FOUND")
    assert chat.stack.upstream.plan.requests() == 0


async def test_retry_takes_the_call_id_and_no_message(chat: ChatServer):
    status, _, body = await post_stream(chat, {"action": "retry", "conversation_id": "c" * 32})
    assert (status, body and body["code"]) == (422, "VALIDATION_ERROR")


async def test_a_write_whose_answer_never_came_offers_its_status_check(chat: ChatServer):
    # Given a confirmed staging deploy whose answer was a 503 (it may have applied)
    plan = chat.stack.upstream.plan
    plan.add("POST", "/api/dashboards/deploy", Fault(FaultKind.STATUS, times=None))
    conversation, card = await ask(chat)
    _, events, _ = await answer_card(chat, conversation, card, "confirm")
    (error,) = calls_of(events, "tool_error")
    sent = deploys(chat)
    plan.clear()
    # When the user asks for its status check
    body = {**retry(conversation, error["tool_call_id"]), "action": "check_status"}
    status, events, refusal = await post_stream(chat, body)
    # Then the catalog's read for it ran where the deploy went (staging), and nothing was sent
    # again: the dashboards' state is read, not the write repeated
    assert status == 200, refusal
    (start,) = calls_of(events, "tool_start")
    assert (start["tool"], start["input"]) == ("search_dashboards", {"dashboard_ids": [10]})
    assert calls_of(events, "tool_end")
    assert plan.counts() == {"GET /api/environments/staging/dashboards": 1}
    assert sent >= 1
    assert deploys(chat) == 0  # counted since the fault was cleared: none sent again
    answer = "".join(e.data["metadata"].get("token", "") for e in events)
    assert "staging" in answer, answer
    # And a read has no status check: it is repeated, not checked
    read_conversation, read_error = await failed_read(chat)
    body = {**retry(read_conversation, read_error["tool_call_id"]), "action": "check_status"}
    status, _, refused = await post_stream(chat, body)
    assert (status, refused and refused["code"]) == (403, "FORBIDDEN")
