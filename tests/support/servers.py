"""Real servers for tests: uvicorn on a free loopback port, in a thread, stopped on exit."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn

from local.fault_injection import FaultInjectionMiddleware, FaultPlan, ResettingH11Protocol


@contextmanager
def serve(app: Any, *, http: Any = "h11", startup_timeout_s: float = 10.0) -> Iterator[str]:
    """Runs `app` under uvicorn on 127.0.0.1 and yields its base URL."""
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=0,
        http=http,
        lifespan="off",
        log_level="warning",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test-server", daemon=True)
    thread.start()
    deadline = time.monotonic() + startup_timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


async def echo_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    """Answers every request with what it received: method, path, query, headers, JSON body."""
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    await asyncio.sleep(0)
    payload = {
        "method": scope["method"],
        "path": scope["path"],
        "query": scope["query_string"].decode(),
        "headers": {k.decode(): v.decode() for k, v in scope["headers"]},
        "body": json.loads(body) if body else None,
    }
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(payload).encode()})


@contextmanager
def fault_server(plan: FaultPlan) -> Iterator[str]:
    """The echo app behind fault injection, with real TCP resets; yields its base URL."""
    app = FaultInjectionMiddleware(echo_app, plan)
    with serve(app, http=ResettingH11Protocol.bound_to(plan)) as base_url:
        yield base_url
