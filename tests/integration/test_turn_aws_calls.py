"""What a turn asks AWS before the user sees its first event (docs/performance.md).

Through the chat function under uvicorn against moto, every botocore call in the process traced
(local/aws_calls.py): the conversation record is not read before the lock (the lock's
conditional write answers it), the checkpoint is read once per turn however often the turn asks
about it, the user's message is stored beside the first event, and audit records leave after the
first event but before the response ends.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from local.agent_stack import AgentStack, SampleUpstream, chat_app, minted_once
from local.aws_calls import (
    CONFIRM_RESOLVED,
    FIRST_EVENT,
    TEST_LATENCY_S,
    AwsCallTrace,
    TurnCalls,
)
from local.servers import serve
from sstools_agent.adapters.audit import EventBridgeAuditSink
from sstools_agent.adapters.memory import MemoryAuditSink
from tests.support.chat_http import STATUS, confirmation_item, wait_for
from tests.support.chat_server import ChatServer, post_stream
from tests.support.models import ScriptedChatModel
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio
DEPLOY = "задеплой дашборд 10 в staging"
ONE_CHECKPOINT_READ = Counter({"checkpointer.Query": 2, "checkpointer.GetItem": 1})
"""The latest checkpoint's index (a Query), then its payload (a GetItem) beside its writes (a
Query)."""


class TracedChat:
    def __init__(self, server: ChatServer, trace: AwsCallTrace) -> None:
        self.server, self.trace = server, trace

    async def turn(self, body: dict[str, Any]) -> tuple[dict[str, Any], TurnCalls]:
        metadata, calls = await self.turn_events(body)
        return metadata[-1], calls

    async def turn_events(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], TurnCalls]:
        """Each event's metadata, and the turn's calls."""
        self.trace.take()
        status, events, _ = await post_stream(self.server, body)
        assert status == 200
        return [event.data.get("metadata", {}) for event in events], self.trace.take()


@pytest.fixture(scope="module")
def traced_chat(module_stack: AgentStack) -> Iterator[TracedChat]:
    settings = module_stack.settings
    trace = AwsCallTrace(settings, latency_s=TEST_LATENCY_S)
    # The real audit producer, holding records far longer than a turn: only a flush sends them
    bus = EventBridgeAuditSink(
        settings.audit_bus_name,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
        linger_s=600,
    )
    app, store, _ = chat_app(
        module_stack, ScriptedChatModel(), bus, service_token=minted_once(settings)
    )
    with serve(trace.marking(app), lifespan="on") as url, trace.installed():
        yield TracedChat(ChatServer(url, module_stack, store, MemoryAuditSink()), trace)


@pytest.fixture
def chat(traced_chat: TracedChat, fresh_upstream: SampleUpstream) -> TracedChat:
    return traced_chat


async def test_a_new_conversation_waits_for_its_lock_and_one_checkpoint_query(chat: TracedChat):
    _, calls = await chat.turn(STATUS)
    assert calls.before(FIRST_EVENT, polls=False) == Counter(
        {"store.PutItem": 1, "checkpointer.Query": 1}
    )
    assert calls.round_trips(FIRST_EVENT) == 2


async def test_a_message_on_a_conversation_reads_its_checkpoint_once_and_its_record_never(
    chat: TracedChat,
):
    first, _ = await chat.turn(STATUS)
    # A message that asks about the open card, the previous message (a follow-up) and the run
    _, calls = await chat.turn(
        {"message": "то же самое для дашборда 10", "conversation_id": first["conversation_id"]}
    )
    before = calls.before(FIRST_EVENT, polls=False)
    assert before == ONE_CHECKPOINT_READ + Counter({"store.UpdateItem": 1})  # the lock
    # the lock; the checkpoint's index; its payload beside its writes
    assert calls.round_trips(FIRST_EVENT) == 3
    assert calls.after(FIRST_EVENT)["store.BatchWriteItem"] >= 1  # the user's message, stored
    # Each flush of its events is one write (a PutItem, nothing on the record): the record's one
    # write after the first event is the lock's release, with the turn's last sequence number
    assert calls.after(FIRST_EVENT)["store.UpdateItem"] == 1
    assert calls.after(FIRST_EVENT)["store.PutItem"] >= 1


async def test_the_turns_audit_leaves_after_the_first_event_and_before_the_response_ends(
    chat: TracedChat,
):
    _, calls = await chat.turn(STATUS)
    assert calls.before(FIRST_EVENT, polls=False)["eventbridge.PutEvents"] == 0
    # The sink holds records for 600 s: only the flush before the response's end sent them
    assert calls.after(FIRST_EVENT)["eventbridge.PutEvents"] == 1


async def test_a_confirm_waits_for_five_round_trips_before_confirm_resolved(chat: TracedChat):
    first, _ = await chat.turn(STATUS)
    conversation = first["conversation_id"]
    events, _ = await chat.turn_events(
        {"message": DEPLOY, "ui_context": DASHBOARD_10, "conversation_id": conversation}
    )
    card = next(e["confirmation_id"] for e in events if e.get("type") == "confirm_required")
    # The user reads the card: by then its execution holds the task token
    await wait_for(lambda: "task_token" in confirmation_item(chat.server, card))
    answer = {"conversation_id": conversation, "action": "confirm", "confirmation_id": card}
    resolved, calls = await chat.turn_events(answer)
    assert resolved[0] == {**resolved[0], "type": "confirm_resolved", "result": "confirmed"}
    # The service yields confirm_resolved once the token is handed back; the bytes reach the
    # socket a moment later, and on a loaded machine the resumed run's own checkpoint read can
    # start (and end) in that moment. That read comes after the event: the mark is the earlier.
    handed_back = max(c.ended for c in calls.calls if c.name == "step-functions.SendTaskSuccess")
    calls.marks[CONFIRM_RESOLVED] = min(calls.marks[CONFIRM_RESOLVED], handed_back)
    before = calls.before(CONFIRM_RESOLVED, polls=False)
    # The card, the lock and the checkpoint side by side; the decision; the token handed back,
    # before the stream says how the card was decided (the run reads its checkpoint after it,
    # under the lock). The checkpoint read has the card's pending write.
    card_waits = ONE_CHECKPOINT_READ + Counter({"checkpointer.GetItem": 1})
    assert before == card_waits + Counter(
        {
            "confirmations.GetItem": 1,
            "store.UpdateItem": 1,
            "confirmations.UpdateItem": 1,
            "step-functions.SendTaskSuccess": 1,
        }
    )
    assert calls.round_trips(CONFIRM_RESOLVED) == 5
