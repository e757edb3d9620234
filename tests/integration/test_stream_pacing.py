"""The chat's stream through uvicorn while nothing happens: heartbeats (`: keepalive` comment
lines) keep it alive before the first event and during a slow tool, and the events are all there
after them (chat/pacing.py; CloudFront closes an origin response silent for 60 s)."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import httpx
import pytest

from local.agent_stack import AgentStack, SampleUpstream, chat_app
from local.fault_injection import Fault, FaultKind
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from tests.support.chat_http import STATUS
from tests.support.chat_server import ChatServer
from tests.support.models import ScriptedChatModel

pytestmark = pytest.mark.anyio
HEARTBEAT_S = 0.2
SEARCH = ("GET", "/api/environments/ss-dev/dashboards")


@pytest.fixture
def chat(stack: AgentStack, fresh_upstream: SampleUpstream) -> Iterator[ChatServer]:
    stack.settings = stack.settings.model_copy(update={"stream_heartbeat_s": HEARTBEAT_S})
    audit = MemoryAuditSink()
    app, store, _ = chat_app(stack, ScriptedChatModel(), audit)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, stack, store, audit)


async def test_a_slow_page_summary_is_bridged_by_heartbeats_then_the_answer_streams(chat):
    # The page's object summary (the prefetch) takes a second to come back
    chat.stack.upstream.plan.add(*SEARCH, Fault(FaultKind.DELAY, seconds=1.0, times=None))
    lines: list[tuple[float, str]] = []
    started = time.monotonic()
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            "POST", f"{chat.url}/api/agent/chat", json=STATUS, headers=chat.headers("analyst")
        ) as response,
    ):
        assert response.status_code == 200
        async for line in response.aiter_lines():
            if line:
                lines.append((time.monotonic() - started, line))
    heartbeats = [at for at, line in lines if line == ": keepalive"]
    data = [line for _, line in lines if line.startswith("data: ")]
    first_data_at = next(at for at, line in lines if line.startswith("data: "))
    # Heartbeats while the summary was awaited, none more often than the interval allows
    assert len([at for at in heartbeats if at < first_data_at]) >= 2
    assert all(b - a >= HEARTBEAT_S * 0.5 for a, b in itertools.pairwise(heartbeats))
    # And the whole answer after them, ending as every stream does
    assert '"stream_end"' in data[-1]
    assert any('"stream_token"' in line for line in data)
