"""Images and PDFs reach the model of the turn that attaches them, and never the checkpoint."""

from __future__ import annotations

import base64
import time
from collections.abc import Sequence
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from pydantic import Field

from local.sample_files import PNG
from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.runtime import ChatAgent
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.domain.attachment_content import model_attachment
from sstools_agent.domain.attachments import AttachmentInfo
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_calls import ResolvedToolCall
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.tool_runs import ToolCallOutcome, UpstreamCredentials

pytestmark = pytest.mark.anyio


class SeeingModel(StandinChatModel):
    """The stand-in model, remembering the messages of every call."""

    seen: list[list[BaseMessage]] = Field(default_factory=list)

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        self.seen.append(list(messages))
        return super().respond(messages)


class NoTools:
    async def call(
        self,
        call: ResolvedToolCall,
        credentials: UpstreamCredentials,
        request_id: str | None = None,
        *,
        timeout_s: float | None = None,
    ) -> ToolCallOutcome:
        raise AssertionError("no tool is called in these turns")


def context() -> AgentRunContext:
    principal = Principal("egor", Role.ENGINEER, ("engineer",), "user.jwt", int(time.time()) + 60)
    return AgentRunContext(principal=principal, ui_context=None, service_token="svc.jwt")


def images(message: BaseMessage) -> list[dict[str, Any]]:
    content = message.content
    return [] if isinstance(content, str) else [b for b in content if isinstance(b, dict)][1:]


async def test_an_image_goes_to_its_turns_model_calls_and_not_into_the_checkpoint(
    policy: ToolPolicy,
):
    model = SeeingModel()
    agent = ChatAgent(model, InMemorySaver(), policy, NoTools())
    chart = AttachmentInfo("a" * 32, "chart.png", "image/png", len(PNG))
    attached = model_attachment(chart, PNG, model_takes_files=True)

    _ = [e async for e in agent.send("t1", "посмотри файл", context(), [attached])]
    shown = [m for m in model.seen[-1] if isinstance(m, HumanMessage)][-1]
    assert images(shown) == [
        {"type": "image", "base64": base64.b64encode(PNG).decode(), "mime_type": "image/png"}
    ]

    state = await agent.graph.aget_state({"configurable": {"thread_id": "t1"}})
    (stored,) = [m for m in state.values["messages"] if isinstance(m, HumanMessage)]
    assert isinstance(stored.content, str)
    assert base64.b64encode(PNG).decode() not in stored.content
    assert "chart.png" in stored.content

    # The next turn's model calls carry the file's data block, not its bytes
    _ = [e async for e in agent.send("t1", "что в файле?", context())]
    assert all(not images(m) for m in model.seen[-1] if isinstance(m, HumanMessage))
