"""uvicorn in a background thread on loopback, for the local stack and the tests."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

import uvicorn


@contextmanager
def serve(
    app: Any,
    *,
    port: int = 0,
    http: Any = "h11",
    lifespan: Literal["on", "off"] = "off",
    startup_timeout_s: float = 10.0,
) -> Iterator[str]:
    """Runs `app` under uvicorn on 127.0.0.1 (`port` 0: a free one) and yields its base URL.

    `lifespan="on"` for apps with startup work (the chat app sizes its thread pool there).
    """
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        http=http,
        lifespan=lifespan,
        log_level="warning",
        timeout_graceful_shutdown=1,
        # The peer stays the socket's: the apps key attempt counters on it, and uvicorn would
        # otherwise take it from a loopback caller's own X-Forwarded-For.
        proxy_headers=False,
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
