"""`make bench`: figures for the agent runtime, measured side by side in one run. Asserts nothing.

- AWS calls per turn (DynamoDB and S3, by operation, counted with botocore event hooks) and
  checkpoint bytes written, for durability "exit" (the project's choice) and "async" (LangGraph's
  default), over the same three turns: a read, a write that asks for confirmation, the confirm.
- Per-token overhead of the event mapping (the agent streamed through ChatAgent) against the raw
  model (its chunk generator, without LangChain's callback manager): the slope of time over
  answer length, so fixed per-turn costs cancel out; 3 rounds, differences taken within a round.
- Cold import time of the agent module, without and with compiled bytecode.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from local.agent_stack import AgentStack, collect, confirming, sample_upstream
from local.moto import aws_subprocess_stack
from sstools_agent.agent.runtime import STREAM_MODES, ChatAgent, Durability
from sstools_agent.agent.scripted_replies import ReplyStreamingModel
from sstools_agent.domain.chat_events import ChatEvent, ConfirmationResult
from sstools_agent.settings import Settings

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD_10 = {
    "contextVersion": 1,
    "objectType": "dashboard",
    "objectId": "10",
    "envId": "ss-dev",
    "route": "/dashboards/10",
}
WRITE_OPERATIONS = {
    "PutItem",
    "UpdateItem",
    "DeleteItem",
    "BatchWriteItem",
    "PutObject",
    "TransactWriteItems",
}


class AwsCallCounter:
    """Counts calls and request bytes per service and operation, from botocore's own events."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.bytes_written = 0

    def attach(self, client: Any) -> None:
        client.meta.events.register("before-call.*.*", self._before_call)

    def _before_call(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        name = f"{model.service_model.service_name}.{model.name}"
        self.calls[name] += 1
        if model.name in WRITE_OPERATIONS:
            body = params.get("body", b"")
            self.bytes_written += len(body) if isinstance(body, bytes | str) else 0

    def take(self) -> tuple[Counter[str], int]:
        snapshot = (self.calls.copy(), self.bytes_written)
        self.calls.clear()
        self.bytes_written = 0
        return snapshot


async def measure_turns(
    stack: AgentStack, durability: Durability
) -> list[tuple[str, Counter[str], int]]:
    agent = stack.agent()
    agent.durability = durability
    counter = AwsCallCounter()
    saver = agent.graph.checkpointer
    counter.attach(saver.client)  # type: ignore[union-attr]
    if saver.storage.s3_client is not None:  # type: ignore[union-attr]
        counter.attach(saver.storage.s3_client)  # type: ignore[union-attr]
    conversation, context = uuid.uuid4().hex, stack.context("engineer", DASHBOARD_10)

    async def read() -> AsyncIterator[ChatEvent]:
        return agent.send(conversation, "какой статус у этого дашборда?", context)

    async def card() -> AsyncIterator[ChatEvent]:
        return agent.send(conversation, "задеплой дашборд 10 в staging", context)

    async def confirm() -> AsyncIterator[ChatEvent]:
        confirmed = await confirming(agent, conversation, context)
        counter.take()  # that read stands for the chat function's fingerprint check
        return agent.resolve(conversation, ConfirmationResult.CONFIRMED, confirmed)

    turns: list[tuple[str, Callable[[], Awaitable[AsyncIterator[ChatEvent]]]]] = [
        ("read: status of dashboard 10", read),
        ("write: deploy to staging (card)", card),
        ("confirm: deploy runs (journal in memory)", confirm),
    ]
    results = []
    for label, start in turns:
        await collect(await start())
        calls, written = counter.take()
        results.append((label, calls, written))
    return results


class LongAnswerModel(ReplyStreamingModel):
    """A scripted model answering with exactly `words` words (no tool)."""

    words: int = 100

    @property
    def _llm_type(self) -> str:
        return "long-answer"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> LongAnswerModel:
        return self  # it calls no tool

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        return AIMessage(content=" ".join(f"слово{i}" for i in range(self.words)))


async def time_raw(words: int, repeats: int) -> float:
    """The model alone: its own chunk generator (`_astream`), without LangChain's callback
    manager, which `astream` runs around every chunk and LangGraph's stream relies on."""
    model = LongAnswerModel(words=words)
    samples = []
    for _ in range(repeats):
        started = time.perf_counter()
        async for _chunk in model._astream([HumanMessage(content="x")]):
            pass
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


async def time_agent(stack: AgentStack, words: int, repeats: int) -> float:
    samples = []
    context = stack.context("analyst", DASHBOARD_10)
    for _ in range(repeats):
        agent: ChatAgent = stack.agent(LongAnswerModel(words=words))
        started = time.perf_counter()
        events = await collect(agent.send(uuid.uuid4().hex, "x", context))
        samples.append(time.perf_counter() - started)
        assert sum(1 for e in events if e.metadata.get("type") == "stream_token") == words
    return statistics.median(samples)


async def time_graph(stack: AgentStack, words: int, repeats: int) -> float:
    """The same turn through LangGraph's stream, parts consumed but not mapped to events."""
    samples = []
    context = stack.context("analyst", DASHBOARD_10)
    for _ in range(repeats):
        agent: ChatAgent = stack.agent(LongAnswerModel(words=words))
        started = time.perf_counter()
        async for _part in agent.graph.astream(
            {"messages": [HumanMessage(content="x")]},
            {"configurable": {"thread_id": uuid.uuid4().hex}},
            context=context,
            stream_mode=STREAM_MODES,
            version="v2",
            durability="exit",
        ):
            pass
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def cold_import_s(with_bytecode: bool) -> float:
    """Seconds to import the agent runtime in a fresh interpreter."""
    code = (
        "import time; t = time.perf_counter(); import sstools_agent.agent.runtime; "
        "print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        env = {
            **os.environ,
            "PYTHONPATH": f"{ROOT / 'layers/common'}:{ROOT}",
            "PYTHONPYCACHEPREFIX": cache,
        }
        if with_bytecode:
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            site = [p for p in sys.path if p.endswith("site-packages")]
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "compileall",
                    "-q",
                    "-j",
                    "0",
                    *site,
                    str(ROOT / "layers/common"),
                ],
                env=env,
                check=False,
                capture_output=True,
            )
        else:
            env["PYTHONDONTWRITEBYTECODE"] = "1"
        runs = [
            float(
                subprocess.run(
                    [sys.executable, "-c", code],
                    env=env,
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
            )
            for _ in range(3)
        ]
    return statistics.median(runs)


@contextmanager
def bench_stack() -> Iterator[AgentStack]:
    """moto in its own process and the sample upstream, as a bench's stack."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "bench")
    with aws_subprocess_stack() as (endpoint, _):
        settings = Settings(aws_endpoint_url=endpoint)
        with sample_upstream(settings) as upstream:
            yield AgentStack(
                settings.model_copy(update={"upstream_base_url": upstream.base_url}), upstream
            )


async def main() -> None:
    with bench_stack() as stack:
        upstream = stack.upstream
        print("== AWS calls per turn (stand-in model, DynamoDB and S3 in moto) ==")
        for durability in ("exit", "async"):
            upstream.reset()
            print(f"-- durability={durability}")
            for label, calls, written in await measure_turns(stack, durability):
                writes = sum(n for op, n in calls.items() if op.split(".")[1] in WRITE_OPERATIONS)
                detail = ", ".join(f"{op}={n}" for op, n in sorted(calls.items()))
                print(f"  {label:34} writes={writes:3}  bytes_written={written:7}  [{detail}]")
        print("\n== Per-token cost: raw model, LangGraph stream, ChatAgent (stream + mapping) ==")
        short, long, repeats = 50, 1050, 5

        async def slope(timer: Callable[[int], Awaitable[float]]) -> float:
            return (await timer(long) - await timer(short)) / (long - short)

        # Three rounds, each measuring the three side by side: a difference is taken within
        # a round (between rounds the machine's load moves more than the mapping costs)
        rounds = []
        for _ in range(3):
            raw = await slope(lambda n: time_raw(n, repeats))
            graph = await slope(lambda n: time_graph(stack, n, repeats))
            mapped = await slope(lambda n: time_agent(stack, n, repeats))
            rounds.append((raw, graph, mapped))

        def row(values: list[float], scale: float = 1e6) -> str:
            scaled = [v * scale for v in values]
            median = statistics.median(scaled)
            return f"{median:8.1f} ({min(scaled):.1f} to {max(scaled):.1f})"

        raws, graphs, maps = (list(column) for column in zip(*rounds, strict=True))
        print("  µs per token, median (range) of 3 rounds")
        print(f"  raw model (_astream, no callbacks): {row(raws)}")
        print(f"  LangGraph stream, no mapping      : {row(graphs)}")
        print(f"  ChatAgent events (mapped)         : {row(maps)}")
        mapping = [m - g for _, g, m in rounds]
        print(f"  event mapping alone               : {row(mapping)}")
        ratio = [m / r for r, _, m in rounds]
        print(f"  ratio ChatAgent / raw             : {row(ratio, 1)}")
    print("\n== Cold import of sstools_agent.agent.runtime (median of 3 fresh interpreters) ==")
    print(f"  without bytecode  : {cold_import_s(False):6.2f} s")
    print(f"  with bytecode     : {cold_import_s(True):6.2f} s")


if __name__ == "__main__":
    asyncio.run(main())
