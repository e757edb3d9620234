"""Audit records leave the function before its response ends.

The audit sink sends in the background, in batches, so no response waits for the bus. On Lambda a
container is frozen as soon as an invocation's response is complete, and a record still held then
would wait, frozen, for the next invocation, or be gone with the container. So both functions'
apps run under `AuditFlush`: the last part of every HTTP response (a stream's end included) is sent
only once the sink has put what was emitted so far; and when the app ends without one (the client
went away mid-stream), the sink is flushed before the app returns.
"""

from __future__ import annotations

import anyio
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sstools_agent.domain.ports import AuditSink


class AuditFlush:
    """ASGI middleware: flushes `sink` before each response's last body message."""

    def __init__(self, app: ASGIApp, *, sink: AuditSink) -> None:
        self.app = app
        self.sink = sink

    async def _flush(self) -> None:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self.sink.flush)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                await self._flush()
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            await self._flush()
