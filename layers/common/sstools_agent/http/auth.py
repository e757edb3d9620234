"""Who is calling: the user's JWT, checked before anything of the request's body is read; a
bounded request id; and the audit of anonymous failures (sampled, so a flood cannot write records
of its own size and number). The caller's address is `http.client_address`'s."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any, Final

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

from sstools_agent.domain.attempt_limits import AuthFailureSampler, ClosedWindow
from sstools_agent.domain.audit import AuditKind, AuditRecord
from sstools_agent.domain.identity import AuthenticationError, Principal, UserTokenVerifier
from sstools_agent.domain.ports import AuditSink
from sstools_agent.http.client_address import UNKNOWN_SOURCE

REQUEST_ID: Final = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
"""An `X-Request-ID` we keep (in logs and audit records); any other value is replaced."""
MAX_AUDITED_REASON_CHARS: Final = 200


def request_id_from(header: str | None) -> str:
    """The caller's request id when it is a short token of safe characters, else a fresh one:
    a client cannot make the service store (for 400 days) text of its choosing and size."""
    if header is not None and REQUEST_ID.fullmatch(header):
        return header
    return uuid.uuid4().hex


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


def authenticate_request(
    request: Request,
    verifier: UserTokenVerifier,
    audit: AuditSink,
    *,
    source: str,
    failures: AuthFailureSampler | None,
) -> Principal:
    """`authenticate` over the request's own headers: `Authorization` (given more than once, it
    is no token: which one counts would be a guess) and `X-Request-ID`."""
    given = request.headers.getlist("authorization")
    return authenticate(
        verifier,
        audit,
        given[0] if len(given) == 1 else "",
        request_id_from(request.headers.get("x-request-id")),
        source=source,
        failures=failures,
    )


Authenticator = Callable[[Request], Principal]
"""The app's sign-in check (on `app.state.authenticator`): the caller, or AuthenticationError."""


class AuthenticatedRoute(APIRoute):
    """A route whose caller is authenticated before its body is read. FastAPI reads, parses and
    validates a body before it solves any dependency, so a dependency that authenticates comes
    too late: an anonymous caller would have its body parsed and get the schema's complaints in
    a 422. Here the app's `Authenticator` runs first (in a thread: a JWKS may be fetched), the
    principal waits on `request.state` for the route's `authenticated_principal` dependency, and
    only then does FastAPI read the body."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        read_and_run = super().get_route_handler()

        async def authenticated_first(request: Request) -> Response:
            authenticator: Authenticator = request.app.state.authenticator
            request.state.principal = await run_in_threadpool(authenticator, request)
            return await read_and_run(request)

        return authenticated_first


def authenticated_principal(request: Request) -> Principal:
    """The caller `AuthenticatedRoute` established (a dependency); a route of another class
    that asks for it is a bug, not an anonymous caller."""
    principal = getattr(request.state, "principal", None)
    if not isinstance(principal, Principal):
        raise TypeError(f"{request.url.path} is not an AuthenticatedRoute")
    return principal


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


class TooManyAttempts(Exception):
    """A source that failed too often in the current window (429)."""

    def __init__(self, retry_after_s: int) -> None:
        super().__init__(f"retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s
