"""HTTP client for the ss-tools upstream API, used by every tool (httpx, async).

Semantics (docs/upstream-api.md states them for users):
- every request carries `Authorization: Bearer <service JWT>` and `X-User-JWT: <user JWT>`;
- a call has one deadline, the tool's timeout (30 s unless configured), counted from the start of
  the call and shared by its retry; this client is its only home. httpx's own connect, read,
  write and pool timeouts are set from what remains of it on every attempt, so the library's
  defaults (5 s) never decide, and an overall bound catches answers trickled in slowly;
- a read retries once, after a fixed delay (1 s), on a 5xx answer or a connection error, and only
  when the wait leaves time for another attempt; a write never retries;
- a call that reaches its deadline is a TOOL_TIMEOUT (never retried: the deadline is spent); for a
  write whose request may have left it reports «operation status unknown — check status»;
- 401 means the user's session expired («сессия истекла, обновите страницу»), never retried;
- 403 is FORBIDDEN; every other failure maps to a code of `ErrorCode`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any, Final
from urllib.parse import quote

import httpx

from sstools_agent.domain.catalog_types import (
    DEFAULT_RETRY_DELAY_S,
    DEFAULT_TOOL_TIMEOUT_S,
    Operation,
)
from sstools_agent.domain.errors import (
    SESSION_EXPIRED_MESSAGE,
    WRITE_STATUS_UNKNOWN_MESSAGE,
    ErrorCode,
)
from sstools_agent.domain.tool_calls import ResolvedToolCall
from sstools_agent.domain.tool_runs import ToolCallFailed, ToolCallOutcome, UpstreamCredentials

_MIN_RETRY_WINDOW_S: Final = 0.1
"""A read retries only if at least this much of its deadline is left after the retry delay."""
USER_JWT_HEADER: Final = "X-User-JWT"
REQUEST_ID_HEADER: Final = "X-Request-ID"

# Upstream HTTP status -> error code; anything unlisted is a TOOL_FAILURE.
_CODE_BY_STATUS: Final[Mapping[int, ErrorCode]] = {
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    400: ErrorCode.VALIDATION_ERROR,
    422: ErrorCode.VALIDATION_ERROR,
}
# A 503 says the request was not taken; other 5xx after a write leave its fate unknown.
_NOT_PROCESSED_STATUSES: Final = frozenset({503})
# Errors raised before the request left this process: nothing can have happened upstream.
_NOT_SENT_ERRORS: Final = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
_NOT_SENT_TIMEOUTS: Final = (httpx.ConnectTimeout, httpx.PoolTimeout)


class _Retryable(Exception):
    """An attempt that failed in a way a read may retry."""

    def __init__(self, failure: ToolCallFailed) -> None:
        super().__init__(failure.detail)
        self.failure = failure


def _upstream_detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or response.reason_phrase
    if isinstance(body, dict):
        detail = body.get("detail") or body.get("message") or body
        return str(detail)[:500]
    return str(body)[:500]


class UpstreamToolClient:
    """Runs resolved tool calls against the ss-tools upstream over HTTP."""

    def __init__(
        self,
        base_url: str,
        *,
        default_timeout_s: float = DEFAULT_TOOL_TIMEOUT_S,
        retry_delay_s: float = DEFAULT_RETRY_DELAY_S,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._default_timeout_s = default_timeout_s
        self._retry_delay_s = retry_delay_s
        self._base_url, self._transport = base_url, transport
        self._http = self._client()

    def _client(self) -> httpx.AsyncClient:
        # Every request sets its own timeouts from its call's deadline; this default only makes
        # sure nothing ever runs on httpx's 5 s.
        return httpx.AsyncClient(
            base_url=self._base_url,
            transport=self._transport,
            timeout=httpx.Timeout(self._default_timeout_s),
        )

    def renew_after_restore(self) -> None:
        """A new connection pool: connections opened before a SnapStart snapshot are sockets
        every restored environment would share. The old pool is dropped, not closed: closing
        is async, and its sockets are dead after a restore anyway."""
        self._http = self._client()

    async def aclose(self) -> None:
        """Closes the connection pool."""
        await self._http.aclose()

    def _request(
        self,
        call: ResolvedToolCall,
        credentials: UpstreamCredentials,
        request_id: str | None,
        timeout: httpx.Timeout,
    ) -> httpx.Request:
        spec = call.spec
        if spec.method is None or spec.path is None:
            raise ValueError(f"{spec.name} is answered by the agent, not the upstream")
        arguments = call.arguments
        placeholders = set(spec.path_placeholders)
        values = {**arguments, "env_id": call.environment.env_id if call.environment else ""}
        path = spec.path.format_map(
            {name: quote(str(values[name]), safe="") for name in placeholders}
        )
        rest = {k: v for k, v in arguments.items() if k not in placeholders and v is not None}
        headers = {
            "Authorization": f"Bearer {credentials.service_token}",
            USER_JWT_HEADER: credentials.user_token,
        }
        if request_id:
            headers[REQUEST_ID_HEADER] = request_id
        if spec.method == "GET":
            return self._http.build_request(
                "GET", path, params=rest, headers=headers, timeout=timeout
            )
        if call.environment is not None and spec.environment_argument is None:
            rest["env_id"] = call.environment.env_id
        return self._http.build_request("POST", path, json=rest, headers=headers, timeout=timeout)

    def _failure_for_status(
        self, call: ResolvedToolCall, response: httpx.Response, attempt: int
    ) -> ToolCallFailed:
        status = response.status_code
        if status == 401:
            return ToolCallFailed(
                ErrorCode.UNAUTHORIZED,
                SESSION_EXPIRED_MESSAGE,
                attempts=attempt,
                status_code=status,
            )
        code = _CODE_BY_STATUS.get(status, ErrorCode.TOOL_FAILURE)
        detail = f"upstream answered {status}: {_upstream_detail(response)}"
        unknown = (
            call.operation is Operation.WRITE
            and status >= 500
            and status not in _NOT_PROCESSED_STATUSES
        )
        if unknown:
            detail = f"{detail}; {WRITE_STATUS_UNKNOWN_MESSAGE}"
        return ToolCallFailed(
            code, detail, attempts=attempt, status_code=status, status_unknown=unknown
        )

    @staticmethod
    def _timed_out(
        call: ResolvedToolCall, timeout_s: float, attempt: int, *, sent: bool
    ) -> ToolCallFailed:
        """The deadline passed; a write whose request may have left has an unknown fate."""
        unknown = sent and call.operation is Operation.WRITE
        detail = f"no answer within {timeout_s:g} s"
        if unknown:
            detail = f"{detail}; {WRITE_STATUS_UNKNOWN_MESSAGE}"
        elif not sent:
            detail = f"{detail}; the request never left, nothing was changed"
        return ToolCallFailed(
            ErrorCode.TOOL_TIMEOUT, detail, attempts=attempt, status_unknown=unknown
        )

    async def _attempt(
        self,
        call: ResolvedToolCall,
        request: httpx.Request,
        deadline: float,
        timeout_s: float,
        attempt: int,
    ) -> httpx.Response:
        """One attempt, bounded by the call's deadline (an event-loop time)."""
        is_write = call.operation is Operation.WRITE
        try:
            # httpx's timeouts bound each connect, read and write; this bounds the whole answer.
            async with asyncio.timeout_at(deadline):
                response = await self._http.send(request)
                await response.aread()
        except _NOT_SENT_TIMEOUTS:
            raise self._timed_out(call, timeout_s, attempt, sent=False) from None
        except (TimeoutError, httpx.TimeoutException):
            raise self._timed_out(call, timeout_s, attempt, sent=True) from None
        except _NOT_SENT_ERRORS as error:
            failure = ToolCallFailed(
                ErrorCode.TOOL_FAILURE,
                f"upstream unreachable ({type(error).__name__}); nothing was changed",
                attempts=attempt,
            )
            raise _Retryable(failure) from None
        except httpx.TransportError as error:
            detail = f"connection to the upstream failed ({type(error).__name__})"
            if is_write:
                detail = f"{detail}; {WRITE_STATUS_UNKNOWN_MESSAGE}"
            failure = ToolCallFailed(
                ErrorCode.TOOL_FAILURE, detail, attempts=attempt, status_unknown=is_write
            )
            raise _Retryable(failure) from None
        if response.status_code >= 500:
            raise _Retryable(self._failure_for_status(call, response, attempt))
        if response.status_code >= 400:
            raise self._failure_for_status(call, response, attempt)
        return response

    async def call(
        self,
        call: ResolvedToolCall,
        credentials: UpstreamCredentials,
        request_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> ToolCallOutcome:
        """Runs the call once, or twice for a read that met a transient failure and has time
        left, all within one deadline: the tool's timeout, or `timeout_s` when shorter."""
        tool_timeout_s = call.spec.timeout_s or self._default_timeout_s
        timeout_s = tool_timeout_s if timeout_s is None else min(tool_timeout_s, timeout_s)
        max_attempts = 2 if call.may_retry else 1
        loop = asyncio.get_running_loop()
        started = time.perf_counter()
        deadline = loop.time() + timeout_s
        attempt = 1
        while True:
            remaining = deadline - loop.time()
            request = self._request(call, credentials, request_id, httpx.Timeout(remaining))
            try:
                response = await self._attempt(call, request, deadline, timeout_s, attempt)
            except _Retryable as retryable:
                # A retry needs the wait and then some time to answer; without it, the first
                # failure is the truer report than a timeout of an attempt that had no chance.
                time_left = deadline - loop.time() - self._retry_delay_s
                if attempt >= max_attempts or time_left < _MIN_RETRY_WINDOW_S:
                    raise retryable.failure from None
                attempt += 1
                await asyncio.sleep(self._retry_delay_s)
                continue
            break
        try:
            output: Any = response.json()
        except ValueError:
            output = response.text
        return ToolCallOutcome(output, response.status_code, attempt, time.perf_counter() - started)
