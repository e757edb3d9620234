"""A card's expiry told in its conversation when its timer ends, not as the answer to the next
message.

The confirmation's state machine marks the card `expired` when its timer runs out and publishes
`confirmation_decided` with `decision.result = expired` on the audit bus; a rule hands that
event to the expiry function (`functions/expiry/app.py`), which resolves the waiting call here,
as the card's user, exactly as an answer to an expired card does: the checkpoint closes the
call as not run, and the conversation's history gets `confirm_resolved(expired)` and the
cancellation text, at expiry time. Nothing is sent upstream: the run offers the model no tools.

It is a best effort with a backstop: a conversation another run holds (a turn under way), or one
that no longer waits on the card (it was answered, or told already), is left as it is, and the
next access resolves the card as before (`ChatTurns._settle_confirmation`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from enum import StrEnum

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.runtime import ChatAgent
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.confirmations import (
    ConfirmationDecided,
    ConfirmationExpired,
    ConfirmationStatus,
    NoPendingConfirmationError,
)
from sstools_agent.domain.conversations import ConversationArchived, ConversationBusy
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_routing import Intent, RoutingDecision

logger = logging.getLogger(__name__)

_NO_TOOLS = RoutingDecision(Intent.UNKNOWN, (), (), (), ())
"""The expiry's run may only say what happened: the model is offered no tool."""


class ExpiryTold(StrEnum):
    """What became of one expiry event."""

    TOLD = "told"
    """The conversation now says the card expired and nothing ran."""
    NOT_EXPIRED = "not_expired"
    """The card is not expired (unknown, or decided before its timer)."""
    ALREADY_SETTLED = "already_settled"
    """The conversation no longer waits on the card: answered, or told already."""
    LEFT_FOR_NEXT_ACCESS = "left_for_next_access"
    """Another run holds the conversation: its next access tells it."""


class ExpiryRecorder:
    """Tells a conversation that its card expired, when the timer ends."""

    def __init__(self, turns: ChatTurns, agent: Callable[[], ChatAgent]) -> None:
        self.turns, self.agent = turns, agent

    async def tell(self, confirmation_id: str) -> ExpiryTold:
        """Resolves the call `confirmation_id`'s card waits on as expired, in its conversation."""
        confirmation = await self.turns.confirmations.get(confirmation_id)
        if confirmation is None or confirmation.status is not ConfirmationStatus.EXPIRED:
            return ExpiryTold.NOT_EXPIRED
        conversation_id = confirmation.conversation_id
        conversation = await self.turns.store.get(conversation_id)
        if conversation is None or conversation.pending_confirmation_id != confirmation_id:
            return ExpiryTold.ALREADY_SETTLED
        pending = await self.agent().pending_confirmation(conversation_id)
        if pending is None or pending.fingerprint != confirmation.fingerprint:
            return ExpiryTold.ALREADY_SETTLED
        try:
            # An answer to an expired card resolves it as expired (and runs nothing)
            turn = await self.turns.prepare(
                owner=confirmation.user,
                conversation_id=conversation_id,
                action="deny",
                message=None,
                confirmation_id=confirmation_id,
                ui_context=None,
            )
        except (ConversationBusy, ConversationArchived):
            return ExpiryTold.LEFT_FOR_NEXT_ACCESS
        except (ConfirmationDecided, ConfirmationExpired, NoPendingConfirmationError):
            return ExpiryTold.ALREADY_SETTLED
        # The card was made for this user with a role the call needs: the resumed call is
        # checked as it was (nothing runs: the answer is the expiry)
        required = (pending.decision.get("permission") or {}).get("required_role")
        role = Role(required) if required in set(Role) else None
        principal = Principal(confirmation.user, role, (role.value,) if role else (), "", 0)
        context = AgentRunContext(principal, None, service_token="", routing=_NO_TOOLS)
        async for _ in self.turns.stream(turn, context):
            pass
        logger.info("expiry told", extra={"confirmation_id": confirmation_id})
        return ExpiryTold.TOLD
