"""What the user reads of a confirmed call that did not run to its answer (interrupted, not
confirmed, superseded by an edit), in the card's words.

Apart from `confirmations` (which the REST API imports too): naming a call in the card's words
takes the catalog and the guardrails, which only the chat function ships.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sstools_agent.domain.chat_events import ConfirmationResult
from sstools_agent.domain.confirmations import ExecutionState
from sstools_agent.domain.guardrails import call_in_words
from sstools_agent.domain.tool_catalog import CATALOG

OUTCOME_UNKNOWN_TEXT = (
    "Статус операции неизвестен — проверьте статус: {call} был отправлен в ss-tools, "
    "но ответ не получен (operation status unknown — check status)."
)
OUTCOME_TEXTS: dict[ExecutionState, str] = {
    ExecutionState.SUCCEEDED: "Операция {call} выполнена.",
    ExecutionState.FAILED: "Операция {call} завершилась ошибкой ss-tools.",
    ExecutionState.UNKNOWN: OUTCOME_UNKNOWN_TEXT,
    ExecutionState.STARTED: OUTCOME_UNKNOWN_TEXT,
    ExecutionState.NOT_RUN: (
        "Операция {call} не выполнена: ход прервался до её запуска; ничего не изменено."
    ),
}
EDITED_CALL_TEXT: Final = "{label} ({details}, с вашими правками)"
EDITED_CALL_UNWORDED: Final = "{label} со значениями, которые вы указали"
"""A call confirmed with edits whose arguments the catalog has no words for."""


def call_text(
    tool: str, card_args: Mapping[str, Any] | None, edited_args: Mapping[str, Any] | None
) -> str:
    """A confirmed call as the card words a call (the catalog's label, the objects and the
    environment it names), by the arguments it was sent with: the edited ones when the card was
    answered with edits (whoever checks its status must check the object that was sent), else
    the card's. Never its identifier or its arguments as JSON."""
    label, details = call_in_words(CATALOG.get(tool), edited_args or card_args or {})
    if edited_args is None:
        return f"{label} ({', '.join(details)})" if details else label
    if not details:
        return EDITED_CALL_UNWORDED.format(label=label)
    return EDITED_CALL_TEXT.format(label=label, details=", ".join(details))


def outcome_text(
    tool: str,
    state: ExecutionState,
    card_args: Mapping[str, Any] | None = None,
    edited_args: Mapping[str, Any] | None = None,
) -> str:
    """What the user reads about a confirmed call whose run was interrupted (`call_text`)."""
    return OUTCOME_TEXTS[state].format(call=call_text(tool, card_args, edited_args))


_WHY_NOT_RUN: Final[dict[str, str]] = {
    ConfirmationResult.EXPIRED: "время подтверждения истекло",
    ConfirmationResult.CANCELLED: "отменено новым сообщением",
    ConfirmationResult.SUPERSEDED: "заменено изменённым вызовом",
    ConfirmationResult.STALE: "карточка устарела: окружение изменилось после её показа",
}
UNSHOWN_CARD_TEXT: Final = (
    "Операция {call} не выполнена: изменённый вызов ждёт нового подтверждения, но его карточка "
    "не была показана; ничего не изменено. Попросите выполнить её ещё раз."
)
ABANDONED_READ_TEXT: Final = "Чтение {call} прервано остановкой генерации; ничего не изменено."


def cancellation_text(tool: str, reason: str, card_args: Mapping[str, Any] | None = None) -> str:
    """The explicit message after a call that did not run because it was not confirmed (`reason`
    is a ConfirmationResult, or its value as the checkpoint's ToolMessage keeps it)."""
    because = _WHY_NOT_RUN.get(reason, "отклонено пользователем")
    return f"Операция {call_text(tool, card_args, None)} отменена ({because}); ничего не изменено."


def unshown_card_text(
    tool: str, card_args: Mapping[str, Any], edited_args: Mapping[str, Any] | None
) -> str:
    """An edit that asked again, whose new card was never shown (its run stopped first)."""
    return UNSHOWN_CARD_TEXT.format(call=call_text(tool, card_args, edited_args))


def abandoned_read_text(tool: str) -> str:
    """A read a stop left unfinished."""
    return ABANDONED_READ_TEXT.format(call=call_text(tool, None, None))
