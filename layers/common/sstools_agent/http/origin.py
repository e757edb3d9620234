"""The origin check: in AWS the chat function answers only requests CloudFront forwarded.

The function URL is public (AuthType NONE: an OAC-signed Lambda origin would take the
`Authorization` header for its SigV4 signature, and the user's bearer token travels there), and so
is the API Gateway stage. CloudFront adds a secret header to every request it sends to either
origin; the chat app refuses, 403 `{code: FORBIDDEN, detail}`, any request without exactly that
value. Unset (locally, in the tests), nothing is checked.
"""

from __future__ import annotations

import hmac
import logging
from typing import Final

from starlette.types import ASGIApp, Receive, Scope, Send

from sstools_agent.domain.errors import ErrorCode
from sstools_agent.http.errors import error

logger = logging.getLogger(__name__)

ORIGIN_VERIFY_HEADER: Final = "X-Origin-Verify"
"""The header CloudFront adds to its origin requests (template.yaml, `OriginCustomHeaders`)."""

NOT_THROUGH_CLOUDFRONT: Final = "This endpoint is served only through the ss-tools distribution."


class OriginCheck:
    """ASGI middleware: HTTP requests pass only with the origin header's secret value (compared
    in constant time; the header given more than once is refused). Lifespan events pass."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        secret: str,
        header: str = ORIGIN_VERIFY_HEADER,
        exempt: frozenset[str] = frozenset(),
    ) -> None:
        """`exempt`: paths whose POSTs pass without the header (SnapStart's hooks, which
        Lambda Web Adapter calls from inside the environment and refuses from outside)."""
        if not secret:
            raise ValueError("the origin check needs a secret")
        self.app = app
        self.secret = secret.encode()
        self.header = header.lower().encode("latin-1")
        self.exempt = exempt

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or self.forwarded(scope) or self.exempted(scope):
            await self.app(scope, receive, send)
            return
        logger.warning(
            "request not forwarded by CloudFront refused",
            extra={"method": scope.get("method"), "path": scope.get("path")},
        )
        await error(403, ErrorCode.FORBIDDEN, NOT_THROUGH_CLOUDFRONT)(scope, receive, send)

    def exempted(self, scope: Scope) -> bool:
        """Whether the request is a POST to an exempt path."""
        return scope.get("method") == "POST" and scope.get("path") in self.exempt

    def forwarded(self, scope: Scope) -> bool:
        """Whether the request carries the secret once, exactly."""
        return carries_secret(scope, self.secret, self.header)


def carries_secret(
    scope: Scope, secret: str | bytes, header: str | bytes = ORIGIN_VERIFY_HEADER
) -> bool:
    """Whether the request carries `secret` in the origin header, once and exactly (compared in
    constant time): it came through CloudFront. Also what makes CloudFront's own headers about
    the viewer believable (`http.client_address`)."""
    expected = secret.encode() if isinstance(secret, str) else secret
    name = header.lower().encode("latin-1") if isinstance(header, str) else header
    values = [value for key, value in scope["headers"] if key == name]
    return bool(expected) and len(values) == 1 and hmac.compare_digest(values[0], expected)
