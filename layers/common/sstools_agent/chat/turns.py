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
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal

import anyio

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.interrupts import ConfirmationInterrupt
from sstools_agent.agent.runtime import ChatAgent, PendingConfirmation, interrupted_call_events
from sstools_agent.chat.attachments import ChatAttachments, CheckedFile
from sstools_agent.chat.tool_outputs import ToolOutputKeeper
from sstools_agent.domain.audit import AuditKind, AuditRecord, args_hash
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmationResult,
    ConfirmRequired,
    ErrorEvent,
    EventType,
    Notice,
    PermissionDenied,
    StreamEnd,
    Text,
    ToolEnd,
    ToolError,
    ToolsRouted,
)
from sstools_agent.domain.confirmation_outcomes import (
    abandoned_read_text,
    cancellation_text,
    outcome_text,
    unshown_card_text,
)
from sstools_agent.domain.confirmations import (
    DEFAULT_CONFIRMATION_TIMEOUT_S,
    CardWaits,
    Confirmation,
    ConfirmationDecided,
    ConfirmationEdit,
    ConfirmationExpired,
    ConfirmationForbidden,
    ConfirmationNotFound,
    ConfirmationNotPermitted,
    ConfirmationStatus,
    ExecutionState,
    InvalidEdit,
    NoPendingConfirmationError,
    Settlement,
    card_fingerprint,
)
from sstools_agent.domain.conversations import (
    Conversation,
    ConversationArchived,
    MessageRole,
    StoredMessage,
    TurnRecorder,
    event_id,
    now_iso,
    title_from,
)
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.glossary import tool_label
from sstools_agent.domain.guardrails import edit_asks_again
from sstools_agent.domain.plan_types import ChangePlan
from sstools_agent.domain.ports import (
    AuditSink,
    BlobStore,
    ConfirmationStore,
    ConfirmationWorkflow,
    ConversationStore,
)
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_calls import InvalidToolCall
from sstools_agent.domain.tool_routing import RoutingDecision
from sstools_agent.settings import DEFAULT_PREFETCH_TIMEOUT_S

logger = logging.getLogger(__name__)

DEFAULT_LEASE_S: Final = 120.0
FLUSH_EVERY_EVENTS: Final = 500
FLUSH_EVERY_S: Final = 0.5
"""Stored events are written every half second (or 500 events, whichever first): a replay
follows a live run within this plus `FOLLOW_POLL_S`, and a stop from another connection reaches
the run within it."""
FOLLOW_POLL_S: Final = 0.25
FOLLOW_LIMIT_S: Final = 300.0
STOPPED_TEXT: Final = "Генерация остановлена по запросу; ход сохранён до этого места."

Action = Literal["confirm", "deny", "edit", "resume"] | None
DECISIONS: Final = ("confirm", "deny", "edit")
"""The actions that answer a card."""


# A card that is not confirmed any more resolves as this when the next access finds it.
REJECTED_AS: Final = {
    ConfirmationStatus.DENIED: ConfirmationResult.DENIED,
    ConfirmationStatus.CANCELLED: ConfirmationResult.CANCELLED,
    ConfirmationStatus.EXPIRED: ConfirmationResult.EXPIRED,
    ConfirmationStatus.SUPERSEDED: ConfirmationResult.SUPERSEDED,
    # Its new card was never held (the run stopped first): the call is not run
    ConfirmationStatus.STALE: ConfirmationResult.CANCELLED,
    ConfirmationStatus.PENDING: ConfirmationResult.EXPIRED,  # pending past its time
}
# What a decision streams (`confirm_resolved`) and resumes the card's call with.
DECIDED_AS: Final = {
    ConfirmationStatus.CONFIRMED: ConfirmationResult.CONFIRMED,
    ConfirmationStatus.DENIED: ConfirmationResult.DENIED,
    ConfirmationStatus.SUPERSEDED: ConfirmationResult.SUPERSEDED,
    ConfirmationStatus.STALE: ConfirmationResult.STALE,
}
# How a confirmed call's journaled outcome reaches the audit log (exactly one per call).
OUTCOME_AUDIT: Final = {
    ExecutionState.SUCCEEDED: (AuditKind.TOOL_CALLED, "succeeded"),
    ExecutionState.FAILED: (AuditKind.TOOL_CALLED, "failed"),
    ExecutionState.UNKNOWN: (AuditKind.TOOL_OUTCOME_UNKNOWN, "unknown"),
    ExecutionState.NOT_RUN: (AuditKind.TOOL_NOT_RUN, "not_run"),
}


AUDITED: Final = {
    EventType.TOOL_END: (AuditKind.TOOL_CALLED, "succeeded"),
    EventType.TOOL_ERROR: (AuditKind.TOOL_CALLED, "failed"),
    EventType.PERMISSION_DENIED: (AuditKind.TOOL_DENIED, "denied"),
    EventType.CONFIRM_REQUIRED: (AuditKind.CONFIRMATION_REQUESTED, "pending"),
}
AUDITED_EVENTS: Final = (ToolEnd, ToolError, PermissionDenied, ConfirmRequired)


@dataclass(frozen=True, slots=True)
class ThreadRules:
    """How a wire protocol's threads behave where the two protocols differ."""

    created_on_first_use: bool = False
    """A new message naming a conversation id that does not exist creates it (AG-UI's threads)."""
    new_input_refused_while_a_card_waits: bool = False
    """A new message is refused (CardWaits) while a card can be answered; the chat protocol's
    new message cancels the card instead."""
    an_expired_card_refuses_answers: bool = False
    """An answer to an expired card is refused (ConfirmationExpired) and leaves it for the next
    message to settle; the chat protocol's first answer resolves it as expired instead."""


