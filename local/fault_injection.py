"""Fault injection for local HTTP servers: the sample upstream and the tests' fault server.

A `FaultPlan` holds, per method and path, the faults the next requests meet (an HTTP status, a
delay, a hang, a TCP reset) and counts every request the server received, so a test can prove how
often a client retried. `FaultInjectionMiddleware` applies the plan to any ASGI app and serves a
small control API under `/_control`; `ResettingH11Protocol` is the uvicorn protocol that can answer
with a real TCP reset, which no ASGI app can do. `serve_with_faults` runs an app behind the
middleware with that protocol: the one way the sample upstream and the tests' fault server are
served, so a reset planned under `make run` is the reset the tests rely on.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final
from urllib.parse import parse_qs

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from local.servers import serve

CONTROL_PREFIX: Final = "/_control"
MAX_HANG_S: Final = 120.0

Scope = dict[str, Any]
Message = dict[str, Any]


class FaultKind(StrEnum):
    STATUS = "status"
    """Answer with `status` instead of calling the app."""
    DELAY = "delay"
    """Wait `seconds`, then call the app."""
    HANG = "hang"
    """Never answer (until the client goes away, or `seconds`, at most two minutes)."""
    RESET = "reset"
    """Abort the TCP connection (RST) without answering."""


@dataclass
class Fault:
    """One planned fault; `times` is how many requests it hits (None: every request)."""

    kind: FaultKind
    status: int = 503
    seconds: float = 0.0
    times: int | None = 1


class FaultPlan:
    """Faults by (method, path), and a count of every request received. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: dict[tuple[str, str], list[Fault]] = {}
        self._counts: Counter[tuple[str, str]] = Counter()
        self.resets_connections = False
        """Whether a protocol that can reset connections serves this plan (see `bound_to`)."""

    def add(self, method: str, path: str, fault: Fault) -> None:
        """Queues `fault` for requests to `method path` (`*` matches any method).

        A RESET needs a server that can reset connections; without one it is refused here
        rather than met as a request that never ends.
        """
        if fault.kind is FaultKind.RESET and not self.resets_connections:
            raise ValueError("this server cannot reset connections (see serve_with_faults)")
        with self._lock:
            self._faults.setdefault((method.upper(), path), []).append(fault)

    def clear(self) -> None:
        """Forgets every fault and every count."""
        with self._lock:
            self._faults.clear()
            self._counts.clear()

    def requests(self, method: str | None = None, path: str | None = None) -> int:
        """How many requests arrived (optionally only for a method and/or a path)."""
        with self._lock:
            return sum(
                count
                for (m, p), count in self._counts.items()
                if (method is None or m == method.upper()) and (path is None or p == path)
            )

    def counts(self) -> dict[str, int]:
        """Every count, keyed `"METHOD /path"`."""
        with self._lock:
            return {f"{m} {p}": count for (m, p), count in self._counts.items()}

    def _pending(self, method: str, path: str) -> list[Fault] | None:
        for key in ((method, path), ("*", path)):
            faults = self._faults.get(key)
            if faults:
                return faults
        return None

    def take(self, method: str, path: str, *, only: FaultKind | None = None) -> Fault | None:
        """Counts the request and consumes the next fault for it (if of kind `only`, when given).

        With `only`, a request whose next fault is of another kind is neither counted nor served:
        the caller will see it again.
        """
        method = method.upper()
        with self._lock:
            faults = self._pending(method, path)
            fault = faults[0] if faults else None
            if only is not None and (fault is None or fault.kind is not only):
                return None
            self._counts[(method, path)] += 1
            if fault is None or faults is None:
                return None
            if fault.times is not None:
                fault.times -= 1
                if fault.times <= 0:
                    faults.pop(0)
            return fault


async def _send_json(send: Any, status: int, body: Any) -> None:
    payload = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": payload})


async def _read_body(receive: Any) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


