"""`make bench` (part 2): the chat function's streaming path against the same turn in-process.

Both sides do the same work: the chat service (`ChatService.open` and `events`: the turn service
with its conversation store, checkpoints and event writer, against moto in a process of its own),
a scripted model answering 300 words, the service token minted once and reused (as the chat
function's client caches it), no page context (no prefetch on either side). The HTTP side adds
what the chat function adds: uvicorn (uvloop, httptools), the SSE encoding and the pacing; and its
client runs in a process of its own (`bench.http_client`), so the CPU this process spends is the
server's alone. Each measurement starts on fresh tables (a new moto server: moto's Query slows as
a table grows). Three rounds; each figure and ratio is printed as its median and range.

Then 20 conversations at once through HTTP: time to first event, p50 and p95.
"""

from __future__ import annotations

import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bench.bench_agent import LongAnswerModel
from functions.chat.app import create_app
from local.agent_stack import AgentStack, local_aws_and_upstream, minted_once, user_issuer
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.chat.request import ChatRequestBody
from sstools_agent.chat.service import ChatService
from sstools_agent.domain.chat_events import StreamToken
from sstools_agent.domain.identity import Principal
from sstools_agent.wiring.chat import ChatDeps, build_chat

ROOT = Path(__file__).resolve().parents[1]
WORDS = 300
REPEATS = 5
ROUNDS = 3
CONCURRENT = 20
BODY = {"message": "x"}


@dataclass(frozen=True)
class Side:
    """One side's turns of one round: medians over its turns."""

    first_event_s: float
    tokens_per_s: float
    cpu_per_token_s: float
    """This process's CPU time over a turn, per token it streamed (median of the turns)."""


def deps_for(stack: AgentStack) -> ChatDeps:
    """The chat function's composition: the 300-word model, an in-memory audit, a cached token."""
    deps = build_chat(stack.settings)
    agent = stack.agent(LongAnswerModel(words=WORDS))
    return replace(
        deps,
        agent=lambda: agent,
        audit=MemoryAuditSink(),
        service_token=minted_once(stack.settings),
    )


def token_for(stack: AgentStack) -> str:
    return user_issuer(stack.settings).issue("bench", 3600, {"roles": ["analyst"]}).token


async def in_process() -> Side:
    """REPEATS turns through the chat service, on fresh tables."""
    with local_aws_and_upstream("bench") as stack:
        deps = deps_for(stack)
        service = ChatService(
            deps.turns,
            environments=deps.environments,
            audit=deps.audit,
            service_token=deps.service_token,
        )
        principal = deps.verifier.verify(token_for(stack))
        await one_service_turn(service, principal)  # warm: imports, connections
        firsts, rates, cpu = [], [], []
        for _ in range(REPEATS):
            settled()
            cpu_started, started = time.process_time(), time.perf_counter()
            opened = await service.open(principal, ChatRequestBody(**BODY), request_id="bench")
            first, count = None, 0
            async for _, event in service.events(opened):
                first = first or time.perf_counter() - started
                count += isinstance(event, StreamToken)
            elapsed = time.perf_counter() - started
            cpu.append((time.process_time() - cpu_started) / checked(count))
            firsts.append(first or 0.0)
            rates.append(count / elapsed)
        return Side(statistics.median(firsts), statistics.median(rates), statistics.median(cpu))


def settled() -> None:
    """Before each turn of either side: the garbage of the last one collected, and what lives
    now kept out of later collections (a full collection of this heap, landing in one turn,
    cost it more than the turn itself)."""
    gc.collect()
    gc.freeze()


async def one_service_turn(service: ChatService, principal: Principal) -> None:
    opened = await service.open(principal, ChatRequestBody(**BODY), request_id="warm")
    async for _ in service.events(opened):
        pass


def checked(tokens: int) -> int:
    if tokens != WORDS:
        raise RuntimeError(f"expected {WORDS} tokens, got {tokens}")
    return tokens


