"""Replay from the conversation store (moto): `events_after` returns every stored event after a
sequence number, whatever size the stored chunks have."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from local.agent_stack import AgentStack
from sstools_agent.adapters.dynamodb.conversations import DynamoDBConversationStore
from sstools_agent.domain.conversations import Conversation, now_iso

pytestmark = pytest.mark.anyio


def wire(seq: int, token_chars: int) -> dict[str, Any]:
    token = f"t{seq}".ljust(token_chars, "x")
    return {
        "role": "assistant",
        "content": "",
        "metadata": {"type": "stream_token", "token": token},
    }


async def stored_conversation(
    stack: AgentStack, chunk_sizes: list[int], token_chars: int = 4
) -> tuple[DynamoDBConversationStore, str, list[tuple[int, dict[str, Any]]]]:
    """A conversation whose events were stored in chunks of `chunk_sizes` events."""
    settings = stack.settings
    store = DynamoDBConversationStore(
        settings.conversations_table,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )
    at = now_iso()
    conversation = Conversation(uuid.uuid4().hex, "user.engineer", "replay", at, at)
    run_id = uuid.uuid4().hex
    await store.start_turn(conversation, run_id, 60, new=True)
    events: list[tuple[int, dict[str, Any]]] = []
    for size in chunk_sizes:
        chunk = [(len(events) + n, wire(len(events) + n, token_chars)) for n in range(1, size + 1)]
        await store.append_events(conversation.conversation_id, run_id, chunk)
        events += chunk
    return store, conversation.conversation_id, events


async def test_replay_from_every_offset_with_120_event_chunks(stack: AgentStack):
    # Given three stored chunks of 120 events each (a turn flushes whatever it has buffered)
    store, conversation_id, events = await stored_conversation(stack, [120, 120, 120])
    # When a client resumes after any event, Then it gets exactly the events after it, in order
    for seq in range(len(events) + 1):
        assert await store.events_after(conversation_id, seq) == events[seq:], seq


async def test_replay_across_chunks_of_mixed_sizes(stack: AgentStack):
    sizes = [1, 50, 51, 7, 200, 2]
    store, conversation_id, events = await stored_conversation(stack, sizes)
    boundaries = {sum(sizes[:n]) for n in range(len(sizes) + 1)}
    for seq in sorted({max(0, b + d) for b in boundaries for d in (-1, 0, 1)}):
        assert await store.events_after(conversation_id, seq) == events[seq:], seq


async def test_replay_reads_past_one_query_page(stack: AgentStack):
    # Given chunks of 150 KB each: more than the 1 MB one query returns
    store, conversation_id, events = await stored_conversation(stack, [1] * 9, token_chars=150_000)
    # Then every event comes back
    assert await store.events_after(conversation_id, 0) == events
