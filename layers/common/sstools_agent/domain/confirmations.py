"""Pending confirmations: what the user is asked to confirm, and how it may end."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

DEFAULT_CONFIRMATION_TIMEOUT_S: Final = 300
"""How long a confirmation card waits for the user's answer before it expires."""


class ConfirmationNotFound(Exception):
    """No such confirmation in this conversation (404)."""


class ConfirmationForbidden(Exception):
    """Another user's confirmation (403)."""


class ConfirmationDecided(Exception):
    """Already confirmed, denied or cancelled (409): nothing runs twice."""


class ConfirmationExpired(Exception):
    """Expired, and the conversation was already told so (409): the card cannot be answered."""


class ConfirmationStatus(StrEnum):
    """The user's decision (or its absence): leaves `pending` exactly once."""

    PENDING = "pending"
    CONFIRMED = "confirmed"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"
    """Answered with edits that changed what the card said: a new card asks again."""
    AWAITING_APPROVAL = "awaiting_approval"
    """Confirmed by the person who asked, waiting for a second person (`domain.approvals`):
    nothing runs until that person approves; a deny by either ends it."""
    STALE = "stale"
    """Confirmed, but what the card's plan showed was no longer true: nothing ran, a new card
    with the plan as it is now asks again."""


class ExecutionState(StrEnum):
    """What became of a confirmed call, recorded on its confirmation.

    `started` is written, and must succeed, before the upstream call leaves: after any
    interruption a call that started and has no recorded outcome may have changed something.
    """

    STARTED = "started"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    """The upstream answered that it failed."""
    UNKNOWN = "unknown"
    """It left and no answer came back (timeout, dropped connection, cancel, crash)."""
    NOT_RUN = "not_run"
    """Confirmed, but the run ended before the call left: nothing was sent."""


OUTCOMES_OF_A_START: frozenset[ExecutionState] = frozenset(
    {ExecutionState.SUCCEEDED, ExecutionState.FAILED, ExecutionState.UNKNOWN}
)
"""States that only follow `started`; `started` and `not_run` only follow no state at all, and
only on a confirmed card: so a call is started at most once, and never after it was given up."""


class Settlement(StrEnum):
    """What the next access does with a card the checkpoint still waits on."""

    CANCEL = "cancel"
    """Still undecided: a new message cancels it."""
    REJECT = "reject"
    """Denied, expired or cancelled: the call is resolved as not confirmed; nothing ran."""
    REPORT = "report"
    """Confirmed: the call's execution state is reported, and the call is closed with it."""


@dataclass(frozen=True, slots=True)
class Confirmation:
    """One confirmation request; its status leaves `pending` exactly once."""

    confirmation_id: str
    conversation_id: str
    user: str
    tool_call_id: str
    tool: str
    fingerprint: str
    risk: str
    status: ConfirmationStatus
    expires_at: float
    """Epoch seconds."""
    task_token: str | None = None
    execution: ExecutionState | None = None
    edit: ConfirmationEdit | None = None
    """The edited arguments the card was answered with, written with the decision (so before
    the call leaves): after any crash the item names the call that ran, not only the card's."""
    plan: dict[str, Any] | None = None
    """The plan the card showed (`ChangePlan.to_payload`): shown again on a reconnect."""
    approvers: int = 1
    """How many people approve the call (`domain.approvals.required_approvals`)."""
    card: dict[str, Any] | None = None
    """What the card showed besides its plan (`args`, `decision`), kept for a card a second
    person approves: the approvals list shows them the same card, and nothing else."""
    approval: FirstApproval | None = None
    """The requester's approval of a card that needs two, written with its decision."""
    second_approver: str | None = None
    approval_token: str | None = None
    """The task token of the second approval's wait (the first wait's is `task_token`)."""

    @property
    def approval_expires_iso(self) -> str | None:
        """The second approval's deadline as the card shows it (None: not approved once)."""
        return iso_moment(self.approval.expires_at) if self.approval else None

    @property
    def edited_args(self) -> dict[str, Any] | None:
        """The arguments a confirm with edits runs instead of the card's (None: the card's)."""
        return self.edit.edited_args if self.edit is not None else None

    def expired(self, now: float) -> bool:
        """Expired by status, or by time even if the timer has not marked it yet (a card
        approved once by its second approval's deadline)."""
        if self.status is ConfirmationStatus.AWAITING_APPROVAL and self.approval is not None:
            return now >= self.approval.expires_at
        return self.status is ConfirmationStatus.EXPIRED or (
            self.status is ConfirmationStatus.PENDING and now >= self.expires_at
        )

    @property
    def waiting_token(self) -> str | None:
        """The token of the wait a decision ends: the second approval's once approved once
        (None until that wait has stored it)."""
        return self.approval_token if self.approval is not None else self.task_token

    @property
    def open(self) -> bool:
        """Still waiting for a decision: its own, or its second approver's."""
        return self.status in (ConfirmationStatus.PENDING, ConfirmationStatus.AWAITING_APPROVAL)

    @property
    def expires_iso(self) -> str:
        """`expires_at` as the card shows it: ISO 8601, UTC, seconds, `Z`."""
        return iso_moment(self.expires_at)

    def settlement(self, now: float) -> Settlement:
        """What the next access does when the checkpoint still waits on this card."""
        if self.open and not self.expired(now):
            return Settlement.CANCEL
        if self.status is ConfirmationStatus.CONFIRMED:
            return Settlement.REPORT
        return Settlement.REJECT

    @property
    def interrupted_outcome(self) -> ExecutionState:
        """The truth about a confirmed call whose run ended before it recorded an outcome:
        it did not leave (nothing recorded), or it may have changed something (started)."""
        if self.execution is None:
            return ExecutionState.NOT_RUN
        if self.execution is ExecutionState.STARTED:
            return ExecutionState.UNKNOWN
        return self.execution