CHAT_THREADS: Final = ThreadRules()


@dataclass(frozen=True, slots=True)
class CardAnswer:
    """What a confirm, deny or edit asks of the card it names."""

    action: Action
    confirmation_id: str | None
    role: Role | None
    """The user's role now: a confirm is checked against it (a role can change after a card)."""
    edited_args: dict[str, Any]


async def _none() -> None:
    return None


def _outcome[T](result: T | BaseException) -> T:
    """What a call run with `gather(..., return_exceptions=True)` returned, or its raise."""
    if isinstance(result, BaseException):
        raise result
    return result


@dataclass
class PreparedTurn:
    """A turn that passed every check and holds the lock (or a read-only resume)."""

    conversation: Conversation
    action: Action
    message: str | None
    run_id: str
    resume_after: int = 0
    result: ConfirmationResult | None = None
    confirmation: Confirmation | None = None
    """The card a confirm, deny or edit answers; once decided, as the decision left it (with
    the edit it was answered with)."""
    pending: PendingConfirmation | None = None
    """The call that card waits on, as the checkpoint held it when checked."""
    journaled: set[str] = field(default_factory=set)
    """Tool call ids whose audit records the confirmation journal writes (not the events)."""
    stopped: bool = False
    """The run was stopped by a cancel request (set when the stream ends)."""
    attachments: list[CheckedFile] = field(default_factory=list)
    """The message's files, checked."""

    @property
    def edited_args(self) -> dict[str, Any] | None:
        """The arguments an `edit` answer runs (or asks again with), as the decided card keeps
        them; None for a card that expired first: its edit is moot, nothing runs."""
        if self.confirmation is None or self.result is ConfirmationResult.EXPIRED:
            return None
        return self.confirmation.edited_args


@dataclass
class _UserMessage:
    """The user's message of a turn: written into the history beside the turn's first event, not
    before it (the user does not wait for that write), and once."""

    store: ConversationStore
    conversation_id: str
    message: StoredMessage | None
    """Until written."""
    keep_files: Callable[[], Awaitable[None]] | None = None
    """Keeps the message's files, as they were checked, where attached files are kept."""
    message_id: str | None = None

    def __post_init__(self) -> None:
        self.message_id = self.message.message_id if self.message else None

    @classmethod
    def of(
        cls, turn: PreparedTurn, store: ConversationStore, seq: int, keeper: ChatAttachments
    ) -> _UserMessage:
        conversation = turn.conversation
        if turn.message is None or turn.result is not None:  # an answer to a card has none
            return cls(store, conversation.conversation_id, None)
        files = turn.attachments
        infos = [file.info for file in files]
        message = StoredMessage(
            uuid.uuid4().hex,
            MessageRole.USER,
            turn.message,
            now_iso(),
            seq,
            ui_context=conversation.ui_context,
            attachments=[info.to_record() for info in infos],
        )
        keep = None
        if infos:
            owner = conversation.owner

            async def keep() -> None:
                await keeper.keep(owner, files)

        return cls(store, conversation.conversation_id, message, keep)

    def write(self) -> list[asyncio.Task[None]]:
        """The write, started (nothing when there is none or it was started before); the
        message's files are kept beside it (a failed keep is logged: the download serves the
        upload, as bytes, until it expires, and the next message that attaches it keeps it)."""
        if self.message is None:
            return []
        message, self.message = self.message, None
        tasks = [asyncio.create_task(self.store.add_messages(self.conversation_id, [message]))]
        if self.keep_files is not None:
            tasks.append(asyncio.create_task(_logged(self.keep_files(), "keeping attached files")))
        return tasks


async def _logged(call: Awaitable[None], what: str) -> None:
    try:
        await call
    except Exception:
        logger.exception("%s failed", what)


class _TurnLedger:
    """What a turn leaves as it streams: its numbered events (stored for replay, recorded for
    the history, audited), and once it ends, its messages stored and the conversation released."""

    def __init__(
        self,
        turn: PreparedTurn,
        events: AsyncGenerator[ChatEvent],
        store: ConversationStore,
        *,
        lease_s: float,
        attachments: ChatAttachments,
        audit: Callable[[PreparedTurn, ChatEvent, TurnRecorder], None],
    ) -> None:
        self.turn, self.events, self.store, self.audit = turn, events, store, audit
        conversation_id = turn.conversation.conversation_id
        self.seq = turn.conversation.last_seq
        self.writer = _EventWriter(store, conversation_id, turn.run_id, lease_s)
        self.recorder = TurnRecorder()
        self.user_message = _UserMessage.of(turn, store, self.seq + 1, attachments)
        self.history: list[asyncio.Task[None]] = []
        self.assistant_message_id = uuid.uuid4().hex
        self.finished = False
        """The stream reached its `stream_end` (else the history says "interrupted")."""
        self._settled = False

    def number(self, event: ChatEvent, stored: ChatEvent | None = None) -> tuple[str, ChatEvent]:
        """The live event with its id; `stored` is what replay and history keep of it."""
        self.seq += 1
        kept = stored or event
        self.recorder.record(kept)
        self.audit(self.turn, kept, self.recorder)
        self.writer.add(self.seq, kept)
        self.history.extend(self.user_message.write())
        return event_id(self.turn.conversation.conversation_id, self.seq), event

    def end(self) -> StreamEnd:
        conversation_id = self.turn.conversation.conversation_id
        return StreamEnd(conversation_id, self.user_message.message_id, self.assistant_message_id)

    async def settle(self) -> None:
        """Stores what the turn leaves (events, messages) and releases the lock, once; a
        cancel does not stop it."""
        if self._settled:
            return
        self._settled = True
        try:
            await self.events.aclose()
        finally:
            with anyio.CancelScope(shield=True):
                self.history.extend(self.user_message.write())  # ended before its first event
                await asyncio.gather(*self.history)
                await self._close()

    async def _close(self) -> None:
        conversation_id = self.turn.conversation.conversation_id
        # This runs before stream_end goes out (or after the client left): a failure here is
        # logged, never raised into the stream (the client would see it cut, not ended).
        try:
            await self.writer.close()
            recorder = self.recorder
            if recorder.answer or recorder.tool_calls or recorder.confirmations:
                message = StoredMessage(
                    self.assistant_message_id,
                    MessageRole.ASSISTANT,
                    recorder.answer,
                    now_iso(),
                    self.seq,
                    tool_calls=list(recorder.tool_calls.values()),
                    confirmations=recorder.confirmations,
                    status="complete" if self.finished else "interrupted",
                )
                await self.store.add_messages(conversation_id, [message])
        except Exception:
            logger.exception("storing the turn's events or history failed")
        finally:
            try:
                await self.store.finish_turn(conversation_id, self.turn.run_id, self.seq, now_iso())
            except Exception:
                logger.exception("releasing the conversation failed; its lease will lapse")


