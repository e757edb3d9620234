"""What the user reads of a confirmed call whose run was interrupted, in the card's words.

Apart from `confirmations` (which the REST API imports too): naming a call in the card's words
takes the catalog and the guardrails, which only the chat function ships.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

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
