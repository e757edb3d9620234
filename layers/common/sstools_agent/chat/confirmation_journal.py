"""A confirmed call's journal on its confirmation record: the `ConfirmedCall` the agent's
middleware records the call's start and outcome in, so that whatever happens to the run, the
next access can tell the truth about it; each outcome is audited exactly once, when recorded."""

from __future__ import annotations

from typing import Final

from sstools_agent.chat.turn_audit import card_detail, edit_detail
from sstools_agent.domain.audit import AuditKind, AuditRecord
from sstools_agent.domain.confirmations import Confirmation, ExecutionState
from sstools_agent.domain.conversations import Conversation
from sstools_agent.domain.ports import AuditSink, ConfirmationStore

# How a confirmed call's journaled outcome reaches the audit log (exactly one per call).
OUTCOME_AUDIT: Final = {
    ExecutionState.SUCCEEDED: (AuditKind.TOOL_CALLED, "succeeded"),
    ExecutionState.FAILED: (AuditKind.TOOL_CALLED, "failed"),
    ExecutionState.UNKNOWN: (AuditKind.TOOL_OUTCOME_UNKNOWN, "unknown"),
    ExecutionState.NOT_RUN: (AuditKind.TOOL_NOT_RUN, "not_run"),
}


class ConfirmationJournal:
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
        """Records that the call starts; False when the journal may not move there (it ran or
        was told as not run already): the call must not run."""
        return await self.confirmations.record_execution(
            self.confirmation.confirmation_id, ExecutionState.STARTED
        )

    async def finished(self, outcome: ExecutionState) -> None:
        """Records how the call ended (once; audited when recorded)."""
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
                card_detail(confirmation) | edit_detail(confirmation.edit),
            )
        )
        return True


class ConfirmationJournals:
    """Opens the journal of a confirmed call: one home for where journals record (the
    confirmation store) and audit (the turn's audit sink)."""

    def __init__(self, confirmations: ConfirmationStore, audit: AuditSink) -> None:
        self.confirmations, self.audit = confirmations, audit

    def of(self, confirmation: Confirmation, conversation: Conversation) -> ConfirmationJournal:
        """The journal of `confirmation`'s call in `conversation`."""
        return ConfirmationJournal(self.confirmations, self.audit, confirmation, conversation)
