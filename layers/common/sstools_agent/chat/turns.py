"""A chat turn from request to stored history: the application service behind the chat function.

`ChatTurns.prepare` checks everything that can fail before the stream starts (conversation owner,
archive, pending confirmation, the per-conversation lock) so those failures are plain HTTP errors;
`ChatTurns.stream` then runs the agent and gives every event an increasing sequence number, stores
events in chunks for replay, stores the history, and always releases the lock, even when the client
goes away mid-stream. `ChatTurns.follow` replays what a reconnecting client missed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Final, Literal

import anyio

from sstools_agent.adapters.audit import AuditSink
from sstools_agent.adapters.confirmations import (
    ConfirmationDecided,
    ConfirmationExpired,
    ConfirmationForbidden,
    ConfirmationNotFound,
    ConfirmationStore,
    ConfirmationWorkflow,
)
from sstools_agent.adapters.conversation_store import (
    ConversationArchived,
    ConversationStore,
)
from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.prefetch import DEFAULT_PREFETCH_TIMEOUT_S
from sstools_agent.agent.runtime import ChatAgent, PendingConfirmation
from sstools_agent.domain.audit import AuditKind, AuditRecord, args_hash
from sstools_agent.domain.chat_events import ChatEvent, ConfirmationResult, EventType
from sstools_agent.domain.confirmations import Confirmation, ConfirmationStatus, fingerprint
from sstools_agent.domain.conversations import (
    Conversation,
    MessageRole,
    StoredMessage,
    TurnRecorder,
    event_id,
    now_iso,
    title_from,
)
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.tool_routing import RoutingDecision

logger = logging.getLogger(__name__)

DEFAULT_LEASE_S: Final = 120.0
DEFAULT_CONFIRMATION_TIMEOUT_S: Final = 300
FLUSH_EVERY_EVENTS: Final = 50
FLUSH_EVERY_S: Final = 0.5
FOLLOW_POLL_S: Final = 0.25
FOLLOW_LIMIT_S: Final = 300.0
STOPPED_TEXT: Final = "Генерация остановлена по запросу; ход сохранён до этого места."

Action = Literal["confirm", "deny", "resume"] | None


class NoPendingConfirmationError(Exception):
    """confirm/deny with nothing waiting, or for another confirmation (404)."""


AUDITED: Final = {
    EventType.TOOL_END: (AuditKind.TOOL_CALLED, "succeeded"),
    EventType.TOOL_ERROR: (AuditKind.TOOL_CALLED, "failed"),
    EventType.PERMISSION_DENIED: (AuditKind.TOOL_DENIED, "denied"),
    EventType.CONFIRM_REQUIRED: (AuditKind.CONFIRMATION_REQUESTED, "pending"),
}


def pending_fingerprint(pending: PendingConfirmation) -> str:
    """The fingerprint of the call the checkpoint waits on, as the card showed it."""
    decision = pending.decision
    return fingerprint(
        pending.tool, pending.args, decision.get("environment"), str(decision.get("risk", ""))
    )


@dataclass
class PreparedTurn:
    """A turn that passed every check and holds the lock (or a read-only resume)."""

    conversation: Conversation
    action: Action
    message: str | None
    run_id: str
    resume_after: int = 0
    result: ConfirmationResult | None = None


class _EventWriter:
    """Stores a turn's events in chunks from a background task, so the stream never waits on it.

    Also renews the run's lease, and notices a cancel requested from another connection.
    """

    def __init__(
        self, store: ConversationStore, conversation_id: str, run_id: str, lease_s: float
    ) -> None:
        self.store, self.conversation_id, self.run_id = store, conversation_id, run_id
        self.lease_s = lease_s
        self.buffer: list[tuple[int, dict[str, Any]]] = []
        self.cancel_requested = False
        self._wake = asyncio.Event()
        self._closing = False
        self._task = asyncio.create_task(self._run())

    def add(self, seq: int, event: ChatEvent) -> None:
        self.buffer.append((seq, event.to_wire()))
        if len(self.buffer) >= FLUSH_EVERY_EVENTS:
            self._wake.set()

    async def _flush(self) -> None:
        chunk, self.buffer = self.buffer, []
        if chunk and await self.store.append_events(self.conversation_id, self.run_id, chunk):
            self.cancel_requested = True

    async def _run(self) -> None:
        renewed = time.monotonic()
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), FLUSH_EVERY_S)
            self._wake.clear()
            try:
                await self._flush()
                if time.monotonic() - renewed > self.lease_s / 3:
                    await self.store.renew(self.conversation_id, self.run_id, self.lease_s)
                    renewed = time.monotonic()
            except Exception:
                logger.exception("storing stream events failed; the stream goes on")

    async def close(self) -> None:
        """Stops the background task and stores what is left."""
        self._closing = True
        self._wake.set()
        await self._task
        await self._flush()


class ChatTurns:
    """Runs chat turns for the chat function."""

    def __init__(
        self,
        agent_factory: Callable[[], ChatAgent],
        store: ConversationStore,
        confirmations: ConfirmationStore,
        workflow: ConfirmationWorkflow,
        *,
        audit: AuditSink,
        lease_s: float = DEFAULT_LEASE_S,
        confirmation_timeout_s: int = DEFAULT_CONFIRMATION_TIMEOUT_S,
        prefetch_timeout_s: float = DEFAULT_PREFETCH_TIMEOUT_S,
    ) -> None:
        self.prefetch_timeout_s = prefetch_timeout_s
        self._agent_factory = agent_factory
        self.audit = audit
        self.store = store
        self.confirmations = confirmations
        self.workflow = workflow
        self.lease_s = lease_s
        self.confirmation_timeout_s = confirmation_timeout_s

    async def prepare(
        self,
        *,
        owner: str,
        conversation_id: str | None,
        action: Action,
        message: str | None,
        confirmation_id: str | None,
        ui_context: dict[str, Any] | None,
        resume_after: int = 0,
    ) -> PreparedTurn:
        """Every check that decides the HTTP status, and the lock. Writes nothing on refusal."""
        run_id = uuid.uuid4().hex
        if conversation_id is None:
            at = now_iso()
            fresh = Conversation(
                uuid.uuid4().hex, owner, title_from(message or ""), at, at, ui_context=ui_context
            )
            held = await self.store.start_turn(fresh, run_id, self.lease_s, new=True)
            return PreparedTurn(held, None, message, run_id)
        confirmation = None
        if action in ("confirm", "deny"):  # before ownership: another user's card is a 403
            confirmation = await self._pending_for(conversation_id, confirmation_id, owner)
        conversation = await self.store.get_owned(conversation_id, owner)
        if action == "resume":
            return PreparedTurn(conversation, action, None, run_id, resume_after=resume_after)
        if conversation.is_archived:
            raise ConversationArchived(conversation_id)
        wanted = Conversation(
            conversation.conversation_id,
            owner,
            conversation.title,
            conversation.created_at,
            conversation.updated_at,
            ui_context=ui_context,
        )
        held = await self.store.start_turn(wanted, run_id, self.lease_s, new=False)
        if confirmation is None:
            return PreparedTurn(held, action, message, run_id)
        try:
            result = await self._decide(
                confirmation, owner, action == "confirm", held.pending_confirmation_id
            )
        except BaseException:
            await self.store.finish_turn(conversation_id, run_id, held.last_seq, now_iso())
            raise
        return PreparedTurn(held, action, message, run_id, result=result)

    async def _pending_for(
        self, conversation_id: str, confirmation_id: str | None, owner: str
    ) -> Confirmation:
        """The confirmation a confirm/deny names, checked against what the checkpoint waits for."""
        confirmation = await self.confirmations.get(confirmation_id) if confirmation_id else None
        if confirmation is None or confirmation.conversation_id != conversation_id:
            raise ConfirmationNotFound(confirmation_id or "")
        if confirmation.user != owner:
            raise ConfirmationForbidden(confirmation.confirmation_id)
        if confirmation.status in (
            ConfirmationStatus.CONFIRMED,
            ConfirmationStatus.DENIED,
            ConfirmationStatus.CANCELLED,
        ):
            raise ConfirmationDecided(confirmation.confirmation_id)
        if confirmation.expired(time.time()):
            current = await self.store.get(conversation_id)
            if current is None or current.pending_confirmation_id != confirmation.confirmation_id:
                raise ConfirmationExpired(confirmation.confirmation_id)
        pending = await self._agent_factory().pending_confirmation(conversation_id)
        if pending is None or pending_fingerprint(pending) != confirmation.fingerprint:
            raise NoPendingConfirmationError(conversation_id)
        return confirmation

    async def _decide(
        self, confirmation: Confirmation, owner: str, confirmed: bool, awaited: str | None
    ) -> ConfirmationResult:
        """Moves the confirmation out of pending exactly once and hands its token back.

        `awaited` is the card the conversation still waits on, read under the lock: an expired
        card resolves as expired once (that answer streams `confirm_resolved(expired)`); once
        told, it is ConfirmationExpired (409), never a second resume of a settled call."""
        wanted = ConfirmationStatus.CONFIRMED if confirmed else ConfirmationStatus.DENIED
        decided = await self.confirmations.decide(confirmation.confirmation_id, owner, wanted)
        await self.store.set_pending_confirmation(confirmation.conversation_id, None)
        if decided.status is not wanted:  # it expired first: nothing runs
            if awaited != confirmation.confirmation_id:
                raise ConfirmationExpired(confirmation.confirmation_id)
            return ConfirmationResult.EXPIRED
        result = ConfirmationResult.CONFIRMED if confirmed else ConfirmationResult.DENIED
        if decided.task_token and not await self.workflow.hand_back(decided.task_token, result):
            return ConfirmationResult.EXPIRED
        return result

    async def _events(
        self, turn: PreparedTurn, context: AgentRunContext
    ) -> AsyncGenerator[ChatEvent]:
        agent = self._agent_factory()
        conversation_id = turn.conversation.conversation_id
        if turn.result is not None:
            async for event in agent.resolve(conversation_id, turn.result, context):
                yield await self._held(turn, event)
            return
        # The page object's summary is read while the turn's own bookkeeping runs.
        prefetch = None
        if self.prefetch_timeout_s > 0:
            prefetch = asyncio.create_task(agent.prefetch(context, self.prefetch_timeout_s))
        try:
            async for event in self._settle_confirmation(turn, agent, context):
                yield event
            prefetched = await prefetch if prefetch is not None else None
        finally:
            if prefetch is not None:
                prefetch.cancel()
        message = turn.message or ""
        context = replace(context, prefetched=prefetched)
        routing = await agent.route(message, context)
        if routing is not None:
            context = replace(context, routing=routing)
            self._record_routing(turn, routing, context)
        async for event in agent.send(conversation_id, message, context):
            yield await self._held(turn, event)

    async def _settle_confirmation(
        self, turn: PreparedTurn, agent: ChatAgent, context: AgentRunContext
    ) -> AsyncGenerator[ChatEvent]:
        """Before a new message: an expired card resolves as rejected, a pending one is
        cancelled by the message (the agent says so)."""
        conversation_id = turn.conversation.conversation_id
        waiting = turn.conversation.pending_confirmation_id
        if waiting is not None:
            confirmation = await self.confirmations.get(waiting)
            await self.store.set_pending_confirmation(conversation_id, None)
            if confirmation is not None and confirmation.expired(time.time()):
                if await agent.pending_confirmation(conversation_id) is not None:
                    async for event in agent.resolve(
                        conversation_id, ConfirmationResult.EXPIRED, context
                    ):
                        yield event
            elif confirmation is not None and confirmation.status is ConfirmationStatus.PENDING:
                await self._cancel(confirmation, turn.conversation.owner)

    def _record_routing(
        self, turn: PreparedTurn, routing: RoutingDecision, context: AgentRunContext
    ) -> None:
        """The turn's tool choice, in the logs and the audit log: offered, and removed by which
        rule (role, affinity, no environment: the policy; router: the router)."""
        detail = routing.to_record() | {"request_id": context.request_id}
        logger.info("tools routed", extra={"routing": detail})
        self.audit.emit(
            AuditRecord(
                AuditKind.TOOLS_ROUTED,
                turn.conversation.owner,
                routing.intent.value,
                turn.conversation.conversation_id,
                detail,
            )
        )

    async def _cancel(self, confirmation: Confirmation, owner: str) -> None:
        with contextlib.suppress(ConfirmationDecided):
            decided = await self.confirmations.decide(
                confirmation.confirmation_id, owner, ConfirmationStatus.CANCELLED
            )
            if decided.task_token:
                await self.workflow.hand_back(decided.task_token, ConfirmationResult.CANCELLED)

    async def _held(self, turn: PreparedTurn, event: ChatEvent) -> ChatEvent:
        """A confirmation card gets its pending item and its Step Functions execution."""
        if event.type is not EventType.CONFIRM_REQUIRED:
            return event
        meta = event.metadata
        decision = meta.get("decision") or {}
        confirmation = Confirmation(
            confirmation_id=uuid.uuid4().hex,
            conversation_id=turn.conversation.conversation_id,
            user=turn.conversation.owner,
            tool_call_id=str(meta.get("tool_call_id", "")),
            tool=str(decision.get("tool", "")),
            fingerprint=fingerprint(
                str(decision.get("tool", "")),
                dict(meta.get("input") or {}),
                decision.get("environment"),
                str(decision.get("risk", "")),
            ),
            risk=str(decision.get("risk", "")),
            status=ConfirmationStatus.PENDING,
            expires_at=time.time() + self.confirmation_timeout_s,
        )
        await self.confirmations.create(confirmation)
        await self.workflow.start(confirmation, self.confirmation_timeout_s)
        await self.store.set_pending_confirmation(
            confirmation.conversation_id, confirmation.confirmation_id
        )
        expires = datetime.fromtimestamp(confirmation.expires_at, UTC).isoformat(timespec="seconds")
        return event.held_as(confirmation.confirmation_id, expires.replace("+00:00", "Z"))

    async def stream(
        self, turn: PreparedTurn, context: AgentRunContext
    ) -> AsyncIterator[tuple[str, ChatEvent]]:
        """The turn's events with their SSE ids; stores events, history, and releases the lock."""
        conversation_id = turn.conversation.conversation_id
        seq = turn.conversation.last_seq
        writer = _EventWriter(self.store, conversation_id, turn.run_id, self.lease_s)
        recorder = TurnRecorder()
        user_message_id = None
        history: list[asyncio.Task[None]] = []
        if turn.message is not None and turn.result is None:
            user_message_id = uuid.uuid4().hex
            user_message = StoredMessage(
                user_message_id,
                MessageRole.USER,
                turn.message,
                now_iso(),
                seq + 1,
                ui_context=turn.conversation.ui_context,
            )
            history.append(
                asyncio.create_task(self.store.add_messages(conversation_id, [user_message]))
            )
        assistant_message_id = uuid.uuid4().hex
        events = self._events(turn, context)
        finished = False

        def numbered(event: ChatEvent) -> tuple[str, ChatEvent]:
            nonlocal seq
            seq += 1
            recorder.record(event)
            self._audit(turn, event, recorder)
            writer.add(seq, event)
            return event_id(conversation_id, seq), event

        try:
            try:
                async for event in events:
                    yield numbered(event)
                    if writer.cancel_requested:
                        yield numbered(ChatEvent.text(STOPPED_TEXT))
                        break
            except Exception:
                logger.exception("chat turn failed")
                yield numbered(ChatEvent.error(ErrorCode.INTERNAL_ERROR, "Внутренняя ошибка чата."))
            finished = True
            yield numbered(
                ChatEvent.stream_end(conversation_id, user_message_id, assistant_message_id)
            )
        finally:
            await events.aclose()
            with anyio.CancelScope(shield=True):
                await asyncio.gather(*history)
                await self._close_turn(
                    turn, writer, recorder, assistant_message_id, seq, complete=finished
                )

    def _audit(self, turn: PreparedTurn, event: ChatEvent, recorder: TurnRecorder) -> None:
        """Tool calls, denials and confirmation requests go to the audit log as they happen."""
        meta, kind = event.metadata, event.type
        if kind not in AUDITED:
            return
        call = recorder.tool_calls.get(str(meta.get("tool_call_id")), {})
        detail = {
            "tool": meta.get("tool") or (meta.get("decision") or {}).get("tool"),
            "tool_call_id": meta.get("tool_call_id"),
            "args_hash": args_hash(call.get("input") or meta.get("input") or {}),
        }
        if kind is EventType.TOOL_ERROR:
            detail["code"] = meta.get("code")
        elif kind is EventType.PERMISSION_DENIED:
            detail["required_role"] = meta.get("required_role")
        elif kind is EventType.CONFIRM_REQUIRED:
            decision = meta.get("decision") or {}
            detail |= {
                "confirmation_id": meta.get("confirmation_id"),
                "risk": decision.get("risk"),
                "environment": decision.get("environment"),
            }
        audit_kind, outcome = AUDITED[kind]
        self.audit.emit(
            AuditRecord(
                audit_kind,
                turn.conversation.owner,
                outcome,
                turn.conversation.conversation_id,
                detail,
            )
        )

    async def _close_turn(
        self,
        turn: PreparedTurn,
        writer: _EventWriter,
        recorder: TurnRecorder,
        assistant_message_id: str,
        seq: int,
        *,
        complete: bool,
    ) -> None:
        conversation_id = turn.conversation.conversation_id
        try:
            await writer.close()
            if recorder.answer or recorder.tool_calls or recorder.confirmations:
                await self.store.add_messages(
                    conversation_id,
                    [
                        StoredMessage(
                            assistant_message_id,
                            MessageRole.ASSISTANT,
                            recorder.answer,
                            now_iso(),
                            seq,
                            tool_calls=list(recorder.tool_calls.values()),
                            confirmations=recorder.confirmations,
                            status="complete" if complete else "interrupted",
                        )
                    ],
                )
        finally:
            await self.store.finish_turn(conversation_id, turn.run_id, seq, now_iso())

    async def follow(
        self, turn: PreparedTurn, *, limit_s: float = FOLLOW_LIMIT_S
    ) -> AsyncIterator[tuple[str, ChatEvent]]:
        """Replays events after `turn.resume_after`, following a run still in progress; then
        re-emits a pending confirmation the client has not seen."""
        conversation_id = turn.conversation.conversation_id
        seq, saw_card, deadline = turn.resume_after, False, time.monotonic() + limit_s
        while True:
            for stored_seq, wire in await self.store.events_after(conversation_id, seq):
                seq = stored_seq
                event = ChatEvent.from_wire(wire)
                saw_card = saw_card or event.type is EventType.CONFIRM_REQUIRED
                yield event_id(conversation_id, seq), event
            current = await self.store.get(conversation_id)
            running = (
                current is not None
                and current.locked_by is not None
                and ((current.locked_until or 0) > time.time())
            )
            if not running or time.monotonic() > deadline:
                break
            await asyncio.sleep(FOLLOW_POLL_S)
        if not saw_card:
            card = await self._agent_factory().pending_card(conversation_id)
            waiting = current.pending_confirmation_id if current else None
            confirmation = await self.confirmations.get(waiting) if waiting else None
            if card is not None and confirmation is not None:
                expires = datetime.fromtimestamp(confirmation.expires_at, UTC)
                card = card.held_as(
                    confirmation.confirmation_id,
                    expires.isoformat(timespec="seconds").replace("+00:00", "Z"),
                )
            if card is not None:
                yield event_id(conversation_id, seq), card
