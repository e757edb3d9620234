"""The tests' fault server: an echo app behind fault injection, with real TCP resets."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from local.fault_injection import FaultInjectionMiddleware, FaultPlan, serve_with_faults


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
    with serve_with_faults(app) as base_url:
        yield base_url
