"""The Gradio bench's client, run as a process of its own (`bench.bench_gradio`): alternates a
turn through `/api/agent/chat` and the same turn through the Gradio endpoint (the requests
`@gradio/client` makes per submit: the join, then the session's stream), and prints, as one JSON
line, each turn's [protocol, join s, first event s, stream tokens, elapsed s].

    python -m bench.gradio_client URL TOKEN TEXT REPEATS
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import uuid

import httpx

GRADIO = "/api/agent/gradio/gradio_api"


async def chat_turn(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], text: str
) -> list[object]:
    started, first, tokens = time.perf_counter(), None, 0
    body = {"message": text}
    async with client.stream("POST", f"{url}/api/agent/chat", json=body, headers=headers) as got:
        got.raise_for_status()
        async for line in got.aiter_lines():
            if line.startswith("data:"):
                first = first or time.perf_counter() - started
                tokens += '"stream_token"' in line
    return ["chat", 0.0, first or 0.0, tokens, time.perf_counter() - started]


async def gradio_turn(
    client: httpx.AsyncClient, url: str, headers: dict[str, str], text: str
) -> list[object]:
    session = uuid.uuid4().hex[:11]
    started, first, tokens = time.perf_counter(), None, 0
    join = {
        "data": [{"text": text, "files": []}, None, None, None],
        "event_data": None,
        "fn_index": 0,
        "trigger_id": None,
        "session_hash": session,
    }
    joined = await client.post(f"{url}{GRADIO}/queue/join", json=join, headers=headers)
    joined.raise_for_status()
    join_s = time.perf_counter() - started
    params = {"session_hash": session}
    async with client.stream(
        "GET", f"{url}{GRADIO}/queue/data", params=params, headers=headers
    ) as got:
        got.raise_for_status()
        async for line in got.aiter_lines():
            if '"process_generating"' in line:
                first = first or time.perf_counter() - started
                tokens += '"stream_token"' in line
    return ["gradio", join_s, first or 0.0, tokens, time.perf_counter() - started]


async def main(url: str, token: str, text: str, repeats: int) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(timeout=120) as client:
        await chat_turn(client, url, headers, text)  # warm: a connection, imports, tables
        await gradio_turn(client, url, headers, text)
        turns: list[list[object]] = []
        for _ in range(repeats):
            turns.append(await chat_turn(client, url, headers, text))
            turns.append(await gradio_turn(client, url, headers, text))
    print(json.dumps(turns))


if __name__ == "__main__":
    url, token, text, repeats = sys.argv[1:5]
    asyncio.run(main(url, token, text, int(repeats)))
