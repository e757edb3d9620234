"""The HTTP side's client, run as a process of its own (`bench.bench_chat`), so that the server's
process spends its CPU on the server alone: POSTs chat turns and prints, as one JSON line, each
turn's time to first event, stream tokens and elapsed seconds.

    python -m bench.http_client URL TOKEN BODY_JSON REPEATS CONCURRENCY
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from typing import Any

import httpx


async def one_turn(client: httpx.AsyncClient, url: str, token: str, body: Any) -> list[float]:
    started, first, tokens = time.perf_counter(), None, 0
    headers = {"Authorization": f"Bearer {token}"}
    async with client.stream("POST", f"{url}/api/agent/chat", json=body, headers=headers) as got:
        got.raise_for_status()
        async for line in got.aiter_lines():
            first = first or time.perf_counter() - started
            tokens += '"stream_token"' in line
    return [first or 0.0, tokens, time.perf_counter() - started]


async def main(url: str, token: str, body: Any, repeats: int, concurrency: int) -> None:
    async with httpx.AsyncClient(timeout=120) as client:
        # A connection and a warm client before the first timed turn (a 405: no turn runs)
        await client.get(f"{url}/api/agent/chat")
        turns: list[list[float]] = []
        for _ in range(repeats):
            turns += await asyncio.gather(
                *(one_turn(client, url, token, body) for _ in range(concurrency))
            )
    print(json.dumps(turns))


if __name__ == "__main__":
    url, token, body, repeats, concurrency = sys.argv[1:6]
    asyncio.run(main(url, token, json.loads(body), int(repeats), int(concurrency)))