class _EventWriter:
    """Stores a turn's events in chunks from a background task, so the stream never waits on it.

    Also renews the run's lease, and notices a cancel requested from another connection within
    `FLUSH_EVERY_S` whatever the run is doing: each flush asks the store, beside its write.
    """

    def __init__(
        self, store: ConversationStore, conversation_id: str, run_id: str, lease_s: float
    ) -> None:
        self.store, self.conversation_id, self.run_id = store, conversation_id, run_id
        self.lease_s = lease_s
        self.buffer: list[tuple[int, ChatEvent]] = []
        self.cancel_requested = False
        self.on_cancel: Callable[[], None] | None = None
        self._wake = asyncio.Event()
        self._closing = False
        self._task = asyncio.create_task(self._run())

    def add(self, seq: int, event: ChatEvent) -> None:
        self.buffer.append((seq, event))  # its wire form is built when stored, off the stream
        if len(self.buffer) >= FLUSH_EVERY_EVENTS:
            self._wake.set()

    async def _flush(self) -> None:
        """One write of what the run streamed since the last flush, and beside it (unless the
        run is ending) one read of whether another connection asked to stop it."""
        chunk, self.buffer = self.buffer, []
        calls: list[Awaitable[Any]] = []
        if chunk:
            wires = [(seq, event.to_wire()) for seq, event in chunk]
            calls.append(self.store.append_events(self.conversation_id, self.run_id, wires))
        asking = not self._closing and not self.cancel_requested
        if asking:
            calls.append(self.store.cancel_requested(self.conversation_id, self.run_id))
        answers = await asyncio.gather(*calls)
        requested = asking and bool(answers[-1])
        if requested and not self.cancel_requested:
            self.cancel_requested = True
            if self.on_cancel is not None:
                self.on_cancel()

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


class _Interruptible:
    """Iterates the agent's events in the stream's own task, and lets a cancel request stop it
    wherever it waits (on the model, on a tool): the waiting step is cancelled, which is how a
    read in flight is abandoned; a confirmed write records its outcome on the way out."""

    def __init__(self, events: AsyncGenerator[ChatEvent], writer: _EventWriter) -> None:
        self.events, self.writer = events, writer
        self.stopped = False
        self._task = asyncio.current_task()
        self._waiting = False
        self._interrupting = False
        writer.on_cancel = self._interrupt

    def _interrupt(self) -> None:
        if self._waiting and self._task is not None:
            self._interrupting = True
            self._task.cancel()

    async def __aiter__(self) -> AsyncIterator[ChatEvent]:
        while not self.writer.cancel_requested:
            self._waiting = True
            try:
                event = await anext(self.events)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if not self._interrupting or self._task is None:
                    raise
                self._task.uncancel()
                break
            finally:
                self._waiting = False
            yield event
        self.stopped = True


class _JournaledCall:
    """A confirmed call's journal on its confirmation record (the `ConfirmedCall` the agent's
    middleware uses), writing the call's one audit record when its outcome is recorded."""

    def __init__(
        self,
        confirmations: ConfirmationStore,
        audit: AuditSink,
        confirmation: Confirmation,
        conversation: Conversation,
    ) -> None:
        self.confirmations, self.audit = confirmations, audit
        self.confirmation, self.conversation = confirmation, conversation

    @property
    def tool_call_id(self) -> str:
        return self.confirmation.tool_call_id

    @property
    def fingerprint(self) -> str:
        """The call this confirmation runs: the card's, or the edit the card was answered with
        (as the item keeps it: a settling access after a crash audits the same)."""
        edit = self.confirmation.edit
        return edit.fingerprint if edit else self.confirmation.fingerprint

    async def started(self) -> bool:
        return await self.confirmations.record_execution(
            self.confirmation.confirmation_id, ExecutionState.STARTED
        )

    async def finished(self, outcome: ExecutionState) -> None:
        await self.record(outcome)

    async def record(self, outcome: ExecutionState) -> bool:
        """Records `outcome` if it may follow the current state; audits it when it does."""
        confirmation = self.confirmation
        if not await self.confirmations.record_execution(confirmation.confirmation_id, outcome):
            return False
        kind, result = OUTCOME_AUDIT[outcome]
        self.audit.emit(
            AuditRecord(
                kind,
                self.conversation.owner,
                result,
                self.conversation.conversation_id,
                {
                    "tool": confirmation.tool,
                    "tool_call_id": confirmation.tool_call_id,
                    "confirmation_id": confirmation.confirmation_id,
                    "fingerprint": confirmation.fingerprint,
                }
                | _edit_detail(confirmation.edit),
            )
        )
        return True


