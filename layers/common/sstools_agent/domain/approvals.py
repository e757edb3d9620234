"""How many people approve a call, and how a card that waits for a second one is worded.

One home for the count (`required_approvals`): the guardrail decision carries it, the card's
item keeps it, and the confirm, the approvals list and the second decision read it from there.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Final, Literal

from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.chat_events import ConfirmationResult
from sstools_agent.domain.confirmations import Confirmation, ConfirmationStatus
from sstools_agent.domain.environments import EnvironmentTier
from sstools_agent.domain.roles import Role
from sstools_agent.domain.wording import role_words

if TYPE_CHECKING:  # (the settings import this module: it must not load the SQL classifier)
    from sstools_agent.domain.tool_calls import ResolvedToolCall

DEFAULT_PROD_APPROVERS: Final = 1
"""The shipped default: the person who asked confirms alone (a second approver is opt-in)."""
DEFAULT_APPROVAL_TIMEOUT_S: Final = 3600
"""How long a card confirmed once waits for the second person (the first card's five minutes
are too short for someone else to notice and read it)."""


def required_approvals(call: ResolvedToolCall, prod_approvers: int) -> int:
    """The number of people who approve `call`: two for a write to a prod environment when the
    deployment asks for two (`PROD_APPROVERS=2`), else one."""
    environment = call.environment
    prod = environment is not None and environment.tier is EnvironmentTier.PROD
    if prod and call.operation is Operation.WRITE and prod_approvers >= 2:
        return 2
    return 1


def approvals_text(approved: int, required: int) -> str:
    """How the card and the history count approvals: «подтверждено (1 из 2)»."""
    return f"подтверждено ({approved} из {required})"


def awaiting_text(card: Confirmation) -> str:
    """What the requester reads once their confirmation is the first of two: who approved,
    who may approve next, until when, and that nothing runs before."""
    approval = card.approval
    who = approval.by if approval is not None else card.user
    until = approval_deadline_words(approval.expires_at) if approval is not None else ""
    return (
        f"Операция: {approvals_text(1, card.approvers)}, подтвердил {who}. Она ждёт второго "
        f"подтверждения другого человека с ролью {approver_role_words(card)} до {until}; до "
        "этого ничего не выполняется."
    )


def approver_role_words(card: Confirmation) -> str:
    """The role a second approver needs, in words (the card's own requirement)."""
    decision = (card.card or {}).get("decision", {})
    permission = decision.get("permission", {}) if isinstance(decision, dict) else {}
    required = permission.get("required_role") if isinstance(permission, dict) else None
    return role_words(required or Role.ADMIN, True)


def approval_deadline_words(epoch_s: float) -> str:
    """A deadline as the history says it: «17:45 UTC»."""
    return datetime.fromtimestamp(epoch_s, UTC).strftime("%H:%M UTC")


OWN_SECOND_APPROVAL_TEXT: Final = (
    "Второе подтверждение должен дать другой человек: вы уже подтвердили эту операцию; "
    "ничего не выполнено."
)
SECOND_DECISION_TEXTS: Final = {
    ConfirmationResult.CONFIRMED: (
        "{approver} дал второе подтверждение — {approvals}: операция выполняется."
    ),
    ConfirmationResult.DENIED: "{approver} отклонил операцию; ничего не выполнено.",
    ConfirmationResult.STALE: (
        "{approver} подтвердил операцию, но с момента показа карточки изменилось то, что она "
        "меняет; ничего не выполнено, нужна новая карточка."
    ),
}
"""What the requester's conversation says of the second person's decision, before its run."""
APPROVER_TOLD: Final = {
    ConfirmationStatus.CONFIRMED: (
        "approved",
        "Второе подтверждение принято — {approvals}: операция запускается в разговоре "
        "пользователя {requester}.",
    ),
    ConfirmationStatus.DENIED: (
        "denied",
        "Операция отклонена; ничего не выполнено. {requester} увидит это в разговоре.",
    ),
    ConfirmationStatus.STALE: (
        "stale",
        "Карточка устарела: то, что меняет операция, изменилось с момента её показа; ничего "
        "не выполнено. {requester} получит новую карточку.",
    ),
}
"""What the second approver is told of their decision."""


def second_decision_text(card: Confirmation, result: ConfirmationResult) -> str:
    """The requester's conversation's words for the second person's decision."""
    text = SECOND_DECISION_TEXTS.get(result, SECOND_DECISION_TEXTS[ConfirmationResult.DENIED])
    return text.format(
        approver=card.second_approver or "", approvals=approvals_text(2, card.approvers)
    )


def second_decision_told(
    card: Confirmation, status: ConfirmationStatus
) -> tuple[Literal["approved", "denied", "stale"], str]:
    """The second approver's answer: the outcome, and its words."""
    outcome, text = APPROVER_TOLD[status]
    detail = text.format(approvals=approvals_text(2, card.approvers), requester=card.user)
    return outcome, detail  # type: ignore[return-value]
