"""Tracing is an explicit option (`TRACING`, the template's `Tracing`): off, no Tracer and no X-Ray
SDK; on, the chat function puts the trace id Lambda Web Adapter passes as a request header where
the X-Ray SDK reads it on Lambda (sstools_agent/http/observability.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from sstools_agent.http.observability import (
    TRACE_ENVIRONMENT,
    LambdaTraceHeader,
    Observability,
)

pytestmark = pytest.mark.anyio
TRACE_ID = "Root=1-67891233-abcdef012345678912345678;Parent=53995c3f42cd8ad8;Sampled=1"
PROBE = """
import json, sys
from sstools_agent.http.observability import Observability
observability = Observability.of("chat")
print(json.dumps([observability.tracer is not None, "aws_xray_sdk.core" in sys.modules]))
"""


def started_with(tracing: str | None) -> list[bool]:
    """Whether a fresh process with `TRACING` so builds a Tracer, and imports the X-Ray SDK."""
    environment = {k: v for k, v in os.environ.items() if k != "TRACING"}
    environment["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
    if tracing is not None:
        environment["TRACING"] = tracing
    result = subprocess.run(
        [sys.executable, "-c", PROBE], env=environment, capture_output=True, text=True, check=True
    )
    return [part == "true" for part in result.stdout.strip().strip("[]").split(", ")]


@pytest.mark.parametrize(("tracing", "built"), [(None, False), ("false", False), ("true", True)])
def test_the_x_ray_sdk_is_imported_only_when_tracing_is_asked_for(tracing: str | None, built: bool):
    assert started_with(tracing) == [built, built]


@pytest.fixture
def trace_environment() -> Iterator[None]:
    before = os.environ.pop(TRACE_ENVIRONMENT, None)
    yield
    os.environ.pop(TRACE_ENVIRONMENT, None)
    if before is not None:
        os.environ[TRACE_ENVIRONMENT] = before


async def test_the_adapters_trace_header_is_where_the_sdk_reads_it(trace_environment: None):
    seen: list[str | None] = []

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        seen.append(os.environ.get(TRACE_ENVIRONMENT))
        await send({"type": "http.response.start", "status": 204, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    traced: Any = LambdaTraceHeader(app)
    transport = httpx.ASGITransport(app=traced)
    async with httpx.AsyncClient(transport=transport, base_url="http://chat") as client:
        await client.post("/api/agent/chat", headers={"X-Amzn-Trace-Id": TRACE_ID})
        await client.post("/api/agent/chat")  # no header: never the last invocation's trace
    assert seen == [TRACE_ID, None]


async def test_without_tracing_a_subsegment_and_a_handler_are_the_code_alone():
    observability = Observability.of("chat", tracing=False)
    async with observability.subsegment("prepare_turn"):
        pass

    def handler(event: dict[str, Any], context: Any) -> str:
        return "answered"

    assert observability.traced_handler(handler) is handler
