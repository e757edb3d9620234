"""The chat function through a real uvicorn server and httpx streaming (not ASGITransport).

Behind it: conversations and checkpoints in moto, the sample upstream over HTTP, a scripted model
streaming with a small pause between words so that time shows in the stream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from local.agent_stack import AgentStack, chat_app, user_issuer
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.chat.turns import STOPPED_TEXT
from sstools_agent.domain.audit import AuditKind
from sstools_agent.domain.conversations import MessageRole
from tests.support.chat_http import STATUS, Received, sse_events
from tests.support.chat_server import ChatServer, post_stream
from tests.support.events import as_http_request, load_event
from tests.support.models import ANSWER, ScriptedChatModel
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio

WORD_DELAY_S = 0.02


@pytest.fixture
def chat(stack: AgentStack) -> Iterator[ChatServer]:
    audit = MemoryAuditSink()
    app, store, _ = chat_app(stack, ScriptedChatModel(token_delay_s=WORD_DELAY_S), audit)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, stack, store, audit)


def text_of(events: list[Received]) -> str:
    return "".join(e.data["metadata"].get("token", "") for e in events)


# --- The stream ------------------------------------------------------------------------------


async def test_events_stream_incrementally_with_increasing_ids(chat: ChatServer):
    status, events, _ = await post_stream(chat, STATUS)
    assert status == 200
    conversation = events[0].id.split(":")[0]
    assert [e.id for e in events] == [f"{conversation}:{n}" for n in range(1, len(events) + 1)]
    # Events arrive spread in time, not in one buffered block
    tokens = [e for e in events if e.type == "stream_token"]
    assert len(tokens) > 10
    assert tokens[-1].at - tokens[0].at >= (len(tokens) - 1) * WORD_DELAY_S * 0.5
    assert text_of(events).startswith(ANSWER)  # the whole answer, after the tool's result
    # The final event names the conversation and the messages written
    end = events[-1].data["metadata"]
    assert end["type"] == "stream_end"
    assert end["conversation_id"] == conversation
    assert end["user_message_id"]
    assert end["assistant_message_id"]


async def test_the_history_is_complete_after_a_turn(chat: ChatServer):
    _, events, _ = await post_stream(chat, STATUS)
    end = events[-1].data["metadata"]
    messages = await chat.store.messages(end["conversation_id"])
    user, assistant = messages
    assert (user.role, user.content, user.message_id) == (
        MessageRole.USER,
        STATUS["message"],
        end["user_message_id"],
    )
    assert user.ui_context == DASHBOARD_10
    assert assistant.role is MessageRole.ASSISTANT
    assert assistant.message_id == end["assistant_message_id"]
    assert assistant.content == text_of(events)
    assert assistant.status == "complete"
    [call] = assistant.tool_calls
    assert call["tool"] == "search_dashboards"
    assert call["output"]["dashboards"][0]["id"] == 10
    record = await chat.store.get(end["conversation_id"])
    assert record is not None
    assert record.title == "какой статус у этого дашборда?"
    assert record.owner == "user.engineer"
    assert record.locked_by is None


async def test_a_confirmation_round_trip_over_http(chat: ChatServer):
    body = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
    _, first, _ = await post_stream(chat, body)
    card = next(e for e in first if e.type == "confirm_required").data["metadata"]
    conversation = first[-1].data["metadata"]["conversation_id"]
    status, second, _ = await post_stream(
        chat,
        {
            "action": "confirm",
            "conversation_id": conversation,
            "confirmation_id": card["confirmation_id"],
            "ui_context": DASHBOARD_10,
        },
    )
    assert status == 200
    assert second[0].data["metadata"] == {"type": "confirm_resolved", "result": "confirmed"}
    assert any(e.type == "tool_end" for e in second)
    # Ids go on from where the first stream stopped
    assert int(second[0].id.split(":")[1]) == int(first[-1].id.split(":")[1]) + 1


# --- Refusals before the stream ---------------------------------------------------------------


@pytest.mark.parametrize("authorization", ["", "Bearer not-a-jwt", "Basic dXNlcjpwYXNz", "expired"])
async def test_401_for_missing_invalid_or_expired_tokens(chat: ChatServer, authorization: str):
    if authorization == "expired":
        token = user_issuer(chat.stack.settings).issue("old", -3600, {"roles": ["admin"]}).token
        authorization = f"Bearer {token}"
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{chat.url}/api/agent/chat", json=STATUS, headers={"Authorization": authorization}
        )
    assert response.status_code == 401
    assert response.json()["code"] == "UNAUTHORIZED"
    assert chat.audit.records[-1].kind is AuditKind.AUTH_FAILED


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ({"message": ""}, "message must not be empty"),
        ({"message": "hi", "files": [{"name": "a.csv"}]}, "files.0.file_id: Field required"),
        ({"message": "hi", "files": [{"file_id": "../../x"}]}, "files.0.file_id: String should"),
        ({"message": "hi", "unexpected": 1}, "unexpected"),
        ({"action": "confirm"}, "needs a conversation_id"),
        ({"message": "x" * 8001}, "message"),
        ({"message": "hi", "conversation_id": "../../etc"}, "conversation_id"),
    ],
)
async def test_422_for_invalid_bodies(chat: ChatServer, body: dict[str, Any], needle: str):
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{chat.url}/api/agent/chat", json=body, headers=chat.headers()
        )
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert needle in response.json()["detail"]


async def test_422_for_an_invalid_ui_context_with_an_audit_record_and_nothing_written(chat):
    _, events, _ = await post_stream(chat, STATUS)
    conversation = events[-1].data["metadata"]["conversation_id"]
    before = await chat.store.messages(conversation)
    body = {
        "message": "и что?",
        "conversation_id": conversation,
        "ui_context": {**DASHBOARD_10, "objectType": "chart"},
    }
    status, _, error = await post_stream(chat, body)
    assert status == 422
    assert error is not None
    assert error["code"] == "INVALID_CONTEXT"
    assert error["problems"][0]["reason"] == "invalid_object_type"
    record = chat.audit.records[-1]
    assert (record.kind, record.user, record.conversation_id) == (
        AuditKind.CONTEXT_REJECTED,
        "user.engineer",
        conversation,
    )
    assert await chat.store.messages(conversation) == before


async def test_another_users_conversation_is_404(chat: ChatServer):
    _, events, _ = await post_stream(chat, STATUS, role="engineer")
    conversation = events[-1].data["metadata"]["conversation_id"]
    status, _, error = await post_stream(
        chat, {**STATUS, "conversation_id": conversation}, role="admin"
    )
    assert (status, error and error["code"]) == (404, "NOT_FOUND")


async def test_an_unknown_confirmation_id_is_404_and_a_missing_one_422(chat: ChatServer):
    _, events, _ = await post_stream(chat, STATUS)
    conversation = events[-1].data["metadata"]["conversation_id"]
    body = {"action": "confirm", "conversation_id": conversation}
    status, _, error = await post_stream(chat, {**body, "confirmation_id": "no-such-card"})
    assert (status, error and error["code"]) == (404, "NOT_FOUND")
    status, _, error = await post_stream(chat, body)
    assert (status, error and error["code"]) == (422, "VALIDATION_ERROR")


# --- Two tabs, cancel, reconnect --------------------------------------------------------------


async def test_two_tabs_on_one_conversation_get_409_never_interleaved_turns(slow_chat: ChatServer):
    chat = slow_chat
    _, events, _ = await post_stream(chat, STATUS)
    conversation = events[-1].data["metadata"]["conversation_id"]
    body = {**STATUS, "conversation_id": conversation}
    # The winning tab's answer streams for seconds (slow_chat's tokens), so the other tab arrives
    # while it holds the conversation however slowly a busy machine starts the second request
    # (delaying the upstream's reads instead was bounded by the suite's 4 s tool timeout, and on
    # CI the second tab twice came after the first had finished: 200 twice)
    results = await asyncio.gather(*(post_stream(chat, body) for _ in range(2)))
    statuses = sorted(status for status, _, _ in results)
    assert statuses == [200, 409]
    busy = next(error for status, _, error in results if status == 409)
    assert busy is not None
    assert busy["code"] == "CONVERSATION_BUSY"
    # Once the first tab is done, the conversation takes the next turn
    status, _, _ = await post_stream(chat, body)
    assert status == 200
    assert len(await chat.store.messages(conversation)) == 6


async def test_a_client_disconnect_stops_generation_and_releases_the_lock(slow_chat: ChatServer):
    chat = slow_chat  # an answer of seconds: the stop comes well before its end on any machine
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            "POST", f"{chat.url}/api/agent/chat", json=STATUS, headers=chat.headers()
        ) as response,
    ):
        seen = []
        async for event in sse_events(response):
            seen.append(event)
            if len([e for e in seen if e.type == "stream_token"]) == 3:
                break
    conversation = seen[0].id.split(":")[0]
    # The lock is released (within 30 s: a lock nobody released would stay for its 120 s lease;
    # about 0.5 s here), and the next turn is accepted, not refused as busy
    deadline = time.monotonic() + 30
    while True:
        record = await chat.store.get(conversation)
        if record is not None and record.locked_by is None:
            break
        assert time.monotonic() < deadline, "lock still held after the client left"
        await asyncio.sleep(0.05)
    messages = await chat.store.messages(conversation)
    assert messages[-1].status == "interrupted"
    # Generation stopped well before the end of the answer (which closes with the validation)
    assert messages[-1].content
    assert "валидация" not in messages[-1].content
    status, _, _ = await post_stream(chat, {**STATUS, "conversation_id": conversation})
    assert status == 200


@pytest.fixture
def slow_chat(stack: AgentStack) -> Iterator[ChatServer]:
    """A chat whose answers take seconds: long enough to be cancelled from another tab."""
    audit = MemoryAuditSink()
    app, store, _ = chat_app(stack, ScriptedChatModel(token_delay_s=0.15), audit)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, stack, store, audit)


async def test_an_explicit_cancel_stops_a_run_held_by_another_tab(slow_chat: ChatServer):
    chat = slow_chat
    body = {
        "message": "найди дашборды",
        "ui_context": {**DASHBOARD_10, "objectType": None, "objectId": None},
    }
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            "POST", f"{chat.url}/api/agent/chat", json=body, headers=chat.headers()
        ) as tab_a,
    ):
        stream = sse_events(tab_a)
        seen = [await anext(stream) for _ in range(4)]  # the answer has begun
        conversation = seen[0].id.split(":")[0]
        # Tab B asks the run to stop
        cancel = await client.post(
            f"{chat.url}/api/agent/chat/cancel",
            headers=chat.headers(),
            json={"conversation_id": conversation},
        )
        assert cancel.status_code == 202
        rest = [event async for event in stream]
    assert any(e.data["content"] == STOPPED_TEXT for e in rest)
    assert rest[-1].type == "stream_end"
    record = await chat.store.get(conversation)
    assert record is not None
    assert record.locked_by is None
    async with httpx.AsyncClient() as client:
        again = await client.post(
            f"{chat.url}/api/agent/chat/cancel",
            headers=chat.headers(),
            json={"conversation_id": conversation},
        )
    assert (again.status_code, again.json()["code"]) == (409, "NOT_RUNNING")


async def test_reconnect_replays_what_was_missed(chat: ChatServer):
    _, events, _ = await post_stream(chat, STATUS)
    conversation = events[0].id.split(":")[0]
    missed_from = 4
    status, replay, _ = await post_stream(
        chat,
        {"action": "resume", "conversation_id": conversation},
        **{"Last-Event-ID": events[missed_from - 1].id},
    )
    assert status == 200
    assert [(e.id, e.data) for e in replay] == [(e.id, e.data) for e in events[missed_from:]]


async def test_reconnect_re_emits_a_pending_confirmation(chat: ChatServer):
    body = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
    _, first, _ = await post_stream(chat, body)
    conversation = first[0].id.split(":")[0]
    status, replay, _ = await post_stream(
        chat, {"action": "resume", "conversation_id": conversation, "last_event_id": first[-1].id}
    )
    assert status == 200
    # The card again, then the end of the stream: a client reading to `stream_end` sees both
    assert [e.type for e in replay] == ["confirm_required", "stream_end"]
    assert replay[0].data["metadata"]["decision"]["tool"] == "deploy_dashboard"
    # The re-emitted card is no stored event: it has no id, so a client that drops what it has
    # seen by id still shows it, and its resume point does not move past events it never got
    assert replay[0].id == ""
    assert replay[-1].id == ""
    assert replay[-1].data["metadata"]["conversation_id"] == conversation
    assert replay[-1].data["metadata"]["assistant_message_id"] is None  # the resume wrote none


# --- The sample events -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "tool"),
    [("chat_function_url", "search_dashboards"), ("chat_api_gateway", "superset_explore_database")],
)
async def test_sample_lambda_events_stream_an_answer(chat: ChatServer, name: str, tool: str):
    token = chat.headers("analyst")["Authorization"].removeprefix("Bearer ")
    request = as_http_request(load_event(name, user_jwt=token))
    headers = {k: v for k, v in request.headers.items() if k.lower() != "host"}
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            request.method, f"{chat.url}{request.path}", content=request.body, headers=headers
        ) as response,
    ):
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [e async for e in sse_events(response)]
    assert next(e for e in events if e.type == "tool_start").data["metadata"]["tool"] == tool
    assert events[-1].type == "stream_end"
