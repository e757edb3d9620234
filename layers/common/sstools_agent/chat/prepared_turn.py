"""A chat turn's own state: what it answers (a message, a card, a resume), under which thread
rules, and what it learns as it runs. Every other module of the turn reads and fills this."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final, Literal

from sstools_agent.agent.runtime import PendingConfirmation
from sstools_agent.chat.attachments import CheckedFile
from sstools_agent.domain.chat_events import ConfirmationResult
from sstools_agent.domain.confirmations import Confirmation
from sstools_agent.domain.conversations import Conversation

Action = Literal["confirm", "deny", "edit", "resume"] | None
DECISIONS: Final = ("confirm", "deny", "edit")
"""The actions that answer a card."""


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
