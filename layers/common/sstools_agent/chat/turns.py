"""A chat turn from request to stored history: the application service behind the chat function.

`ChatTurns.prepare` checks everything that can fail before the stream starts (conversation owner,
archive, pending confirmation, the per-conversation lock) so those failures are plain HTTP errors;
`ChatTurns.stream` then runs the agent and gives every event an increasing sequence number, stores
events in chunks for replay, stores the history, and always releases the lock, even when the client
goes away mid-stream. `ChatTurns.replay` replays what a reconnecting client missed.

The turn's parts each have a module: its state (`prepared_turn`), answering a card
(`card_answers`), holding and settling cards (`turn_cards`), a confirmed call's journal
(`confirmation_journal`), the event log (`event_log`), what the turn leaves (`turn_ledger`), the
audit trail (`turn_audit`) and replay (`replay`).
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import replace
from typing import Any, Final

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.runtime import ChatAgent, interrupted_call_events
from sstools_agent.chat.attachments import ChatAttachments, CheckedFile
from sstools_agent.chat.card_answers import CardAnswer, CardAnswers
from sstools_agent.chat.confirmation_journal import ConfirmationJournals
from sstools_agent.chat.prepared_turn import (
    CHAT_THREADS,
    DECISIONS,
    READ_AGAIN,
    Action,
    PreparedTurn,
    ThreadRules,
)
from sstools_agent.chat.replay import REPLAY_LIMIT_S, TurnReplay
from sstools_agent.chat.stoppable_run import StoppableRun
from sstools_agent.chat.tool_outputs import ToolOutputKeeper
from sstools_agent.chat.turn_audit import TurnAudit
from sstools_agent.chat.turn_cards import TurnCards
from sstools_agent.chat.turn_ledger import TurnLedger
from sstools_agent.domain.approvals import DEFAULT_APPROVAL_TIMEOUT_S, awaiting_text
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmationResult,
    ConfirmResolved,
    ErrorEvent,
    Notice,
    Text,
    ToolError,
    ToolsRouted,
)
from sstools_agent.domain.confirmation_outcomes import abandoned_read_text
from sstools_agent.domain.confirmations import (
    DEFAULT_CONFIRMATION_TIMEOUT_S,
    CardWaits,
    Settlement,
)
from sstools_agent.domain.conversations import (
    Conversation,
    ConversationArchived,
    NotRunning,
    TurnRecorder,
    title_from,
)
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.ports import (
    AuditSink,
    BlobStore,
    ConfirmationStore,
    ConfirmationWorkflow,
    ConversationStore,
)
from sstools_agent.domain.read_retries import (
    FailedCall,
    failed_call,
    refuse_unless_failed,
    status_check_of,
)
from sstools_agent.domain.roles import Role
from sstools_agent.settings import DEFAULT_PREFETCH_TIMEOUT_S

logger = logging.getLogger(__name__)

DEFAULT_LEASE_S: Final = 120.0
STOPPED_TEXT: Final = "Генерация остановлена по запросу; ход сохранён до этого места."


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
        approval_timeout_s: int = DEFAULT_APPROVAL_TIMEOUT_S,
        prefetch_timeout_s: float = DEFAULT_PREFETCH_TIMEOUT_S,
        outputs: BlobStore,
        attachments: ChatAttachments,
    ) -> None:
        """`outputs` keeps tool outputs too large for a history item whole; `attachments`
        checks and keeps the files messages attach."""
        self._agent_factory = agent_factory
        self.store, self.confirmations = store, confirmations
        self.lease_s, self.prefetch_timeout_s = lease_s, prefetch_timeout_s
        self.outputs, self.attachments = outputs, attachments
        self.audit = TurnAudit(audit)
        journals = ConfirmationJournals(confirmations, audit)
        self.answers = CardAnswers(
            agent_factory,
            store,
            confirmations,
            workflow,
            audit=self.audit,
            journals=journals,
            lease_s=lease_s,
            approval_timeout_s=approval_timeout_s,
        )
        self.cards = TurnCards(
            store, confirmations, workflow, journals, timeout_s=confirmation_timeout_s
        )
        self._replay = TurnReplay(agent_factory, store, confirmations)

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
        tool_call_id: str | None = None,
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
            return await self.answers.prepare(
                conversation_id, owner, answer, run_id, rules, context=context
            )
        if action in READ_AGAIN:
            return await self._read_again(
                conversation_id, owner, tool_call_id, role=role, run_id=run_id, action=action
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

    async def _read_again(
        self,
        conversation_id: str,
        owner: str,
        tool_call_id: str | None,
        *,
        role: Role | None,
        run_id: str,
        action: Action,
    ) -> PreparedTurn:
        """A repeat of a failed read (`retry`) or the status check of a write whose answer
        never came (`check_status`): the caller's conversation (404 for another's), not
        archived, no card waiting, the call one of its calls that failed (RetryNotFound,
        RetryRefused), what runs a read; then the lock. Writes nothing on refusal."""
        conversation = await self.store.get_owned(conversation_id, owner)
        if conversation.is_archived:
            raise ConversationArchived(conversation_id)
        await self._refuse_while_a_card_waits(conversation)
        call = failed_call(await self.store.messages(conversation_id), tool_call_id or "")
        agent = self._agent_factory()
        if action == "retry":
            agent.check_read(call, role)  # a write is refused as such, whatever its code
            refuse_unless_failed(call)
        else:
            agent.check_read(status_check_of(call), role)
            call = status_check_of(call)
        # The conversation's page stays the last message's: a repeat runs in the call's own
        asked = Conversation.asked_for(conversation_id, owner, None)
        held = await self.store.start_turn(asked, run_id, self.lease_s, new=False)
        return PreparedTurn(held, action, None, run_id, retried=call)

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
        fresh = Conversation.started(conversation_id, owner, title, ui_context)
        held = await self.store.start_turn(fresh, run_id, self.lease_s, new=True)
        return PreparedTurn(held, None, message, run_id, attachments=attachments)

    async def _refuse_while_a_card_waits(self, conversation: Conversation) -> None:
        """CardWaits when the conversation has a card that can still be answered."""
        waiting = conversation.pending_confirmation_id
        confirmation = await self.confirmations.get(waiting) if waiting else None
        if confirmation is not None and confirmation.settlement(time.time()) is Settlement.CANCEL:
            raise CardWaits(confirmation)

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
        ledger = TurnLedger(
            turn,
            events,
            self.store,
            lease_s=self.lease_s,
            attachments=self.attachments,
            audit=functools.partial(self.audit.streamed, who=context.who),
        )
        numbered = ledger.number
        keeper = ToolOutputKeeper(self.outputs, conversation_id)
        try:
            try:
                run = StoppableRun(events, ledger.writer)
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

    async def _events(
        self, turn: PreparedTurn, context: AgentRunContext
    ) -> AsyncGenerator[ChatEvent]:
        agent = self._agent_factory()
        # The turn holds the conversation's lock: its checkpoint is read once for all it asks
        conversation_id = turn.conversation.conversation_id
        with agent.holding(conversation_id, self.lease_s):
            if turn.retried is None:
                events = self._agent_events(turn, context, agent)
            else:  # a repeat can meet a card too (a deployment that asks to confirm reads)
                events = self._held(turn, context, agent, turn.retried)
            async for event in events:
                yield event

    def answer_events(
        self, turn: PreparedTurn, context: AgentRunContext
    ) -> AsyncGenerator[ChatEvent]:
        """The run of a card decided outside this conversation's requests (its second
        approver): `turn` holds the lock and names the card and its decision."""
        return self._events(turn, context)

    async def _held(
        self, turn: PreparedTurn, context: AgentRunContext, agent: ChatAgent, call: FailedCall
    ) -> AsyncGenerator[ChatEvent]:
        """The repeat of the failed read `call`, its cards held as any turn's."""
        async for event in agent.retry_read(turn.conversation.conversation_id, call, context):
            yield await self.cards.hold(turn, event, agent, context)

    async def _answered(
        self, turn: PreparedTurn, context: AgentRunContext, agent: ChatAgent
    ) -> AsyncGenerator[ChatEvent]:
        """The run of a card's answer: the card's call resumed as decided (run once if
        confirmed), or, for the first of two approvals, nothing run and the card left open."""
        conversation_id = turn.conversation.conversation_id
        if turn.result in (None, ConfirmationResult.AWAITING_APPROVAL) or turn.confirmation is None:
            if turn.confirmation is not None:
                yield ConfirmResolved(ConfirmationResult.AWAITING_APPROVAL)
                yield Text(awaiting_text(turn.confirmation))
            return
        if turn.result is ConfirmationResult.CONFIRMED:
            turn.journaled.add(turn.confirmation.tool_call_id)
            journal = self.cards.journals.of(turn.confirmation, turn.conversation)
            context = replace(context, confirmed_call=journal)
        failed = False
        resolving = agent.resolve(
            conversation_id, turn.result, context, turn.pending, turn.edited_args
        )
        async for event in resolving:
            failed = failed or isinstance(event, ErrorEvent)
            yield await self.cards.hold(turn, event, agent, context)
        # A run that ended on its own closed the call in the checkpoint: the card is done.
        # One that failed may not have; the next access settles it with the journal's truth.
        if not failed:
            await self.store.clear_pending_confirmation(
                conversation_id, turn.confirmation.confirmation_id
            )

    async def _agent_events(
        self, turn: PreparedTurn, context: AgentRunContext, agent: ChatAgent
    ) -> AsyncGenerator[ChatEvent]:
        conversation_id = turn.conversation.conversation_id
        if turn.result is not None and turn.confirmation is not None:
            async for event in self._answered(turn, context, agent):
                yield event
            return
        # The page object's summary is read while the turn's own bookkeeping runs.
        prefetch = None
        if self.prefetch_timeout_s > 0:
            prefetch = asyncio.create_task(agent.prefetch(context, self.prefetch_timeout_s))
        try:
            async for event in self.cards.settle_before_message(turn, agent, context):
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
            self.audit.routed(turn, routing, context)
            yield ToolsRouted(routing.to_record())
        files = [file.model for file in turn.attachments]
        async for event in agent.send(conversation_id, message, context, files):
            yield await self.cards.hold(turn, event, agent, context)

    def replay(
        self, turn: PreparedTurn, *, limit_s: float = REPLAY_LIMIT_S
    ) -> AsyncIterator[tuple[str | None, ChatEvent]]:
        """What a reconnecting client missed after `turn.resume_after` (`chat.replay`)."""
        return self._replay.replay(turn, limit_s=limit_s)

    async def checked_files(self, owner: str, file_ids: list[str]) -> list[CheckedFile]:
        """A new message's files, checked before its turn opens (AttachmentRejected)."""
        return await self.attachments.checked(owner, file_ids)

    async def request_stop(self, conversation_id: str, owner: str) -> None:
        """Asks the run holding `conversation_id` (the owner's) to stop; NotRunning if none."""
        if not await self.store.request_cancel(conversation_id, owner):
            raise NotRunning(conversation_id)