def iso_moment(epoch_s: float) -> str:
    """A moment as cards show it: ISO 8601, UTC, seconds, `Z`."""
    moment = datetime.fromtimestamp(epoch_s, UTC).isoformat(timespec="seconds")
    return moment.replace("+00:00", "Z")


@dataclass(frozen=True, slots=True)
class FirstApproval:
    """The requester's confirmation of a card that needs a second person."""

    by: str
    expires_at: float
    """Epoch seconds: the second approval's deadline."""
    role: str | None
    token: str
    """The requester's JWT: the approved call runs as the requester, without their page."""


class OwnSecondApproval(Exception):
    """The requester answering as the second approver of their own card (403)."""


def decide_refusal(
    confirmation_id: str, user: str, current: Confirmation | None, now: float
) -> Confirmation:
    """Why a decision's conditional write was refused, told from the card as it was then:
    missing (ConfirmationNotFound), another user's (ConfirmationForbidden), already decided
    (ConfirmationDecided); an expired card is returned as it is (nothing runs, and the caller
    tells the user it expired)."""
    if current is None:
        raise ConfirmationNotFound(confirmation_id)
    if current.user != user:
        raise ConfirmationForbidden(confirmation_id)
    if current.expired(now):
        return current
    raise ConfirmationDecided(confirmation_id)


def second_decision_refusal(
    confirmation_id: str, approver: str, current: Confirmation | None, now: float
) -> Exception:
    """Why a second approver's decision was refused, told from the card as it was then."""
    if current is None or current.approval is None:
        return ConfirmationNotFound(confirmation_id)
    if current.approval.by == approver:
        return OwnSecondApproval(confirmation_id)
    if current.expired(now):
        return ConfirmationExpired(confirmation_id)
    if current.status is ConfirmationStatus.AWAITING_APPROVAL:
        return ConfirmationNotFound(confirmation_id)  # its timer has not started yet
    return ConfirmationDecided(confirmation_id)


def execution_may_follow(
    state: ExecutionState, status: ConfirmationStatus, current: ExecutionState | None
) -> bool:
    """Whether a confirmed call's execution may move to `state` (see `OUTCOMES_OF_A_START`)."""
    if state in OUTCOMES_OF_A_START:
        return current is ExecutionState.STARTED
    return status is ConfirmationStatus.CONFIRMED and current is None


def card_fingerprint(tool: str, args: dict[str, Any], decision: dict[str, Any]) -> str:
    """The fingerprint of a call as its card shows it: the decision names environment and risk."""
    return fingerprint(tool, args, decision.get("environment"), str(decision.get("risk", "")))


def fingerprint(tool: str, args: dict[str, Any], environment: str | None, risk: str) -> str:
    """What exactly was shown to the user: a confirm only runs a call with the same fingerprint."""
    canonical = json.dumps(
        [tool, args, environment, risk],
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
        default=str,
    )
    return hashlib.sha256(canonical.encode()).hexdigest()


class NoPendingConfirmationError(Exception):
    """A confirm or deny with nothing waiting in the conversation, or for another card than the
    one that waits (404); raised by the chat turns and by the agent alike."""


class CardWaits(Exception):
    """A new message in a conversation whose card can still be answered, where the protocol
    refuses it (AG-UI: a pending interrupt blocks new input) rather than cancelling the card."""

    def __init__(self, confirmation: Confirmation) -> None:
        super().__init__(confirmation.confirmation_id)
        self.confirmation = confirmation


class InvalidResume(Exception):
    """An answer that does not answer the open card the way the protocol requires."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class InvalidEdit(Exception):
    """An edit whose arguments the card's tool does not take (422); the card still waits."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


@dataclass(frozen=True, slots=True)
class ConfirmationEdit:
    """A card answered with edited arguments: what runs (or asks again) instead of its call."""

    edited_args: dict[str, Any]
    fingerprint: str
    """The edited call's fingerprint: the one a run of it must match."""
    asks_again: bool
    """The card's approval does not cover the edit (`edit_asks_again`): a new card asks."""
    edited_by: str


class ConfirmationNotPermitted(Exception):
    """A confirm whose user may no longer make the card's call (403); the card still waits."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail
