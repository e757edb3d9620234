"""How large a request body each endpoint of either function takes, and the refusal of a larger
one before it is read.

Every figure is what its endpoint legitimately carries, with room; none is configured per
deployment. In AWS a larger body never arrives anyway (a Lambda invocation's payload, through API
Gateway or the function URL, is at most 6 MB); these limits are lower, per endpoint, and also hold
under uvicorn locally.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sstools_agent.domain.errors import ErrorCode
from sstools_agent.http.errors import error

KIB: Final = 1024

DEFAULT_MAX_BODY_BYTES: Final = 256 * KIB
"""Any endpoint not named below: the REST API's bodies and the chat's cancel. The largest is an
appended message at its length limit, every character sent as JSON escapes, with a page context
(tests/unit/test_body_limits.py checks that each endpoint's largest body fits)."""

CHAT_MAX_BODY_BYTES: Final = 1024 * KIB
"""`POST /api/agent/chat`: a message and a page context are small; the large case is an
approve-with-edits whose edited SQL is at the tool's length limit, every character escaped."""

AG_UI_MAX_BODY_BYTES: Final = 4096 * KIB
"""`POST /api/agent/ag-ui`: AG-UI clients (HttpAgent) send their copy of the whole thread with
every run. The server reads only the last message, but the copy must fit: about 200 turns."""

TOO_LARGE_STATUS: Final = 413
CUT_OFF_DETAIL: Final = "Запрос оборвался, не дойдя до конца."


def too_large_detail(limit: int) -> str:
    """What the caller reads: the endpoint's limit, in the unit people know."""
    return f"Запрос слишком большой: этот адрес принимает не больше {limit // KIB} КБ."


class BodyLimit:
    """ASGI middleware: a request whose body is over its path's limit is answered 413
    `{code: PAYLOAD_TOO_LARGE, detail}` before the app sees it. A declared `Content-Length` over
    the limit is refused without reading a byte; a body without one (chunked) is read only up to
    the limit, then refused. A body within the limit is handed to the app as it was sent.

    The answer closes the connection: the rest of the body is never read (RFC 9110, 413)."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        limits: Mapping[str, int] | None = None,
        default: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self.app = app
        self.limits = dict(limits or {})
        self.default = default

    def limit_for(self, path: str) -> int:
        """The limit of `path` (exact paths; any other path has the default)."""
        return self.limits.get(path, self.default)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit_for(scope["path"])
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await self.refuse(limit, scope, receive, send)
            return
        try:
            body = await _read_up_to(receive, limit)
        except _ClientGone:  # an answer no one reads, so that the app's own middleware sees one
            await _closing(400, ErrorCode.VALIDATION_ERROR, CUT_OFF_DETAIL)(scope, receive, send)
            return
        if body is None:
            await self.refuse(limit, scope, receive, send)
            return
        await self.app(scope, _replaying(body, receive), send)

    @staticmethod
    async def refuse(limit: int, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = _closing(TOO_LARGE_STATUS, ErrorCode.PAYLOAD_TOO_LARGE, too_large_detail(limit))
        await refusal(scope, receive, send)


def _closing(status: int, code: ErrorCode, detail: str) -> Response:
    """A `{code, detail}` answer that closes the connection (what was not read is never read)."""
    response = error(status, code, detail)
    response.headers["Connection"] = "close"
    return response


def _content_length(scope: Scope) -> int | None:
    """The declared length; None when there is none (or it is not a number: the server's
    framing, not this header, then decides where the body ends)."""
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class _ClientGone(Exception):
    """The client disconnected before its body ended."""


async def _read_up_to(receive: Receive, limit: int) -> bytes | None:
    """The whole body if it ends within `limit` bytes; None as soon as it does not (the rest is
    never read); _ClientGone if the client disconnected first."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise _ClientGone
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the body read already, in one message, then the client's own
    messages (a disconnect, which streaming responses watch for)."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