def client_turns(url: str, token: str, repeats: int, concurrency: int) -> list[list[float]]:
    """The turns as the client process saw them: [first event s, tokens, elapsed s] each."""
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.http_client",
            url,
            token,
            json.dumps(BODY),
            str(repeats),
            str(concurrency),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    turns: list[list[float]] = json.loads(result.stdout.strip().splitlines()[-1])
    return turns


def through_http(concurrency: int = 1) -> tuple[Side, list[list[float]]]:
    """REPEATS turns (of `concurrency` conversations at once) through the chat function's app
    under uvicorn, on fresh tables, the client in its own process."""
    with local_aws_and_upstream("bench") as stack:
        token = token_for(stack)
        app = create_app(deps_for(stack))
        with serve(app, lifespan="on") as url:
            client_turns(url, token, 1, 1)  # warm
            turns, cpu = [], []
            for _ in range(REPEATS):
                settled()
                cpu_started = time.process_time()
                these = client_turns(url, token, 1, concurrency)
                tokens = sum(checked(int(count)) for _, count, _ in these)
                cpu.append((time.process_time() - cpu_started) / tokens)
                turns += these
    side = Side(
        statistics.median(first for first, _, _ in turns),
        statistics.median(count / elapsed for _, count, elapsed in turns),
        statistics.median(cpu),
    )
    return side, turns


def spread(values: Sequence[float], scale: float = 1.0, digits: int = 2) -> str:
    """median (min-max)"""
    scaled = [value * scale for value in values]
    return (
        f"{statistics.median(scaled):.{digits}f} "
        f"({min(scaled):.{digits}f}-{max(scaled):.{digits}f})"
    )


async def main() -> None:
    local: list[Side] = []
    http: list[Side] = []
    for number in range(1, ROUNDS + 1):
        local.append(await in_process())
        http.append(through_http()[0])
        print(
            f"  round {number}: CPU per token in-process {local[-1].cpu_per_token_s * 1e6:6.1f} µs,"
            f" HTTP {http[-1].cpu_per_token_s * 1e6:6.1f} µs"
        )
    print(
        f"== One conversation: a {WORDS}-word answer, the chat service in-process against the "
        f"chat function through HTTP; median of {REPEATS} turns, {ROUNDS} rounds: "
        "median (range) =="
    )
    rows = [
        ("time to first event, ms", "first_event_s", 1000, 1),
        ("tokens per second", "tokens_per_s", 1, 0),
        ("server CPU per token, µs", "cpu_per_token_s", 1e6, 1),
    ]
    for label, field, scale, digits in rows:
        ours = [getattr(side, field) for side in local]
        theirs = [getattr(side, field) for side in http]
        print(
            f"  {label:26} in-process {spread(ours, scale, digits):>22}   "
            f"HTTP {spread(theirs, scale, digits):>22}"
        )
    cpu_ratio = [h.cpu_per_token_s / s.cpu_per_token_s for s, h in zip(local, http, strict=True)]
    rate_ratio = [h.tokens_per_s / s.tokens_per_s for s, h in zip(local, http, strict=True)]
    print(f"  HTTP / in-process, CPU per token : {spread(cpu_ratio)}   (goal <= 1.5)")
    print(f"  HTTP / in-process, tokens/s      : {spread(rate_ratio)}   (goal >= 0.6)")
    _, turns = through_http(CONCURRENT)
    firsts = sorted(first for first, _, _ in turns)
    p95 = firsts[max(0, round(0.95 * len(firsts)) - 1)]
    print(f"\n== {CONCURRENT} conversations at once through HTTP, {REPEATS} times ==")
    print(
        f"  time to first event  p50 {statistics.median(firsts) * 1000:7.1f} ms   "
        f"p95 {p95 * 1000:7.1f} ms"
    )


if __name__ == "__main__":
    asyncio.run(main())
