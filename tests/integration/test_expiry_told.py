"""A card's expiry told in its conversation when the timer ends (issue 27, item 5).

The real state machine in moto expires the card and publishes `confirmation_decided(expired)`
on the audit bus; the expiry function's rule (its pattern from the template, through the local
stack's pump) hands it to the expiry code, over the chat function's collaborators. What a user
would see: the history says the card expired and nothing ran, before any new message; the next
message is answered as itself.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from functions.expiry.app import create_handler
from local.agent_stack import AgentStack
from local.bus_rules import start_expiry_pump
from sstools_agent.chat.expired_cards import ExpiryRecorder, ExpiryTold
from sstools_agent.wiring.chat import build_chat
from tests.support.chat_http import confirmation_item, wait_for
from tests.support.chat_server import ChatServer, ask, deploys, make_chat, post_stream
from tests.support.events import LambdaInvocation
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio
EXPIRED_TEXT = "время подтверждения истекло"


@pytest.fixture
def quick_chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from make_chat(stack, confirmation_timeout_s=2)


def recorder(chat: ChatServer) -> ExpiryRecorder:
    """The expiry function's code over the chat function's collaborators (a container of its
    own: a fresh agent over the same checkpoints)."""
    deps = build_chat(chat.stack.settings)
    return deps.expiry_recorder()


def said(messages: list[Any]) -> str:
    return " ".join(message.content for message in messages).lower()


async def test_an_expired_card_is_told_in_its_conversation_without_a_new_message(
    quick_chat: ChatServer,
):
    chat = quick_chat
    settings = chat.stack.settings
    stop = start_expiry_pump(
        settings.aws_endpoint_url or "",
        settings.aws_region,
        settings.audit_bus_name,
        recorder(chat),
    )
    try:
        # Given a card nobody answers
        conversation, card = await ask(chat)
        # When its timer ends (the state machine marks it expired and says so on the bus)
        await wait_for(
            lambda: confirmation_item(chat, card["confirmation_id"])["status"] == "expired"
        )
        # Then, with no message from the user, the conversation says it expired: the history's
        # last answer, and the call kept as not run
        record = None
        for _ in range(300):
            record = await chat.store.get(conversation)
            told = record is not None and record.pending_confirmation_id is None
            if told and record is not None and not record.is_running(time.time()):
                break  # (told, and its turn's history stored: the lock is given back after)
            await asyncio.sleep(0.1)
        assert record is not None
        assert record.pending_confirmation_id is None, "the expiry was never told"
    finally:
        stop.set()
    messages = await chat.store.messages(conversation)
    assert EXPIRED_TEXT in said(messages[-1:]), said(messages)
    calls = [c for m in messages for c in m.tool_calls if c["tool_call_id"] == card["tool_call_id"]]
    assert calls, "the call is not in the history"
    assert all(call["status"] != "tool_end" for call in calls), calls
    # And the next question is answered as itself, not with the expiry
    status, events, _ = await post_stream(
        chat,
        {
            "message": "какой статус у этого дашборда?",
            "conversation_id": conversation,
            "ui_context": DASHBOARD_10,
        },
    )
    assert status == 200
    assert "confirm_resolved" not in [e.type for e in events]
    assert EXPIRED_TEXT not in " ".join(e.data.get("content", "") for e in events).lower()
    assert deploys(chat) == 0


async def test_the_expiry_function_leaves_a_card_answered_in_time_as_it_was(chat_ok):
    chat, handler = chat_ok
    conversation, card = await ask(chat)
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    status, _, _ = await post_stream(
        chat,
        {
            "action": "deny",
            "conversation_id": conversation,
            "confirmation_id": card["confirmation_id"],
        },
    )
    assert status == 200
    before = await chat.store.messages(conversation)
    # An expiry event for it (a redelivery, or one sent by hand) changes nothing
    answer = await asyncio.to_thread(
        handler, event_for(card["confirmation_id"]), LambdaInvocation()
    )
    assert answer["told"] == ExpiryTold.NOT_EXPIRED
    assert await chat.store.messages(conversation) == before


@pytest.fixture
def chat_ok(stack: AgentStack) -> Iterator[tuple[ChatServer, Any]]:
    for chat in make_chat(stack):
        yield chat, create_handler(recorder(chat))


def event_for(confirmation_id: str) -> dict[str, Any]:
    """The event the state machine's PublishOutcome puts on the bus, as EventBridge delivers it."""
    return {
        "version": "0",
        "id": "e-1",
        "detail-type": "confirmation_decided",
        "source": "sstools.agent.confirmations",
        "account": "123456789012",
        "time": "2026-12-03T08:00:00Z",
        "region": "eu-central-1",
        "resources": [],
        "detail": {
            "kind": "confirmation_decided",
            "confirmation_id": confirmation_id,
            "decision": {"result": "expired"},
        },
    }
