"""Where a request came from, as far as the infrastructure vouches for it: the source the attempt
counters key on (the service-token limiter, the sampled audit of failed sign-ins).

Never a header the caller writes. `X-Forwarded-For` is the caller's text followed by what each
proxy appended: behind CloudFront its last entry is an edge server shared by many viewers, and
without a proxy the whole header is the caller's. In order:

1. behind CloudFront: `CloudFront-Viewer-Address` (the viewer's address and port, added by
   CloudFront), trusted only when the request also carries the origin secret in
   `X-Origin-Verify`, which proves CloudFront sent it (`http.origin`);
2. straight to API Gateway (the REST API under Mangum): the `sourceIp` of the Lambda event's
   request context, which API Gateway writes from the connection;
3. anywhere else (uvicorn locally and in the tests): the socket's peer. Servers must not rewrite
   it from proxy headers (uvicorn: `--no-proxy-headers`, `local.servers.serve`).

Anything that is not an IP address is `UNKNOWN_SOURCE`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from pydantic import SecretStr
from starlette.requests import Request
from starlette.types import Scope

from sstools_agent.http.origin import carries_secret

VIEWER_ADDRESS_HEADER: Final = "CloudFront-Viewer-Address"
"""`<ip>:<port>` of the viewer's connection to CloudFront (IPv6 without brackets)."""
LAMBDA_EVENT_SCOPE_KEY: Final = "aws.event"
"""Where Mangum puts the Lambda event in the ASGI scope."""
UNKNOWN_SOURCE: Final = "unknown"


@dataclass(frozen=True, slots=True)
class ClientAddresses:
    """The source of a request. `origin_secret`: the value CloudFront sends in `X-Origin-Verify`
    (`ORIGIN_VERIFY_SECRET`); without it no viewer address is believed."""

    origin_secret: str | None = None

    @classmethod
    def trusting(cls, origin_verify_secret: SecretStr | None) -> ClientAddresses:
        """From the `ORIGIN_VERIFY_SECRET` setting (unset: no viewer address is believed)."""
        secret = origin_verify_secret.get_secret_value() if origin_verify_secret else None
        return cls(secret or None)

    def of(self, request: Request) -> str:
        """The vouched-for address of `request`'s client, normalised, or `UNKNOWN_SOURCE`."""
        for candidate in self._candidates(request.scope):
            try:
                return str(ipaddress.ip_address(candidate))
            except ValueError:
                continue
        return UNKNOWN_SOURCE

    def _candidates(self, scope: Scope) -> Iterator[str]:
        if self.origin_secret and carries_secret(scope, self.origin_secret):
            viewers = _header_values(scope, VIEWER_ADDRESS_HEADER)
            if len(viewers) == 1:
                yield viewers[0].rpartition(":")[0]
        event = scope.get(LAMBDA_EVENT_SCOPE_KEY)
        if isinstance(event, dict):
            yield _source_ip(event)
        client = scope.get("client")
        if client:
            yield str(client[0])


def _header_values(scope: Scope, name: str) -> list[str]:
    wanted = name.lower().encode("latin-1")
    return [value.decode("latin-1").strip() for key, value in scope["headers"] if key == wanted]


def _source_ip(event: dict[str, Any]) -> str:
    """`requestContext.identity.sourceIp` (API Gateway REST, payload 1.0) or
    `requestContext.http.sourceIp` (HTTP API and function URLs, 2.0)."""
    context = event.get("requestContext") or {}
    for part in ("identity", "http"):
        source = (context.get(part) or {}).get("sourceIp")
        if isinstance(source, str):
            return source
    return ""
