"""A card's expiry told in its conversation when its timer ends, not as the answer to the next
message.

The confirmation's state machine marks the card `expired` when its timer runs out and publishes
`confirmation_decided` with `decision.result = expired` on the audit bus; a rule hands that
event to the expiry function (`functions/expiry/app.py`), which closes the waiting call here:
under the conversation's lock, the card is answered as decided by its timer, the call is
cancelled in the checkpoint without a model turn (nothing can run: no tool, no model), and the
history gets `confirm_resolved(expired)` and the cancellation text, at expiry time.

It is a best effort with a backstop: a conversation another run holds (a turn under way), or one
that no longer waits on the card (it was answered, or told already), is left as it is, and the
next access resolves the card as before (`TurnCards.settle_before_message`).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, Callable
from enum import StrEnum

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.runtime import ChatAgent, PendingConfirmation
from sstools_agent.chat.prepared_turn import PreparedTurn
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.chat_events import ChatEvent, ErrorEvent
from sstools_agent.domain.confirmations import (
    ConfirmationDecided,
    ConfirmationExpired,
    ConfirmationStatus,
    NoPendingConfirmationError,
)
from sstools_agent.domain.conversations import ConversationArchived, ConversationBusy
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.ports import AuditSink, ConfirmationStore, ConversationStore

logger = logging.getLogger(__name__)


class ExpiryTold(StrEnum):
    """What became of one expiry event."""

    TOLD = "told"
    """The conversation now says the card expired and nothing ran."""
    NOT_EXPIRED = "not_expired"
    """The card is not expired (unknown, or decided before its timer)."""
    ALREADY_SETTLED = "already_settled"
    """The conversation no longer waits on the card: answered, or told already."""
    LEFT_FOR_NEXT_ACCESS = "left_for_next_access"
    """Another run holds the conversation, or closing failed: its next access tells it."""
    ARCHIVED = "archived"
    """The conversation was deleted: nobody will read it."""


class ExpiryRecorder:
    """Tells a conversation that its card expired, when the timer ends."""

    def __init__(
        self,
        turns: ChatTurns,
        agent: Callable[[], ChatAgent],
        store: ConversationStore,
        confirmations: ConfirmationStore,
        audit: AuditSink,
    ) -> None:
        """Built by `wiring.chat.ChatDeps.expiry_recorder()`, over the same collaborators as
        `turns`; `audit` is the sink the turns write to: its records leave when the caller
        flushes it."""
        self.turns, self.agent = turns, agent
        self.store, self.confirmations, self.audit = store, confirmations, audit

    async def tell(self, confirmation_id: str) -> ExpiryTold:
        """Closes the call `confirmation_id`'s card waits on as expired, in its conversation."""
        turn = await self._locked(confirmation_id)
        if isinstance(turn, ExpiryTold):
            return turn
        if turn.pending is None or turn.confirmation is None:  # (prepare names both)
            return ExpiryTold.ALREADY_SETTLED
        # No agent run: the history is written as a turn's, from the closing events alone
        user = turn.confirmation.user
        context = AgentRunContext(Principal(user, None, (), "", 0), None, "")
        closing = self._closed(turn.conversation.conversation_id, confirmation_id, turn.pending)
        failed = False
        async for _, event in self.turns.stream(turn, context, closing):
            failed = failed or isinstance(event, ErrorEvent)
        if failed:
            return ExpiryTold.LEFT_FOR_NEXT_ACCESS
        logger.info("expiry told", extra={"confirmation_id": confirmation_id})
        return ExpiryTold.TOLD

    async def _locked(self, confirmation_id: str) -> PreparedTurn | ExpiryTold:
        """The conversation held for telling the card's expiry, or why it is not told here."""
        confirmation = await self.confirmations.get(confirmation_id)
        if confirmation is None or confirmation.status is not ConfirmationStatus.EXPIRED:
            return ExpiryTold.NOT_EXPIRED
        conversation = await self.store.get(confirmation.conversation_id)
        if conversation is None or conversation.pending_confirmation_id != confirmation_id:
            return ExpiryTold.ALREADY_SETTLED
        try:
            # The card answered as its timer decided it (an answer to an expired card resolves
            # it as expired): the lock, and the card's call checked to be the one waiting
            return await self.turns.prepare(
                owner=confirmation.user,
                conversation_id=confirmation.conversation_id,
                action="deny",
                message=None,
                confirmation_id=confirmation_id,
                ui_context=None,
            )
        except ConversationBusy:
            return ExpiryTold.LEFT_FOR_NEXT_ACCESS
        except ConversationArchived:
            return ExpiryTold.ARCHIVED
        except (ConfirmationDecided, ConfirmationExpired, NoPendingConfirmationError):
            return ExpiryTold.ALREADY_SETTLED

    async def _closed(
        self, conversation_id: str, confirmation_id: str, pending: PendingConfirmation
    ) -> AsyncGenerator[ChatEvent]:
        for event in await self.agent().close_expired(conversation_id, pending):
            yield event
        await self.store.clear_pending_confirmation(conversation_id, confirmation_id)
