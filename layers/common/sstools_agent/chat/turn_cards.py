"""A turn's cards: a new card held (its plan read before anyone sees it, its pending record and
its timer started), and, before a new message, the card the conversation still has open settled
(cancelled by the message, resolved as rejected, or a confirmed call told as it ended)."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncGenerator
from typing import Final

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.interrupts import ConfirmationInterrupt
from sstools_agent.agent.runtime import ChatAgent
from sstools_agent.chat.confirmation_journal import ConfirmationJournals
from sstools_agent.chat.prepared_turn import PreparedTurn
from sstools_agent.domain.chat_events import ChatEvent, ConfirmationResult, ConfirmRequired
from sstools_agent.domain.confirmations import (
    Confirmation,
    ConfirmationDecided,
    ConfirmationStatus,
    ExecutionState,
    Settlement,
    card_fingerprint,
)
from sstools_agent.domain.ports import (
    ConfirmationStore,
    ConfirmationWorkflow,
    ConversationStore,
)

# A card that is not confirmed any more resolves as this when the next access finds it.
REJECTED_AS: Final = {
    ConfirmationStatus.DENIED: ConfirmationResult.DENIED,
    ConfirmationStatus.CANCELLED: ConfirmationResult.CANCELLED,
    ConfirmationStatus.EXPIRED: ConfirmationResult.EXPIRED,
    ConfirmationStatus.SUPERSEDED: ConfirmationResult.SUPERSEDED,
    # Its new card was never held (the run stopped first): the call is not run
    ConfirmationStatus.STALE: ConfirmationResult.CANCELLED,
    ConfirmationStatus.PENDING: ConfirmationResult.EXPIRED,  # pending past its time
    ConfirmationStatus.AWAITING_APPROVAL: ConfirmationResult.EXPIRED,  # (its second approval's)
}


class TurnCards:
    """Holds the cards a turn shows and settles the one a new message finds open."""

    def __init__(
        self,
        store: ConversationStore,
        confirmations: ConfirmationStore,
        workflow: ConfirmationWorkflow,
        journals: ConfirmationJournals,
        *,
        timeout_s: int,
    ) -> None:
        self.store, self.confirmations, self.workflow = store, confirmations, workflow
        self.journals, self.timeout_s = journals, timeout_s

    async def hold(
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
            expires_at=time.time() + self.timeout_s,
            plan=shown_plan,
            approvers=int(decision.get("approvers", 1)),
            card={
                "args": event.tool_input,
                "decision": decision,
                "ui_context": context.ui_context.to_payload() if context.ui_context else None,
            },
        )
        await self.confirmations.create(confirmation)
        await self.workflow.start(confirmation, self.timeout_s)
        await self.store.set_pending_confirmation(
            confirmation.conversation_id, confirmation.confirmation_id
        )
        return event.answerable_as(
            confirmation.confirmation_id, confirmation.expires_iso, shown_plan
        )

    async def settle_before_message(
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
                        yield await self.hold(turn, event, agent, context)
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
            journal = self.journals.of(confirmation, turn.conversation)
            if outcome is ExecutionState.NOT_RUN:
                if not await journal.record(outcome):  # it started meanwhile: ask again
                    current = await self.confirmations.get(confirmation.confirmation_id)
                    return current.interrupted_outcome if current else outcome
            else:
                await journal.finished(outcome)
        return outcome

    async def _cancel(self, confirmation: Confirmation, owner: str) -> None:
        """The card cancelled by a new message, its token handed back (once: a card decided
        meanwhile stays as it was decided)."""
        with contextlib.suppress(ConfirmationDecided):
            decided = await self.confirmations.decide(
                confirmation.confirmation_id, owner, ConfirmationStatus.CANCELLED
            )
            if decided.waiting_token:
                await self.workflow.hand_back(decided.waiting_token, ConfirmationResult.CANCELLED)
