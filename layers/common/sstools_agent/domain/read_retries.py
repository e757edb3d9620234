"""«Повторить» on a read that did not answer: which calls may be repeated, and why one may not.

A repeat runs the same tool with the same arguments in the page context the call was made in,
through the same checks as any call (role, page, confirmation, audit): it is a new call of the
conversation, never a replay of a turn. Only a read is repeated: a write that failed may have
changed something (or may be a sibling of the read in the same turn), and repeating it is a
decision the user makes on a card, not a click on an error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.conversations import MessageRole, StoredMessage
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.tool_catalog import CATALOG

RETRYABLE_CODES: Final = frozenset(
    {ErrorCode.TOOL_FAILURE, ErrorCode.TOOL_TIMEOUT, ErrorCode.TOOL_NOT_RUN}
)
"""The codes that mean a read did not answer: it failed upstream, took too long, or was
abandoned (a cancel, a connection lost) before its answer. Refusals (role, page, arguments)
are not here: the same call would be refused again."""

RETRYABLE_READS: Final = tuple(
    spec.name for spec in CATALOG if spec.operation is Operation.READ and not spec.cost
)
"""Tools whose every call is a read (a call with a cost asks on a card instead). A SQL tool's
call is a read or a write by its text: it is not offered (its card shows the SQL to ask again)."""

TOOL_ERROR: Final = "tool_error"
"""A history call's status when it ended in an error (the event's type)."""


class RetryNotFound(Exception):
    """No failed call of that id in the caller's conversation (404: ids do not leak)."""


class RetryRefused(Exception):
    """The call may not be repeated by a click: a write, or a call that did not fail as a read
    that can answer on a second try."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


WRITE_NOT_REPEATED: Final = (
    "Повторить можно только чтение: изменение не повторяется одним нажатием. "
    "Проверьте его статус и, если нужно, попросите выполнить его снова — с подтверждением."
)
NO_STATUS_CHECK: Final = (
    "Для этого вызова нет чтения, которое показывает его статус; спросите о нём словами."
)
WRITE_ANSWERED: Final = "Этот вызов завершился, его результат — в разговоре выше."
NOT_A_FAILED_READ: Final = (
    "Этот вызов не завершился сбоем, который исправляет повтор; попросите о нём снова."
)


@dataclass(frozen=True, slots=True)
class FailedCall:
    """A call of the history that ended in an error: what a repeat runs again, and where."""

    tool_call_id: str
    tool: str
    args: dict[str, Any]
    code: str
    ui_context: dict[str, Any] | None


def failed_call(messages: Sequence[StoredMessage], tool_call_id: str) -> FailedCall:
    """The call `tool_call_id` of this history as it ended (RetryNotFound if there is none),
    with the page context of the turn it was made in (the user message that opened that
    turn). A call behind a card is recorded where it stopped for the card and again where it
    ran: the last record is its outcome."""
    page: dict[str, Any] | None = None
    found: FailedCall | None = None
    for message in messages:
        if message.role is MessageRole.USER:
            page = message.ui_context
        for call in message.tool_calls:
            if call.get("tool_call_id") != tool_call_id:
                continue
            args = call.get("input")
            found = FailedCall(
                tool_call_id,
                str(call.get("tool", "")),
                dict(args) if isinstance(args, Mapping) else found.args if found else {},
                str(call.get("code", "")) if call.get("status") == TOOL_ERROR else "",
                found.ui_context if found else page,
            )
    if found is None:
        raise RetryNotFound(tool_call_id)
    return found


def refuse_unless_failed(call: FailedCall) -> None:
    """RetryRefused unless `call` ended with a code a second try can change."""
    if call.code not in RETRYABLE_CODES:
        raise RetryRefused(NOT_A_FAILED_READ)


def refuse_unless_read(call: FailedCall, operation: Operation) -> None:
    """RetryRefused unless `call` is a read (`operation`, as the guardrails decide it for this
    call where it was made)."""
    if operation is not Operation.READ or call.tool not in RETRYABLE_READS:
        raise RetryRefused(WRITE_NOT_REPEATED)


def status_check_of(write: FailedCall) -> FailedCall:
    """The read that tells whether `write`, a write whose answer never came, applied: the
    catalog's status check for it (RetryRefused if it declares none, or if the write
    answered), with its arguments from the write's, where the write ran (or in the
    environment the check names)."""
    spec = CATALOG.get(write.tool)
    check = spec.status_check if spec is not None else None
    if check is None:
        raise RetryRefused(NO_STATUS_CHECK)
    if not write.code:
        raise RetryRefused(WRITE_ANSWERED)
    page = write.ui_context
    target = write.args.get(check.environment_from) if check.environment_from else None
    if target:
        page = {**(page or {"contextVersion": 1}), "envId": str(target)}
    return FailedCall(
        write.tool_call_id, check.tool, check.read_arguments(write.args), write.code, page
    )


def status_checks() -> dict[str, str]:
    """Each write that declares a status check, and the read it asks."""
    return {spec.name: spec.status_check.tool for spec in CATALOG if spec.status_check is not None}


def retry_glossary() -> dict[str, Any]:
    """What the page needs to offer «Повторить» (the reads, and the codes that mean a read did
    not answer) and «Проверить статус» (the writes with a status check, and the read each
    asks); the server checks again."""
    return {
        "reads": sorted(RETRYABLE_READS),
        "codes": sorted(RETRYABLE_CODES),
        "statusChecks": dict(sorted(status_checks().items())),
    }
