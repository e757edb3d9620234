"""What the chat and REST functions share at the HTTP edge: error bodies and authentication.

Every error body is `{code, detail}` (plus specifics, e.g. the problems of a rejected context).
"""

from __future__ import annotations

import ipaddress
import logging
import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from sstools_agent.domain.attempt_limits import AuthFailureSampler, ClosedWindow
from sstools_agent.domain.audit import AuditKind, AuditRecord
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.identity import AuthenticationError, Principal, UserTokenVerifier
from sstools_agent.domain.ports import AuditSink

logger = logging.getLogger(__name__)

INTERNAL_ERROR_DETAIL: Final = "Internal error; please try again later."
REQUEST_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
"""An `X-Request-ID` we keep (in logs and audit records); any other value is replaced."""
MAX_AUDITED_REASON_CHARS: Final = 200
UNKNOWN_SOURCE: Final = "unknown"


def request_id_from(header: str | None) -> str:
    """The caller's request id when it is a short token of safe characters, else a fresh one:
    a client cannot make the service store (for 400 days) text of its choosing and size."""
    if header is not None and REQUEST_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


def client_source(request: Request) -> str:
    """The caller's address, for counting attempts: the last `X-Forwarded-For` entry (the one
    the nearest proxy, API Gateway or the function URL, added; earlier ones are the client's
    own claims), else the socket's peer. Anything that is not an IP address is "unknown"."""
    forwarded = [part.strip() for part in request.headers.get("x-forwarded-for", "").split(",")]
    candidates = [forwarded[-1]] if forwarded[-1] else []
    if request.client is not None:
        candidates.append(request.client.host)
    for candidate in candidates:
        try:
            return str(ipaddress.ip_address(candidate))
        except ValueError:
            continue
    return UNKNOWN_SOURCE


def error(status: int, code: ErrorCode, detail: str, **extra: Any) -> JSONResponse:
    """An error response: `{code, detail}`."""
    return JSONResponse({"code": code.value, "detail": detail, **extra}, status_code=status)


async def invalid_body(request: Request, exc: Exception) -> JSONResponse:
    """A request that does not parse or validate: 422 with `{code, detail}`."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    problems = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in errors)
    return error(422, ErrorCode.VALIDATION_ERROR, problems or str(exc))


HTTP_STATUS_CODES: dict[int, ErrorCode] = {
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
}


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    """The framework's own refusals (an unknown path, a method the path does not serve) in the
    same `{code, detail}` shape; a 405 lists the path's methods.

    The framework's only 400 is a body it could not read as JSON (bytes that are not UTF-8): that
    is 422 like every other body that is not JSON, as the protocol says.
    """
    if not isinstance(exc, StarletteHTTPException):
        raise exc
    if exc.status_code == 400:
        return error(422, ErrorCode.VALIDATION_ERROR, "body: not a JSON document")
    if exc.status_code >= 500:
        return error(exc.status_code, ErrorCode.INTERNAL_ERROR, INTERNAL_ERROR_DETAIL)
    code = HTTP_STATUS_CODES.get(exc.status_code, ErrorCode.VALIDATION_ERROR)
    response = error(exc.status_code, code, str(exc.detail))
    if exc.status_code == 405:
        methods = {
            method
            for route in request.app.routes
            if isinstance(route, APIRoute) and route.path_regex.match(request.url.path)
            for method in route.methods or ()
        }
        response.headers["Allow"] = ", ".join(sorted(methods))
    return response


def single_query_values(request: Request) -> None:
    """Refuses a query parameter given more than once (`?q=a&q=b`): which one counts would be a
    guess (dependency of every route of the REST API)."""
    keys = [key for key, _ in request.query_params.multi_items()]
    repeated = sorted({key for key in keys if keys.count(key) > 1})
    if repeated:
        raise RequestValidationError(
            [
                {"loc": ("query", key), "msg": "given more than once", "type": "repeated"}
                for key in repeated
            ]
        )


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """Anything unhandled (a storage fault, a bug): 500 `{code, detail}`, never a plain-text page.
    The detail says nothing of the cause; the log has it (the server logs the exception, which
    Starlette re-raises after this answer)."""
    logger.error("unhandled %s on %s %s", type(exc).__name__, request.method, request.url.path)
    return error(500, ErrorCode.INTERNAL_ERROR, INTERNAL_ERROR_DETAIL)


def install_error_handlers(app: FastAPI) -> None:
    """Every error an app answers, in the `{code, detail}` shape."""
    app.add_exception_handler(RequestValidationError, invalid_body)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)


def _where(location: Sequence[Any]) -> str:
    """`message` for a body field, `query.limit` for a parameter, `body` for the body itself."""
    parts = list(location[1:] if location and location[0] == "body" else location)
    if parts and isinstance(parts[0], int):  # a position in a body that is not JSON
        parts = []
    return ".".join(map(str, parts)) or "body"


def authenticate(
    verifier: UserTokenVerifier,
    audit: AuditSink,
    authorization: str,
    request_id: str,
    *,
    source: str = UNKNOWN_SOURCE,
    failures: AuthFailureSampler | None = None,
) -> Principal:
    """The caller's principal from `Authorization: Bearer <user JWT>`; AuthenticationError (and
    an audit record, sampled by `failures`) otherwise."""
    scheme, _, token = authorization.partition(" ")
    try:
        if scheme.lower() != "bearer" or not token:
            raise AuthenticationError("missing bearer token")
        return verifier.verify(token)
    except AuthenticationError as failure:
        audit_auth_failure(
            audit, failures, source, {"reason": failure.detail, "request_id": request_id}
        )
        raise


def audit_auth_failure(
    audit: AuditSink,
    failures: AuthFailureSampler | None,
    source: str,
    detail: dict[str, Any],
    *,
    outcome: str = "refused",
) -> None:
    """One anonymous failure: its own record while the sampler admits it (the reason cut to
    `MAX_AUDITED_REASON_CHARS`: a token's `kid` is the caller's text), else only counted; a
    window that ended with uncounted failures becomes one aggregate record."""
    admitted, closed = failures.admit(source) if failures is not None else (True, None)
    if closed is not None:
        audit.emit(_suppressed_record(closed))
    if not admitted:
        return
    bounded = {
        key: value[:MAX_AUDITED_REASON_CHARS] if isinstance(value, str) else value
        for key, value in detail.items()
    }
    audit.emit(
        AuditRecord(AuditKind.AUTH_FAILED, None, outcome, detail=bounded | {"source": source})
    )


def _suppressed_record(closed: ClosedWindow) -> AuditRecord:
    started = datetime.fromtimestamp(closed.started_at, UTC).isoformat(timespec="seconds")
    return AuditRecord(
        AuditKind.AUTH_FAILED,
        None,
        "suppressed",
        detail={
            "suppressed": closed.suppressed,
            "sources": closed.sources,
            "window_started_at": started.replace("+00:00", "Z"),
            "window_s": closed.window_s,
        },
    )


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


class TooManyAttempts(Exception):
    """A source that failed too often in the current window (429)."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s
