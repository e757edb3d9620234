"""`make bench` (part 2): the chat function's HTTP stack against the agent called in-process.

Same run, same machine, same offline model answer (300 words, no tool):
- time to first event and tokens per second, in-process (ChatAgent.send) and through uvicorn + SSE
  + the conversation store (POST /api/agent/chat), with their ratio;
- 20 concurrent conversations through HTTP: p50 and p95 time to first event, and errors;
- the context prefetch's cost: time to first event through HTTP with and without it (the page
  names dashboard 10, so the turn first reads its summary from the upstream).
"""

from __future__ import annotations

import asyncio
import statistics
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx

from bench.bench_agent import DASHBOARD_10, LongAnswerModel
from local.servers import serve
from sstools_agent.agent.runtime import ChatAgent
from tests.support.agent_stack import (
    AgentStack,
    NoAudit,
    chat_app,
    local_aws_and_upstream,
    user_issuer,
)

WORDS = 300
REPEATS = 5
CONCURRENT = 20


async def in_process(stack: AgentStack, agent: ChatAgent) -> tuple[float, float]:
    """(time to first event, tokens per second) for ChatAgent.send, median of REPEATS."""
    firsts, rates = [], []
    context = stack.context("analyst", DASHBOARD_10)
    for _ in range(REPEATS):
        started, first, tokens = time.perf_counter(), None, 0
        async for event in agent.send(uuid.uuid4().hex, "x", context):
            first = first or time.perf_counter() - started
            tokens += event.metadata.get("type") == "stream_token"
        firsts.append(first or 0.0)
        rates.append(tokens / (time.perf_counter() - started))
    return statistics.median(firsts), statistics.median(rates)


async def data_lines(response: httpx.Response) -> AsyncIterator[str]:
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            yield line


async def one_http_turn(client: httpx.AsyncClient, url: str, token: str) -> tuple[float, float]:
    body: dict[str, Any] = {"message": "x", "ui_context": DASHBOARD_10}
    started, first, tokens = time.perf_counter(), None, 0
    async with client.stream(
        "POST", f"{url}/api/agent/chat", json=body, headers={"Authorization": f"Bearer {token}"}
    ) as response:
        response.raise_for_status()
        async for line in data_lines(response):
            first = first or time.perf_counter() - started
            tokens += '"stream_token"' in line
    if tokens != WORDS:
        raise RuntimeError(f"expected {WORDS} tokens, got {tokens}")
    return first or 0.0, tokens / (time.perf_counter() - started)


async def main() -> None:
    with local_aws_and_upstream("bench") as stack:
        settings = stack.settings
        # One agent per process, as the chat function's factory keeps it.
        app, _, shared_agent = chat_app(stack, LongAnswerModel(words=WORDS), NoAudit())
        token = user_issuer(settings).issue("bench", 3600, {"roles": ["analyst"]}).token
        with serve(app, lifespan="on") as url:
            local_first, local_rate = await in_process(stack, shared_agent)
            async with httpx.AsyncClient(timeout=120) as client:
                serial = [await one_http_turn(client, url, token) for _ in range(REPEATS)]
                http_first = statistics.median(f for f, _ in serial)
                http_rate = statistics.median(r for _, r in serial)
                print(f"== One conversation: {WORDS}-word answer, median of {REPEATS} ==")
                print(
                    f"  time to first event  in-process {local_first * 1000:7.1f} ms   "
                    f"HTTP {http_first * 1000:7.1f} ms   ratio {http_first / local_first:5.2f}"
                )
                print(
                    f"  tokens per second    in-process {local_rate:7.0f}      "
                    f"HTTP {http_rate:7.0f}      ratio {local_rate / http_rate:5.2f} (slowdown)"
                )
                results = await asyncio.gather(
                    *(one_http_turn(client, url, token) for _ in range(CONCURRENT)),
                    return_exceptions=True,
                )
        no_prefetch, _, _ = chat_app(
            stack, LongAnswerModel(words=WORDS), NoAudit(), prefetch_timeout_s=0
        )
        with serve(no_prefetch, lifespan="on") as plain_url:
            async with httpx.AsyncClient(timeout=120) as client:
                plain = [await one_http_turn(client, plain_url, token) for _ in range(REPEATS)]
        plain_first = statistics.median(f for f, _ in plain)
        ok = [r for r in results if isinstance(r, tuple)]
        firsts = sorted(f for f, _ in ok)
        errors = len(results) - len(ok)
        p95 = firsts[max(0, round(0.95 * len(firsts)) - 1)] if firsts else float("nan")
        print(f"\n== {CONCURRENT} concurrent conversations through HTTP ==")
        print(
            f"  time to first event  p50 {statistics.median(firsts) * 1000:7.1f} ms   "
            f"p95 {p95 * 1000:7.1f} ms   errors {errors}"
        )
        print("\n== Context prefetch: time to first event through HTTP, median of 5 ==")
        cost = (http_first - plain_first) * 1000
        print(
            f"  with prefetch {http_first * 1000:7.1f} ms   "
            f"without {plain_first * 1000:7.1f} ms   cost {cost:+6.1f} ms"
        )


if __name__ == "__main__":
    asyncio.run(main())
