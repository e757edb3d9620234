"""The one refusal table: each domain exception a request can end in, and the HTTP status, code
and text the caller gets. Both apps install it; handlers raise, they never map errors."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from sstools_agent.adapters.service_tokens import ServiceTokenUnavailable
from sstools_agent.domain.approvals import OWN_SECOND_APPROVAL_TEXT
from sstools_agent.domain.attachments import AttachmentNotFound, AttachmentRejected
from sstools_agent.domain.confirmations import (
    CardWaits,
    ConfirmationDecided,
    ConfirmationExpired,
    ConfirmationForbidden,
    ConfirmationNotFound,
    ConfirmationNotPermitted,
    InvalidEdit,
    InvalidResume,
    NoPendingConfirmationError,
    OwnSecondApproval,
)
from sstools_agent.domain.conversations import (
    ConversationArchived,
    ConversationBusy,
    ConversationNotFound,
    IdempotencyKeyReused,
    NotRunning,
)
from sstools_agent.domain.cursors import InvalidCursor
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.gradio_queue import GradioTurnNotFound
from sstools_agent.domain.identity import AuthenticationError, InvalidCredentials
from sstools_agent.domain.ports import BlobStoreError
from sstools_agent.domain.read_retries import RetryNotFound, RetryRefused
from sstools_agent.domain.tool_outputs import ToolOutputNotFound
from sstools_agent.domain.ui_context import ContextRejected
from sstools_agent.http.auth import TooManyAttempts
from sstools_agent.http.errors import error

OWN_DETAIL: Final = None
"""In the table: the exception carries the text the caller reads (`detail`)."""

REFUSALS: Final[dict[type[Exception], tuple[int, ErrorCode, str | None]]] = {
    AuthenticationError: (401, ErrorCode.UNAUTHORIZED, OWN_DETAIL),
    InvalidCredentials: (401, ErrorCode.UNAUTHORIZED, "Unknown client credentials."),
    ConversationNotFound: (404, ErrorCode.NOT_FOUND, "No such conversation."),
    ConversationBusy: (
        409,
        ErrorCode.CONVERSATION_BUSY,
        "An answer is streaming in this conversation (another tab?); wait for it or cancel it.",
    ),
    ConversationArchived: (
        409,
        ErrorCode.CONVERSATION_ARCHIVED,
        "The conversation was deleted; start a new one.",
    ),
    NotRunning: (409, ErrorCode.NOT_RUNNING, "No answer is running in this conversation."),
    NoPendingConfirmationError: (
        404,
        ErrorCode.NO_PENDING_CONFIRMATION,
        "Nothing waits for confirmation in this conversation.",
    ),
    ConfirmationNotFound: (404, ErrorCode.NOT_FOUND, "No such confirmation."),
    ConfirmationForbidden: (403, ErrorCode.FORBIDDEN, "This confirmation is another user's."),
    ConfirmationNotPermitted: (403, ErrorCode.FORBIDDEN, OWN_DETAIL),
    OwnSecondApproval: (403, ErrorCode.FORBIDDEN, OWN_SECOND_APPROVAL_TEXT),
    InvalidEdit: (422, ErrorCode.VALIDATION_ERROR, OWN_DETAIL),
    AttachmentRejected: (422, ErrorCode.INVALID_ATTACHMENT, OWN_DETAIL),
    AttachmentNotFound: (404, ErrorCode.NOT_FOUND, "No such file."),
    InvalidResume: (422, ErrorCode.INVALID_RESUME, OWN_DETAIL),
    CardWaits: (
        409,
        ErrorCode.CONFIRMATION_PENDING,
        "A confirmation waits in this conversation: answer it (confirm, deny or edit) first.",
    ),
    ConfirmationDecided: (409, ErrorCode.ALREADY_DECIDED, "This confirmation was answered."),
    ConfirmationExpired: (
        409,
        ErrorCode.CONFIRMATION_EXPIRED,
        "This confirmation expired; nothing was run. Ask again for a new card.",
    ),
    IdempotencyKeyReused: (
        409,
        ErrorCode.IDEMPOTENCY_KEY_REUSED,
        "This Idempotency-Key was used for a different message.",
    ),
    RetryNotFound: (404, ErrorCode.NOT_FOUND, "В этом разговоре нет такого вызова."),
    RetryRefused: (403, ErrorCode.FORBIDDEN, OWN_DETAIL),
    InvalidCursor: (400, ErrorCode.INVALID_CURSOR, "The cursor is not valid for this listing."),
    ToolOutputNotFound: (404, ErrorCode.NOT_FOUND, "No kept output for this tool call."),
    BlobStoreError: (
        503,
        ErrorCode.STORAGE_FAILURE,
        "The tool output cannot be read now; try again later.",
    ),
    GradioTurnNotFound: (404, ErrorCode.NOT_FOUND, "No such queued or running turn."),
    ServiceTokenUnavailable: (
        503,
        ErrorCode.TOOL_FAILURE,
        "Ассистент не может подключиться к ss-tools, попробуйте позже.",
    ),
}

Handler = Callable[[Request, Exception], Awaitable[JSONResponse]]


def refusal_of(exc: Exception) -> tuple[int, ErrorCode, str]:
    """The status, code and text the table gives `exc` (one of its exceptions)."""
    status, code, detail = REFUSALS[type(exc)]
    return status, code, _detail(exc, detail)


def _detail(exc: Exception, detail: str | None) -> str:
    return detail if detail is not OWN_DETAIL else str(getattr(exc, "detail", None) or exc)


def _refusal(status: int, code: ErrorCode, detail: str | None) -> Handler:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return error(status, code, _detail(exc, detail))

    return handle


async def context_rejected(request: Request, exc: Exception) -> JSONResponse:
    """422 with the rejection's reasons, as the chat and the REST API answer it."""
    if not isinstance(exc, ContextRejected):
        raise exc
    return JSONResponse(exc.rejection.to_error_body(), status_code=422)


async def too_many_attempts(request: Request, exc: Exception) -> JSONResponse:
    """429 `{code, detail}` with `Retry-After` for a source that failed too often."""
    retry_after = exc.retry_after_s if isinstance(exc, TooManyAttempts) else 60
    response = error(
        429,
        ErrorCode.RATE_LIMITED,
        f"Too many failed attempts; try again in {retry_after} s.",
    )
    response.headers["Retry-After"] = str(retry_after)
    return response


def install_refusals(app: FastAPI) -> None:
    """Every domain refusal of the table, and the two with bodies of their own."""
    for exception, (status, code, detail) in REFUSALS.items():
        app.add_exception_handler(exception, _refusal(status, code, detail))
    app.add_exception_handler(ContextRejected, context_rejected)
    app.add_exception_handler(TooManyAttempts, too_many_attempts)
