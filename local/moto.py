"""moto for the tests, `make bench` and `make eval`: real HTTP, AWS APIs in memory, resources from
template.yaml (in this process, or in one of its own)."""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
from moto.server import ThreadedMotoServer

from local.aws_resources import LocalResources, create_resources


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def moto_server() -> Iterator[str]:
    """A ThreadedMotoServer on a free port; yields its endpoint URL.

    moto keeps its state per process, not per server: it is reset when the server stops, so
    that a later server in the same test session (another module's) starts empty."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request otherwise
    port = free_port()
    previous = os.environ.get("MOTO_PORT")
    os.environ["MOTO_PORT"] = str(port)  # moto builds its own URLs (task tokens, callbacks) from it
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    try:
        yield endpoint
    finally:
        httpx.post(f"{endpoint}/moto-api/reset", timeout=30)
        server.stop()
        if previous is None:
            os.environ.pop("MOTO_PORT", None)
        else:
            os.environ["MOTO_PORT"] = previous


@contextmanager
def aws_stack() -> Iterator[tuple[str, LocalResources]]:
    """A moto server holding the template's tables and buckets."""
    with moto_server() as endpoint:
        yield endpoint, create_resources(endpoint)


@contextmanager
def moto_subprocess() -> Iterator[str]:
    """moto in its own process (benchmarks: it must not share the GIL with what is measured)."""
    port = free_port()
    process = subprocess.Popen(  # noqa: S603 (this interpreter, fixed arguments)
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "MOTO_PORT": str(port)},
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError("moto did not start") from None
                time.sleep(0.1)
        yield endpoint
    finally:
        process.terminate()
        process.wait(timeout=10)


@contextmanager
def aws_subprocess_stack() -> Iterator[tuple[str, LocalResources]]:
    """moto in its own process, holding the template's tables and buckets."""
    with moto_subprocess() as endpoint:
        yield endpoint, create_resources(endpoint)
