"""`ChatTurns` on the in-memory ports: no moto, no HTTP. The agent is the real one with the
stand-in model, an in-memory checkpointer and a tool runner that answers every call."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from sstools_agent.adapters.memory import (
    InMemoryConfirmationStore,
    InMemoryConfirmationWorkflow,
    InMemoryConversationStore,
    InMemoryToolRunner,
    MemoryAttachmentStore,
    MemoryAuditSink,
    MemoryBlobStore,
)
from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.runtime import ChatAgent
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.chat.attachments import ChatAttachments
from sstools_agent.chat.prepared_turn import PreparedTurn
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.attachments import AttachmentLimits
from sstools_agent.domain.audit import AuditKind
from sstools_agent.domain.chat_events import ChatEvent, EventType, StreamEnd, StreamToken, Text
from sstools_agent.domain.confirmations import (
    ConfirmationDecided,
    ConfirmationForbidden,
    ConfirmationStatus,
    ExecutionState,
)
from sstools_agent.domain.conversations import Conversation, ConversationBusy, MessageRole
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.ui_context import UIContext, parse_ui_context

pytestmark = pytest.mark.anyio
DASHBOARD_10 = {
    "contextVersion": 1,
    "objectType": "dashboard",
    "objectId": "10",
    "envId": "ss-dev",
    "route": "/dashboards/10",
}
STATUS = "какой статус у этого дашборда?"
DEPLOY = "задеплой дашборд 10 в staging"


class Chat:
    """ChatTurns over in-memory ports, with the ports at hand."""

    def __init__(self, policy: ToolPolicy, store: InMemoryConversationStore | None = None) -> None:
        self.policy = policy
        self.store = store or InMemoryConversationStore()
        self.confirmations = InMemoryConfirmationStore()
        self.workflow = InMemoryConfirmationWorkflow(self.confirmations)
        self.audit = MemoryAuditSink()
        self.runner = InMemoryToolRunner()
        self.files = MemoryAttachmentStore()
        agent = ChatAgent(StandinChatModel(), InMemorySaver(), policy, self.runner)
        self.turns = ChatTurns(
            lambda: agent,
            self.store,
            self.confirmations,
            self.workflow,
            audit=self.audit,
            outputs=MemoryBlobStore(),
            attachments=ChatAttachments(self.files, AttachmentLimits()),
        )

    def context(self, user: str, role: Role = Role.ENGINEER) -> AgentRunContext:
        parsed = parse_ui_context(DASHBOARD_10, self.policy.environments)
        assert isinstance(parsed, UIContext)
        principal = Principal(user, role, (role.value,), "user.jwt", int(time.time()) + 600)
        return AgentRunContext(principal=principal, ui_context=parsed, service_token="svc.jwt")

    async def prepare(self, user: str, message: str | None, **kwargs: Any) -> PreparedTurn:
        arguments: dict[str, Any] = {
            "conversation_id": None,
            "action": None,
            "confirmation_id": None,
            "ui_context": DASHBOARD_10,
        } | kwargs
        return await self.turns.prepare(owner=user, message=message, **arguments)

    async def run(self, user: str, turn: PreparedTurn) -> list[tuple[str | None, ChatEvent]]:
        return [pair async for pair in self.turns.stream(turn, self.context(user))]

    async def turn(self, user: str, message: str | None, **kwargs: Any) -> list[ChatEvent]:
        turn = await self.prepare(user, message, **kwargs)
        return [event for _, event in await self.run(user, turn)]


@pytest.fixture
def chat(policy: ToolPolicy) -> Chat:
    return Chat(policy)


def ended(events: list[ChatEvent]) -> dict[str, Any]:
    assert events[-1].type is EventType.STREAM_END
    return dict(events[-1].metadata)


def card(events: list[ChatEvent]) -> dict[str, Any]:
    cards = [e.metadata for e in events if e.type is EventType.CONFIRM_REQUIRED]
    assert len(cards) == 1, [e.type for e in events]
    return dict(cards[0])


async def test_a_turn_stores_the_user_and_assistant_messages_and_releases_the_lock(chat: Chat):
    # Given a new conversation, When a turn runs to its end
    turn = await chat.prepare("egor", STATUS)
    streamed = await chat.run("egor", turn)
    events = [event for _, event in streamed]
    conversation_id = ended(events)["conversation_id"]
    # Then both messages are in the history, in order, and the lock is released
    history = await chat.store.messages(conversation_id)
    assert [m.role for m in history] == [MessageRole.USER, MessageRole.ASSISTANT]
    assert history[0].content == STATUS
    assert history[1].content
    record = await chat.store.get(conversation_id)
    assert record is not None
    assert record.locked_by is None
    assert record.last_seq == len(events)
    # And every event was stored for replay under its id
    replay = await chat.store.events_after(conversation_id, 0)
    assert [f"{conversation_id}:{seq}" for seq, _ in replay] == [sse_id for sse_id, _ in streamed]
    assert chat.runner.called  # the page object's tools were called through the port


async def test_a_second_turn_while_one_holds_the_conversation_is_busy(chat: Chat):
    first = await chat.prepare("egor", STATUS)
    conversation_id = first.conversation.conversation_id
    with pytest.raises(ConversationBusy):
        await chat.prepare("egor", "ещё вопрос", conversation_id=conversation_id)
    await chat.run("egor", first)
    # Once the first turn ended, the next one is taken
    second = await chat.prepare("egor", "ещё вопрос", conversation_id=conversation_id)
    assert second.conversation.locked_by == second.run_id


async def test_the_stream_ends_once_the_turn_is_stored_and_the_conversation_free(chat: Chat):
    # Given a turn that shows a card (the page lets the user click it as soon as stream_end comes)
    turn = await chat.prepare("egor", DEPLOY)
    conversation_id = turn.conversation.conversation_id
    stream = chat.turns.stream(turn, chat.context("egor"))
    seen: list[ChatEvent] = []
    async for _, event in stream:
        seen.append(event)
        if event.type is EventType.STREAM_END:
            break
    # When the client has its stream_end (and reads no further)
    # Then the answer is in the history and the card's decision is taken at once, not 409
    history = await chat.store.messages(conversation_id)
    assert [m.role for m in history] == [MessageRole.USER, MessageRole.ASSISTANT]
    confirmation_id = card(seen)["confirmation_id"]
    decision = await chat.prepare(
        "egor",
        None,
        conversation_id=conversation_id,
        action="deny",
        confirmation_id=confirmation_id,
    )
    assert decision.conversation.locked_by == decision.run_id
    await stream.aclose()


async def test_a_confirm_of_another_users_card_is_forbidden(chat: Chat):
    events = await chat.turn("egor", DEPLOY)
    confirmation_id = card(events)["confirmation_id"]
    conversation_id = ended(events)["conversation_id"]
    with pytest.raises(ConfirmationForbidden):
        await chat.prepare(
            "anna",
            None,
            conversation_id=conversation_id,
            action="confirm",
            confirmation_id=confirmation_id,
        )
    confirmation = await chat.confirmations.get(confirmation_id)
    assert confirmation is not None
    assert confirmation.status is ConfirmationStatus.PENDING


async def test_a_confirmed_card_runs_its_call_once_and_journals_it(chat: Chat):
    # Given a card waiting for the engineer's decision
    events = await chat.turn("egor", DEPLOY)
    confirmation_id = card(events)["confirmation_id"]
    conversation_id = ended(events)["conversation_id"]
    assert confirmation_id in chat.workflow.started
    # When the engineer confirms it
    confirm = {
        "conversation_id": conversation_id,
        "action": "confirm",
        "confirmation_id": confirmation_id,
        "role": Role.ENGINEER,
    }
    resolved = await chat.turn("egor", None, **confirm)
    # Then the card resolves as confirmed, the token is handed back and the call ran once
    assert resolved[0].type is EventType.CONFIRM_RESOLVED
    assert resolved[0].metadata["result"] == "confirmed"
    assert list(chat.workflow.results.values()) == ["confirmed"]
    assert chat.runner.called.count("deploy_dashboard") == 1
    confirmation = await chat.confirmations.get(confirmation_id)
    assert confirmation is not None
    assert confirmation.status is ConfirmationStatus.CONFIRMED
    assert confirmation.execution is ExecutionState.SUCCEEDED
    kinds = [record.kind for record in chat.audit.records]
    assert kinds.count(AuditKind.CONFIRMATION_REQUESTED) == 1
    # And a second confirm runs nothing
    with pytest.raises(ConfirmationDecided):
        await chat.prepare("egor", None, **confirm)
    assert chat.runner.called.count("deploy_dashboard") == 1


async def test_a_confirm_that_loses_the_race_with_the_timer_runs_nothing_and_says_so(chat: Chat):
    # Given a card whose timer closed the wait just as the confirm's write landed
    events = await chat.turn("egor", DEPLOY)
    confirmation_id = card(events)["confirmation_id"]
    conversation_id = ended(events)["conversation_id"]
    chat.workflow.time_out(confirmation_id, card_expires=False)
    # When the confirm goes on
    resolved = await chat.turn(
        "egor",
        None,
        conversation_id=conversation_id,
        action="confirm",
        confirmation_id=confirmation_id,
        role=Role.ENGINEER,
    )
    # Then the user is told it expired, nothing ran, and the audit log says not run, once
    assert resolved[0].metadata == {"type": "confirm_resolved", "result": "expired"}
    assert "deploy_dashboard" not in chat.runner.called
    not_run = [r for r in chat.audit.records if r.kind is AuditKind.TOOL_NOT_RUN]
    assert [r.detail["confirmation_id"] for r in not_run] == [confirmation_id]


async def test_a_new_message_cancels_the_open_card(chat: Chat):
    events = await chat.turn("egor", DEPLOY)
    confirmation_id = card(events)["confirmation_id"]
    conversation_id = ended(events)["conversation_id"]
    await chat.turn("egor", STATUS, conversation_id=conversation_id)
    confirmation = await chat.confirmations.get(confirmation_id)
    assert confirmation is not None
    assert confirmation.status is ConfirmationStatus.CANCELLED
    assert list(chat.workflow.results.values()) == ["cancelled"]
    assert "deploy_dashboard" not in chat.runner.called


async def test_the_stream_goes_on_when_storing_its_events_fails(chat: Chat):
    # Given a store whose event writes fail
    chat.store.fail_on.add("append_events")
    # When a turn runs, Then it still ends, with its history, and releases the lock
    events = await chat.turn("egor", STATUS)
    conversation_id = ended(events)["conversation_id"]
    assert len(await chat.store.messages(conversation_id)) == 2
    assert await chat.store.events_after(conversation_id, 0) == []
    record = await chat.store.get(conversation_id)
    assert record is not None
    assert record.locked_by is None


class EndingAsItIsRead(InMemoryConversationStore):
    """A store in which the run being followed stores its last events and ends just as the
    conversation's state is next read (`ending`)."""

    def __init__(self) -> None:
        super().__init__()
        self.ending: Callable[[], Awaitable[None]] | None = None

    async def get(self, conversation_id: str) -> Conversation | None:
        if self.ending is not None:
            ending, self.ending = self.ending, None
            await ending()
        return await super().get(conversation_id)


