"""Confirms at and after a card's expiry, through the chat function with the real state machine in
moto: every answer is a stream that opens with `confirm_resolved` or a 409 before the stream,
never an `INTERNAL_ERROR` event or a 404."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any

import pytest

from local.agent_stack import AgentStack
from tests.support.chat_http import confirmation_item, wait_for
from tests.support.chat_server import ChatServer, answer_card, ask, deploys, make_chat

pytestmark = pytest.mark.anyio
REFUSED_AT_EXPIRY = {"ALREADY_DECIDED", "CONFIRMATION_EXPIRED", "CONVERSATION_BUSY"}


@pytest.fixture
def quick_chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from make_chat(stack, confirmation_timeout_s=2)


def errors_in(events: list[Any]) -> list[Any]:
    return [e.data["metadata"] for e in events if e.type == "error"]


async def test_a_confirm_after_the_expiry_was_resolved_is_409_expired(quick_chat: ChatServer):
    chat = quick_chat
    conversation, card = await ask(chat)
    await wait_for(lambda: confirmation_item(chat, card["confirmation_id"])["status"] == "expired")
    # The first answer after expiry resolves the waiting call as rejected
    status, events, _ = await answer_card(chat, conversation, card, "confirm")
    assert (status, events[0].data["metadata"]["result"]) == (200, "expired")
    # Every later one is refused before the stream: the card is expired, not "nothing waits"
    for action in ("confirm", "deny", "confirm"):
        status, events, error = await answer_card(chat, conversation, card, action)
        assert (status, error and error["code"]) == (409, "CONFIRMATION_EXPIRED"), events
    assert deploys(chat) == 0


async def test_confirms_hammered_across_the_expiry_instant(quick_chat: ChatServer):
    chat = quick_chat
    conversation, card = await ask(chat)
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    expires_at = float(confirmation_item(chat, card["confirmation_id"])["expires_at"])
    # Given confirms sent every 0.15 s from 0.2 s before the expiry to 2 s after it
    await asyncio.sleep(max(0.0, expires_at - 0.2 - time.time()))
    answers: list[tuple[int, list[Any], dict[str, Any] | None]] = []

    async def click() -> None:
        answers.append(await answer_card(chat, conversation, card, "confirm"))

    clicks = []
    for _ in range(15):
        clicks.append(asyncio.create_task(click()))
        await asyncio.sleep(0.15)
    await asyncio.gather(*clicks)
    # Then one click is answered with a stream that says what happened, the rest are 409
    streams = [events for status, events, _ in answers if status == 200]
    refusals = [error["code"] for status, _, error in answers if status != 200 and error]
    assert len(streams) == 1, answers
    assert len(refusals) == len(answers) - 1, answers
    assert set(refusals) <= REFUSED_AT_EXPIRY, refusals
    [events] = streams
    assert errors_in(events) == []
    result = events[0].data["metadata"]["result"]
    assert result in {"confirmed", "expired"}
    assert deploys(chat) == (1 if result == "confirmed" else 0)