class FaultInjectionMiddleware:
    """Applies a `FaultPlan` in front of an ASGI app and serves the control API."""

    def __init__(self, app: Any, plan: FaultPlan) -> None:
        self.app = app
        self.plan = plan

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path.startswith(CONTROL_PREFIX):
            await self._control(scope, receive, send)
            return
        fault = self.plan.take(scope["method"], path)
        if fault is None:
            await self.app(scope, receive, send)
        elif fault.kind is FaultKind.STATUS:
            await _send_json(send, fault.status, {"detail": f"injected fault {fault.status}"})
        elif fault.kind is FaultKind.DELAY:
            await asyncio.sleep(fault.seconds)
            await self.app(scope, receive, send)
        elif fault.kind is FaultKind.HANG:
            await self._hang(receive, fault.seconds or MAX_HANG_S)
        else:  # a RESET is served by the protocol; here only if it cannot: say so, do not hang
            await _send_json(send, 500, {"detail": "injected reset, but this server cannot reset"})

    @staticmethod
    async def _hang(receive: Any, seconds: float) -> None:
        try:
            async with asyncio.timeout(min(seconds, MAX_HANG_S)):
                while (await receive())["type"] != "http.disconnect":
                    pass
        except TimeoutError:
            pass

    async def _control(self, scope: Scope, receive: Any, send: Any) -> None:
        method, path = scope["method"], scope["path"].removeprefix(CONTROL_PREFIX)
        if path == "/faults" and method == "POST":
            try:
                spec = json.loads(await _read_body(receive))
                fault = Fault(
                    kind=FaultKind(spec["kind"]),
                    status=int(spec.get("status", 503)),
                    seconds=float(spec.get("seconds", 0.0)),
                    times=spec.get("times", 1),
                )
                self.plan.add(str(spec.get("method", "*")), str(spec["path"]), fault)
            except (ValueError, KeyError, TypeError) as error:
                await _send_json(send, 422, {"detail": f"bad fault: {error}"})
                return
            await _send_json(send, 201, {"queued": True})
        elif path == "/faults" and method == "DELETE":
            self.plan.clear()
            await _send_json(send, 200, {"cleared": True})
        elif path == "/requests" and method == "GET":
            query = parse_qs(scope.get("query_string", b"").decode())
            only_method = query.get("method", [None])[0]
            only_path = query.get("path", [None])[0]
            body = {
                "count": self.plan.requests(only_method, only_path),
                "by_endpoint": self.plan.counts(),
            }
            await _send_json(send, 200, body)
        else:
            await _send_json(send, 404, {"detail": "unknown control endpoint"})


class ResettingH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, able to answer a planned RESET with a real TCP RST.

    Bind a plan first: `ResettingH11Protocol.bound_to(plan)` returns a subclass for uvicorn's
    `Config(http=...)`.
    """

    plan: FaultPlan | None = None

    @classmethod
    def bound_to(cls, plan: FaultPlan) -> type[ResettingH11Protocol]:
        """A protocol class that consults `plan` (which from now on accepts RESET faults)."""
        plan.resets_connections = True
        return type("BoundResettingH11Protocol", (cls,), {"plan": plan})

    def data_received(self, data: bytes) -> None:
        """Aborts the connection when the request that starts here is planned to be reset."""
        if self.plan is not None and self.conn.their_state is h11.IDLE:
            request_line = data.split(b"\r\n", 1)[0].split(b" ")
            if len(request_line) == 3:
                method = request_line[0].decode("latin-1")
                path = request_line[1].decode("latin-1").split("?", 1)[0]
                if self.plan.take(method, path, only=FaultKind.RESET) is not None:
                    sock = self.transport.get_extra_info("socket")
                    if sock is not None:
                        # Linger 0: close() sends RST instead of FIN.
                        sock.setsockopt(
                            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
                        )
                    self.transport.abort()
                    return
        super().data_received(data)


@contextmanager
def serve_with_faults(app: FaultInjectionMiddleware, *, port: int = 0) -> Iterator[str]:
    """Runs `app` (an app behind fault injection) under uvicorn on 127.0.0.1 with the protocol
    that resets connections for its plan; yields the base URL (`port` 0: a free one)."""
    with serve(app, port=port, http=ResettingH11Protocol.bound_to(app.plan)) as base_url:
        yield base_url