async def test_a_follower_gets_the_events_a_run_stored_as_it_ended(policy: ToolPolicy):
    # Given a run that has stored two tokens, followed by a reconnect (another tab, a reload)
    store = EndingAsItIsRead()
    chat = Chat(policy, store)
    turn = await chat.prepare("egor", STATUS)
    conversation_id = turn.conversation.conversation_id
    words = [StreamToken(word) for word in ("Дашборд ", "в ", "порядке", ".")]
    wires = [event.to_wire() for event in words]
    wires.append(StreamEnd(conversation_id, "u1", "a1").to_wire())
    await store.append_events(conversation_id, turn.run_id, list(enumerate(wires[:2], 1)))
    follower = await chat.prepare(
        "egor", None, conversation_id=conversation_id, action="resume", resume_after=0
    )

    # When the run stores the rest and ends between the follower's reads
    async def end_the_run() -> None:
        await store.append_events(conversation_id, turn.run_id, list(enumerate(wires[2:], 3)))
        await store.finish_turn(conversation_id, turn.run_id, len(wires), "2026-12-02T00:00:00Z")

    store.ending = end_the_run
    replayed = [event async for _, event in chat.turns.replay(follower, limit_s=5)]
    # Then the follower has the whole answer and the run's own end, not a cut-off one
    assert [event.to_wire() for event in replayed] == wires