def _edit_detail(edit: ConfirmationEdit | None) -> dict[str, Any]:
    """What an audit record says of the edit a card was answered with (nothing without one)."""
    if edit is None:
        return {}
    return {
        "edited_fingerprint": edit.fingerprint,
        "edited_by": edit.edited_by,
        "edited_args_hash": args_hash(edit.edited_args),
    }


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
        outputs: BlobStore,
        attachments: ChatAttachments,
    ) -> None:
        """`outputs` keeps tool outputs too large for a history item whole; `attachments`
        checks and keeps the files messages attach."""
        self.attachments = attachments
        self.prefetch_timeout_s = prefetch_timeout_s
        self.outputs = outputs
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
        role: Role | None = None,
        edited_args: dict[str, Any] | None = None,
        rules: ThreadRules = CHAT_THREADS,
        attachments: list[CheckedFile] | None = None,
        context: AgentRunContext | None = None,
    ) -> PreparedTurn:
        """Every check that decides the HTTP status, and the lock. Writes nothing on refusal.
        `attachments`, a new message's files, were checked before; `context` is the run's (a
        confirm reads the card's plan again as this user; without it, the plan is not read)."""
        files = list(attachments or [])
        run_id = uuid.uuid4().hex
        if conversation_id is None or (
            rules.created_on_first_use
            and action is None
            and await self.store.get(conversation_id) is None
        ):
            title = title_from(message or " ".join(file.info.name for file in files))
            return await self._start_new(
                conversation_id or uuid.uuid4().hex,
                owner=owner,
                title=title,
                ui_context=ui_context,
                run_id=run_id,
                message=message,
                attachments=files,
            )
        if action in DECISIONS:
            answer = CardAnswer(action, confirmation_id, role, edited_args or {})
            return await self._prepare_answer(
                conversation_id, owner, answer, run_id, rules, context=context
            )
        asked = Conversation.asked_for(conversation_id, owner, ui_context)
        if action == "resume" or rules.new_input_refused_while_a_card_waits:
            conversation = await self.store.get_owned(conversation_id, owner)
            if action == "resume":
                return PreparedTurn(conversation, action, None, run_id, resume_after=resume_after)
            if conversation.is_archived:
                raise ConversationArchived(conversation_id)
            await self._refuse_while_a_card_waits(conversation)
        # The lock refuses another user's or a missing conversation (404), an archived one and
        # one another run holds (409) from the record as it is at that write
        held = await self.store.start_turn(asked, run_id, self.lease_s, new=False)
        return PreparedTurn(held, action, message, run_id, attachments=files)

    async def _prepare_answer(
        self,
        conversation_id: str,
        owner: str,
        answer: CardAnswer,
        run_id: str,
        rules: ThreadRules,
        *,
        context: AgentRunContext | None,
    ) -> PreparedTurn:
        """A confirm, deny or edit: the card it answers checked, the lock taken, the card's plan
        read again (a confirm runs only while the world is as the card showed it), the card
        decided. Three reads side by side, none waiting for another: the card, the lock's
        write, and the call the checkpoint waits on. The card's refusals come first (another
        user's card is a 403 whoever's the conversation is), then the lock's, then the
        checkpoint's (the card's call must be the one waiting). That checkpoint read is not
        the run's: it was made before the lock, so the run, after `confirm_resolved`, reads
        again under it (and the call that runs is checked against the card once more). A
        refusal after the lock gives it back as it was: nothing is written. An answer leaves
        the conversation's page as it is (the card keeps the page it was made on)."""
        asked = Conversation.asked_for(conversation_id, owner, None)
        agent = self._agent_factory()
        card, lock, waiting = await asyncio.gather(
            self.confirmations.get(answer.confirmation_id) if answer.confirmation_id else _none(),
            self.store.start_turn(asked, run_id, self.lease_s, new=False),
            agent.pending_confirmation(conversation_id),
            return_exceptions=True,
        )
        held = lock if isinstance(lock, Conversation) else None
        try:
            confirmation = self._answerable(_outcome(card), answer, conversation_id, owner, rules)
            conversation = _outcome(lock)
            pending = self._waiting_call(agent, confirmation, answer, _outcome(waiting))
            edit = None
            if answer.action == "edit" and not confirmation.expired(time.time()):
                edit = self._edit(pending, answer.edited_args, answer.role, owner)
            stale = None
            if answer.action == "confirm" and context is not None:
                stale = await self._stale_plan(agent, confirmation, pending, context)
        except BaseException:
            if held is not None:
                await self._give_back(held, run_id)
            raise
        turn = PreparedTurn(
            conversation, answer.action, None, run_id, confirmation=confirmation, pending=pending
        )
        return await self._answer_card(turn, confirmation, edit, stale)

    @staticmethod
    async def _stale_plan(
        agent: ChatAgent,
        confirmation: Confirmation,
        pending: PendingConfirmation,
        context: AgentRunContext,
    ) -> ChangePlan | None:
        """The plan as it reads now, when it is not the one the card showed (None: it is, or
        the card showed none to hold it to). A plan that cannot be read again cannot be held
        to the card either: it is stale too, and the next card says why."""
        shown = (confirmation.plan or {}).get("digest")
        if shown is None or confirmation.expired(time.time()):
            return None
        current = await agent.plan(pending, context)
        if current is not None and current.digest == shown:
            return None
        return current or ChangePlan("", unread="план изменения больше не объявлен")

    async def _give_back(self, held: Conversation, run_id: str) -> None:
        """Releases a lock taken for a turn that was refused, leaving the record as it was."""
        await self.store.finish_turn(held.conversation_id, run_id, held.last_seq, held.updated_at)

    async def _start_new(
        self,
        conversation_id: str,
        *,
        owner: str,
        title: str,
        ui_context: dict[str, Any] | None,
        run_id: str,
        message: str | None,
        attachments: list[CheckedFile],
    ) -> PreparedTurn:
        at = now_iso()
        fresh = Conversation(conversation_id, owner, title, at, at, ui_context=ui_context)
        held = await self.store.start_turn(fresh, run_id, self.lease_s, new=True)
        return PreparedTurn(held, None, message, run_id, attachments=attachments)

    async def _refuse_while_a_card_waits(self, conversation: Conversation) -> None:
        """CardWaits when the conversation has a card that can still be answered."""
        waiting = conversation.pending_confirmation_id
        confirmation = await self.confirmations.get(waiting) if waiting else None
        if confirmation is not None and confirmation.settlement(time.time()) is Settlement.CANCEL:
            raise CardWaits(confirmation)

    async def _answer_card(
        self,
        turn: PreparedTurn,
        confirmation: Confirmation,
        edit: ConfirmationEdit | None,
        stale: ChangePlan | None = None,
    ) -> PreparedTurn:
        """Decides `confirmation`, the card `turn` answers (once), under the lock `turn` holds;
        a confirm whose plan is `stale` decides it as such (nothing runs, a new card asks)."""
        wanted = ConfirmationStatus.DENIED
        if stale is not None:
            wanted = ConfirmationStatus.STALE
        elif turn.action == "confirm" or (edit is not None and not edit.asks_again):
            wanted = ConfirmationStatus.CONFIRMED
        elif edit is not None:
            wanted = ConfirmationStatus.SUPERSEDED
        conversation = turn.conversation
        try:
            turn.result, decided = await self._decide(confirmation, conversation, wanted, edit)
        except BaseException:
            await self.store.finish_turn(
                conversation.conversation_id, turn.run_id, conversation.last_seq, now_iso()
            )
            raise
        turn.confirmation = decided
        if edit is not None and turn.result is not ConfirmationResult.EXPIRED:
            self._audit_edit(confirmation, edit, turn.result)
        if stale is not None and turn.result is ConfirmationResult.STALE:
            self._audit_stale(confirmation, stale)
        return turn

    def _audit_stale(self, confirmation: Confirmation, current: ChangePlan) -> None:
        """A confirm that ran nothing because the world changed since its card: both plans."""
        shown = confirmation.plan or {}
        self.audit.emit(
            AuditRecord(
                AuditKind.CONFIRMATION_DECIDED,
                confirmation.user,
                "stale",
                confirmation.conversation_id,
                {
                    "tool": confirmation.tool,
                    "tool_call_id": confirmation.tool_call_id,
                    "confirmation_id": confirmation.confirmation_id,
                    "fingerprint": confirmation.fingerprint,
                    "shown_plan": {"digest": shown.get("digest"), "lines": shown.get("lines")},
                    "current_plan": {"digest": current.digest, "lines": list(current.lines)},
                },
            )
        )

    def _edit(
        self,
        pending: PendingConfirmation,
        edited_args: dict[str, Any],
        role: Role | None,
        owner: str,
    ) -> ConfirmationEdit:
        """The card's call with `edited_args`, checked as a call of its own where the card was
        made: arguments the tool takes (InvalidEdit), a call the user may make now
        (ConfirmationNotPermitted), and whether the card's approval covers it."""
        agent = self._agent_factory()
        try:
            decision, arguments = agent.decide_edit(pending, edited_args, role)
        except InvalidToolCall as invalid:
            if invalid.code is ErrorCode.FORBIDDEN:
                raise ConfirmationNotPermitted(
                    f"{pending.tool} is not available on the card's page; nothing was run."
                ) from None
            raise InvalidEdit(f"{invalid.tool}: {invalid.detail}") from None
        if not decision.permission.allowed:
            raise ConfirmationNotPermitted(
                f"Недостаточно прав: «{tool_label(pending.tool)}» с этими аргументами требует роль "
                f"{decision.permission.required_role}; ничего не выполнено."
            )
        spec = agent.policy.catalog.get(pending.tool)
        return ConfirmationEdit(
            edited_args=arguments,
            fingerprint=card_fingerprint(pending.tool, arguments, decision.to_payload()),
            asks_again=edit_asks_again(spec, pending.args, pending.decision, arguments, decision),
            edited_by=owner,
        )

    def _audit_edit(
        self, confirmation: Confirmation, edit: ConfirmationEdit, result: ConfirmationResult
    ) -> None:
        """The decision to run an edited call, or to ask again for it, with both fingerprints."""
        self.audit.emit(
            AuditRecord(
                AuditKind.CONFIRMATION_DECIDED,
                edit.edited_by,
                "edited" if result is ConfirmationResult.CONFIRMED else "edit_asks_again",
                confirmation.conversation_id,
                {
                    "tool": confirmation.tool,
                    "tool_call_id": confirmation.tool_call_id,
                    "confirmation_id": confirmation.confirmation_id,
                    "fingerprint": confirmation.fingerprint,
                }
                | _edit_detail(edit),
            )
        )

    @staticmethod
    def _answerable(
        confirmation: Confirmation | None,
        answer: CardAnswer,
        conversation_id: str,
        owner: str,
        rules: ThreadRules,
    ) -> Confirmation:
        """The confirmation an answer names, if it is this conversation's, the user's and not
        decided yet (and, where the rules say so, not expired)."""
        if confirmation is None or confirmation.conversation_id != conversation_id:
            raise ConfirmationNotFound(answer.confirmation_id or "")
        if confirmation.user != owner:
            raise ConfirmationForbidden(confirmation.confirmation_id)
        if confirmation.status in (
            ConfirmationStatus.CONFIRMED,
            ConfirmationStatus.DENIED,
            ConfirmationStatus.CANCELLED,
            ConfirmationStatus.SUPERSEDED,
        ):
            raise ConfirmationDecided(confirmation.confirmation_id)
        if rules.an_expired_card_refuses_answers and confirmation.expired(time.time()):
            raise ConfirmationExpired(confirmation.confirmation_id)
        return confirmation

    @staticmethod
    def _waiting_call(
        agent: ChatAgent,
        confirmation: Confirmation,
        answer: CardAnswer,
        pending: PendingConfirmation | None,
    ) -> PendingConfirmation:
        """The call the checkpoint waits on, if it is the card's; for a confirm, also that the
        user may still make that call."""
        expired = confirmation.expired(time.time())
        if pending is None or pending.fingerprint != confirmation.fingerprint:
            if expired:  # the expiry was told already (or is being told by another click)
                raise ConfirmationExpired(confirmation.confirmation_id)
            raise NoPendingConfirmationError(confirmation.conversation_id)
        if answer.action == "confirm" and answer.role is not None and not expired:
            permission = agent.permission_for(pending, answer.role)
            if not permission.allowed:
                raise ConfirmationNotPermitted(
                    f"Недостаточно прав: {pending.tool} требует роль "
                    f"{permission.required_role}; ничего не выполнено."
                )
        return pending

    async def _decide(
        self,
        confirmation: Confirmation,
        conversation: Conversation,
        wanted: ConfirmationStatus,
        edit: ConfirmationEdit | None,
    ) -> tuple[ConfirmationResult, Confirmation]:
        """Moves the confirmation out of pending exactly once (with the edit it was answered
        with, in the same write: durable before anything can run) and hands its token back;
        the result, and the card as decided.

        The conversation keeps naming the card until the resumed run closes the call in the
        checkpoint: if that run is interrupted, the next access settles the card truthfully.
        `conversation` was read under the lock: the card it still waits on tells whether an expired
        card resolves as expired once (that answer streams `confirm_resolved(expired)`); once
        told, it is ConfirmationExpired (409), never a second resume of a settled call."""
        decided = await self.confirmations.decide(
            confirmation.confirmation_id, conversation.owner, wanted, edit
        )
        if decided.status is not wanted:  # it expired first: nothing runs
            if conversation.pending_confirmation_id != confirmation.confirmation_id:
                raise ConfirmationExpired(confirmation.confirmation_id)
            return ConfirmationResult.EXPIRED, decided
        result = DECIDED_AS[wanted]
        if decided.task_token and not await self.workflow.hand_back(decided.task_token, result):
            if (
                wanted is ConfirmationStatus.CONFIRMED
            ):  # the timer won after all: the call will not run, and says so once
                await _JournaledCall(self.confirmations, self.audit, decided, conversation).record(
                    ExecutionState.NOT_RUN
                )
            return ConfirmationResult.EXPIRED, decided
        return result, decided

    async def _events(
        self, turn: PreparedTurn, context: AgentRunContext
    ) -> AsyncGenerator[ChatEvent]:
        agent = self._agent_factory()
        # The turn holds the conversation's lock: its checkpoint is read once for all it asks
        with agent.holding(turn.conversation.conversation_id, self.lease_s):
            async for event in self._agent_events(turn, context, agent):
                yield event

    async def _agent_events(
        self, turn: PreparedTurn, context: AgentRunContext, agent: ChatAgent
    ) -> AsyncGenerator[ChatEvent]:
        conversation_id = turn.conversation.conversation_id
        if turn.result is not None and turn.confirmation is not None:
            if turn.result is ConfirmationResult.CONFIRMED:
                turn.journaled.add(turn.confirmation.tool_call_id)
                journal = self._journal(turn, turn.confirmation)
                context = replace(context, confirmed_call=journal)
            failed = False
            resolving = agent.resolve(
                conversation_id, turn.result, context, turn.pending, turn.edited_args
            )
            async for event in resolving:
                failed = failed or isinstance(event, ErrorEvent)
                yield await self._held(turn, event, agent, context)
            # A run that ended on its own closed the call in the checkpoint: the card is done.
            # One that failed may not have; the next access settles it with the journal's truth.
            if not failed:
                await self.store.clear_pending_confirmation(
                    conversation_id, turn.confirmation.confirmation_id
                )
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
        routing = await agent.route(message, context, conversation_id)
        if routing is not None:
            context = replace(context, routing=routing)
            self._record_routing(turn, routing, context)
            yield ToolsRouted(routing.to_record())
        files = [file.model for file in turn.attachments]
        async for event in agent.send(conversation_id, message, context, files):
            yield await self._held(turn, event, agent, context)

    async def _settle_confirmation(
        self, turn: PreparedTurn, agent: ChatAgent, context: AgentRunContext
    ) -> AsyncGenerator[ChatEvent]:
        """Before a new message, the card the conversation still has open is settled: an
        undecided one is cancelled by the message (the agent says so), a denied or expired one
        resolves as rejected, and a confirmed call whose run was interrupted is closed with
        the truth about it (not run, done, failed, or status unknown)."""
        conversation_id = turn.conversation.conversation_id
        waiting = turn.conversation.pending_confirmation_id
        if waiting is None:
            return
        confirmation = await self.confirmations.get(waiting)
        pending = await agent.pending_confirmation(conversation_id)
        if (
            confirmation is not None
            and pending is not None
            and pending.fingerprint == confirmation.fingerprint
        ):
            match confirmation.settlement(time.time()):
                case Settlement.CANCEL:
                    await self._cancel(confirmation, turn.conversation.owner)
                case Settlement.REJECT:
                    result = REJECTED_AS[confirmation.status]
                    async for event in agent.resolve(conversation_id, result, context, pending):
                        yield await self._held(turn, event, agent, context)
                case Settlement.REPORT:
                    outcome = await self._settle_outcome(turn, confirmation)
                    turn.journaled.add(pending.tool_call_id)
                    closed = await agent.close_interrupted(
                        conversation_id, pending, outcome, confirmation.edited_args
                    )
                    for event in closed:
                        yield event
        await self.store.clear_pending_confirmation(conversation_id, waiting)

    async def _settle_outcome(
        self, turn: PreparedTurn, confirmation: Confirmation
    ) -> ExecutionState:
        """A confirmed call with no recorded outcome is given one: not run if it never
        started, unknown if it did (and the journal's audit record says so, once)."""
        outcome = confirmation.interrupted_outcome
        if outcome is not confirmation.execution:
            journal = self._journal(turn, confirmation)
            if outcome is ExecutionState.NOT_RUN:
                if not await journal.record(outcome):  # it started meanwhile: ask again
                    current = await self.confirmations.get(confirmation.confirmation_id)
                    return current.interrupted_outcome if current else outcome
            else:
                await journal.finished(outcome)
        return outcome

    def _journal(self, turn: PreparedTurn, confirmation: Confirmation) -> _JournaledCall:
        return _JournaledCall(self.confirmations, self.audit, confirmation, turn.conversation)

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

    async def _held(
        self, turn: PreparedTurn, event: ChatEvent, agent: ChatAgent, context: AgentRunContext
    ) -> ChatEvent:
        """A confirmation card gets the plan of its change (read now, before anyone sees the
        card), its pending item and its Step Functions execution."""
        if not isinstance(event, ConfirmRequired):
            return event
        decision = event.decision
        shown = ConfirmationInterrupt(
            event.tool_call_id, event.tool or "", event.tool_input, decision
        )
        plan = await agent.plan(shown, context)
        shown_plan = plan.to_payload() if plan is not None else None
        confirmation = Confirmation(
            confirmation_id=uuid.uuid4().hex,
            conversation_id=turn.conversation.conversation_id,
            user=turn.conversation.owner,
            tool_call_id=event.tool_call_id,
            tool=str(decision.get("tool", "")),
            fingerprint=card_fingerprint(str(decision.get("tool", "")), event.tool_input, decision),
            risk=str(decision.get("risk", "")),
            status=ConfirmationStatus.PENDING,
            expires_at=time.time() + self.confirmation_timeout_s,
            plan=shown_plan,
        )
        await self.confirmations.create(confirmation)
        await self.workflow.start(confirmation, self.confirmation_timeout_s)
        await self.store.set_pending_confirmation(
            confirmation.conversation_id, confirmation.confirmation_id
        )
        return event.held_as(confirmation.confirmation_id, confirmation.expires_iso, shown_plan)

    async def stream(
        self,
        turn: PreparedTurn,
        context: AgentRunContext,
        events: AsyncGenerator[ChatEvent] | None = None,
    ) -> AsyncGenerator[tuple[str | None, ChatEvent]]:
        """The turn's events with their SSE ids (None for a Notice, which is not stored);
        stores events, history, and releases the lock. `events` replaces the agent's run (a
        card closed without one: its expiry)."""
        conversation_id = turn.conversation.conversation_id
        events = events if events is not None else self._events(turn, context)
        ledger = _TurnLedger(
            turn,
            events,
            self.store,
            lease_s=self.lease_s,
            attachments=self.attachments,
            audit=self._audit,
        )
        numbered = ledger.number
        keeper = ToolOutputKeeper(self.outputs, conversation_id)
        try:
            try:
                run = _Interruptible(events, ledger.writer)
                async for event in run:
                    if isinstance(event, Notice):
                        yield None, event
                        continue
                    kept = await keeper.keep(event)
                    yield numbered(kept.live, kept.stored)
                    if kept.failed:
                        yield numbered(kept.failure())
                        break
                if run.stopped:
                    turn.stopped = True
                    await events.aclose()  # the journal's shielded writes are done after this
                    for event in await self._abandoned(turn, ledger.recorder):
                        yield numbered(event)
                    yield numbered(Text(STOPPED_TEXT))
            except Exception:
                logger.exception("chat turn failed")
                yield numbered(ErrorEvent(ErrorCode.INTERNAL_ERROR, "Внутренняя ошибка чата."))
            ledger.finished = True
            end = numbered(ledger.end())
            # stream_end says the turn is over: its history is stored and the conversation free
            # when the client reads it (the page lets a card be answered at once, not with 409).
            await ledger.settle()
            yield end
        finally:
            await ledger.settle()

    async def _abandoned(self, turn: PreparedTurn, recorder: TurnRecorder) -> list[ChatEvent]:
        """What the user is told of the calls a cancel stopped in flight: of a confirmed call,
        what its journal says (it may have changed something); any other call is a read, and
        was dropped."""
        events: list[ChatEvent] = []
        for call_id, call in recorder.tool_calls.items():
            if call.get("status") == "started" and call_id not in turn.journaled:
                tool = str(call.get("tool", ""))
                text = abandoned_read_text(tool)
                events.append(ToolError(tool, text, call_id, ErrorCode.TOOL_NOT_RUN))
        confirmed = turn.confirmation
        closed = recorder.tool_calls.get(confirmed.tool_call_id, {}) if confirmed else {}
        resumed = turn.result is ConfirmationResult.CONFIRMED
        if confirmed is not None and resumed and closed.get("status") in (None, "started"):
            current = await self.confirmations.get(confirmed.confirmation_id) or confirmed
            events += interrupted_call_events(
                confirmed.tool,
                confirmed.tool_call_id,
                current.interrupted_outcome,
                turn.pending.args if turn.pending else None,
                current.edited_args,
            )
        return events

    def _audit(self, turn: PreparedTurn, event: ChatEvent, recorder: TurnRecorder) -> None:
        """Tool calls, denials and confirmation requests go to the audit log as they happen
        (a confirmed call's outcome is audited by its journal, once)."""
        if not isinstance(event, AUDITED_EVENTS) or event.tool_call_id in turn.journaled:
            return
        call = recorder.tool_calls.get(event.tool_call_id, {})
        shown = event.tool_input if isinstance(event, ConfirmRequired) else {}
        detail = {
            "tool": event.tool or None,
            "tool_call_id": event.tool_call_id,
            "args_hash": args_hash(call.get("input") or shown),
        }
        match event:
            case ToolError():
                detail["code"] = event.code
            case PermissionDenied():
                detail["required_role"] = event.required_role
            case ConfirmRequired():
                detail |= {
                    "confirmation_id": event.confirmation_id,
                    "risk": event.decision.get("risk"),
                    "environment": event.decision.get("environment"),
                }
        audit_kind, outcome = AUDITED[event.type]
        self.audit.emit(
            AuditRecord(
                audit_kind,
                turn.conversation.owner,
                outcome,
                turn.conversation.conversation_id,
                detail,
            )
        )

    async def follow(
        self, turn: PreparedTurn, *, limit_s: float = FOLLOW_LIMIT_S
    ) -> AsyncIterator[tuple[str | None, ChatEvent]]:
        """Replays events after `turn.resume_after`, following a run still in progress; then
        re-emits a pending confirmation the client has not seen, or says what became of a
        confirmed call; and ends with `stream_end`, as every stream does.

        Replayed events keep their stored ids. What is said anew here is no stored event: it has
        no id (None), so a client that drops events by an id it has seen still shows it, and its
        resume point never moves past events it did not get."""
        conversation_id = turn.conversation.conversation_id
        seq, deadline = turn.resume_after, time.monotonic() + limit_s
        replayed_cards: set[str] = set()
        ended = False
        while True:
            # The state first, then the events: a run stores all its events before it lets go
            # of the conversation, so once it reads as ended, the read after it has them all.
            current = await self.store.get(conversation_id)
            running = current is not None and current.is_running(time.time())
            for stored_seq, wire in await self.store.events_after(conversation_id, seq):
                seq = stored_seq
                event = ChatEvent.from_wire(wire)
                if isinstance(event, ConfirmRequired) and event.confirmation_id:
                    replayed_cards.add(event.confirmation_id)
                ended = isinstance(event, StreamEnd)
                yield event_id(conversation_id, seq), event
            if not running or time.monotonic() > deadline:
                break
            await asyncio.sleep(FOLLOW_POLL_S)
        said = await self._open_card(current, replayed_cards)
        for event in said:
            yield None, event
        if said or not ended:
            # A replay writes no messages: its end names none.
            yield None, StreamEnd(conversation_id, None, None)

    async def _open_card(
        self, conversation: Conversation | None, replayed: set[str]
    ) -> list[ChatEvent]:
        """For a reconnect: the card still waiting for a decision, with its id, unless the
        replay showed it; for a confirmed call whose run was interrupted, what is known of it;
        for a card decided against (or expired, or superseded by an edit) whose run never
        resolved it, that nothing ran — always (a replayed card may be spent). Never a card
        that cannot be answered."""
        waiting = conversation.pending_confirmation_id if conversation else None
        confirmation = await self.confirmations.get(waiting) if waiting else None
        if conversation is None or confirmation is None:
            return []
        agent = self._agent_factory()
        pending = await agent.pending_confirmation(conversation.conversation_id)
        if pending is None:
            return []
        if pending.fingerprint != confirmation.fingerprint:
            # An edit superseded the card and its run stopped before the new card was held:
            # the edited call waits on a card nobody saw, and nothing ran.
            if confirmation.status is not ConfirmationStatus.SUPERSEDED:
                return []
            return [Text(unshown_card_text(pending.tool, pending.args, confirmation.edited_args))]
        said: list[ChatEvent] = []
        match confirmation.settlement(time.time()):
            case Settlement.CANCEL if confirmation.confirmation_id not in replayed:
                card = agent.card_of(conversation.conversation_id, pending)
                said.append(
                    card.held_as(
                        confirmation.confirmation_id, confirmation.expires_iso, confirmation.plan
                    )
                )
            case Settlement.REPORT:
                outcome = confirmation.interrupted_outcome
                said.append(
                    Text(
                        outcome_text(pending.tool, outcome, pending.args, confirmation.edited_args)
                    )
                )
            case Settlement.REJECT:
                # Decided against (or expired), and the run that resolves it never got there
                if confirmation.status is ConfirmationStatus.SUPERSEDED:
                    # The edit asked again, and the run stopped before its card was held
                    edited = confirmation.edited_args
                    said.append(Text(unshown_card_text(pending.tool, pending.args, edited)))
                else:
                    # A stale card's run stopped before its new card was held: it says so
                    # (not «отменено новым сообщением», which no message did)
                    stale = confirmation.status is ConfirmationStatus.STALE
                    result = ConfirmationResult.STALE if stale else REJECTED_AS[confirmation.status]
                    said.append(Text(cancellation_text(pending.tool, result, pending.args)))
        return said
