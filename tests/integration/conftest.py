"""Session-wide real parts: a moto server with the template's resources, the sample upstream."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Final

import pytest

from local.agent_stack import (
    AgentStack,
    SampleUpstream,
    chat_app,
    sample_upstream,
    stack_over,
)
from local.moto import aws_stack
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.settings import Settings
from tests.support.chat_server import ChatServer

SUITE_TOOL_TIMEOUT_S: Final = 4.0
"""The suite's tool timeout: short, so a test of a hung upstream waits seconds, not the product's
30; long enough that a read on a busy 2-core CI machine answers (at 2 s, one did not, and a test
of an answer's facts failed on the timeout instead)."""


@pytest.fixture(scope="session")
def aws_endpoint() -> Iterator[str]:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, "testing")
    with aws_stack() as (endpoint, _):
        yield endpoint


@pytest.fixture(scope="session")
def stack_settings(aws_endpoint: str) -> Settings:
    return Settings(
        aws_endpoint_url=aws_endpoint, tool_retry_delay_s=0.05, tool_timeout_s=SUITE_TOOL_TIMEOUT_S
    )


@pytest.fixture(scope="session")
def upstream_server(stack_settings: Settings) -> Iterator[SampleUpstream]:
    with sample_upstream(stack_settings) as upstream:
        yield upstream


@pytest.fixture
def stack(stack_settings: Settings, upstream_server: SampleUpstream) -> AgentStack:
    upstream_server.reset()
    return stack_over(stack_settings, upstream_server)


@pytest.fixture(scope="module")
def module_stack(stack_settings: Settings, upstream_server: SampleUpstream) -> AgentStack:
    """A stack for a module whose tests share one chat server (each test resets the upstream:
    `fresh_upstream`)."""
    return stack_over(stack_settings, upstream_server)


@pytest.fixture
def fresh_upstream(upstream_server: SampleUpstream) -> SampleUpstream:
    """The sample upstream as seeded, with no faults and no requests counted."""
    upstream_server.reset()
    return upstream_server


@pytest.fixture(scope="module")
def shared_chat(module_stack: AgentStack) -> Iterator[ChatServer]:
    """One chat server (the stand-in model, audit in memory) for a module whose tests use
    conversations of their own; a module may override it (another model, say)."""
    audit = MemoryAuditSink()
    app, store, _ = chat_app(module_stack, StandinChatModel(), audit)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, module_stack, store, audit)


@pytest.fixture
def chat(shared_chat: ChatServer, fresh_upstream: SampleUpstream) -> ChatServer:
    """The module's shared server, with the upstream as seeded and no audit records yet."""
    shared_chat.audit.records.clear()
    return shared_chat