async def test_a_reconnect_replays_what_the_client_missed(chat: Chat):
    turn = await chat.prepare("egor", STATUS)
    streamed = await chat.run("egor", turn)
    conversation_id = turn.conversation.conversation_id
    resume = await chat.prepare(
        "egor", None, conversation_id=conversation_id, action="resume", resume_after=2
    )
    replayed = [pair async for pair in chat.turns.replay(resume, limit_s=1)]
    assert [sse_id for sse_id, _ in replayed] == [sse_id for sse_id, _ in streamed[2:]]
    assert [e.to_wire() for _, e in replayed] == [e.to_wire() for _, e in streamed[2:]]


async def test_a_reconnect_after_a_stale_confirm_whose_new_card_was_never_held_says_so(
    chat: Chat,
):
    # Given a card decided stale (the world changed) whose run stopped before its new card
    events = await chat.turn("egor", DEPLOY)
    confirmation_id = card(events)["confirmation_id"]
    conversation_id = ended(events)["conversation_id"]
    await chat.confirmations.decide(confirmation_id, "egor", ConfirmationStatus.STALE)
    # When the page reconnects
    resume = await chat.prepare(
        "egor", None, conversation_id=conversation_id, action="resume", resume_after=999
    )
    said = [e for _, e in [pair async for pair in chat.turns.replay(resume, limit_s=1)]]
    # Then it is told why nothing ran, not that a new message cancelled it
    told = " ".join(e.text for e in said if isinstance(e, Text))
    assert "карточка устарела" in told, told
    assert "новым сообщением" not in told
    assert chat.runner.called.count("deploy_dashboard") == 0
