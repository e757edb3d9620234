"""Conversations survive langgraph's strict checkpoint serializer (LANGGRAPH_STRICT_MSGPACK, to
become its default): what this release writes holds only types that serializer loads, and what an
earlier release wrote (a Role in the capabilities result) still loads whole. Against moto.

Before, a follow-up after «что ты умеешь?» logged «Deserializing unregistered type
sstools_agent.domain.roles.Role», and with strict mode on the value was dropped from the history."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import empty_checkpoint
from langgraph_checkpoint_aws import DynamoDBSaver

from local.agent_stack import AgentStack, answer, collect
from sstools_agent.adapters.checkpointer import checkpoint_serde, checkpointer_from
from sstools_agent.domain.chat_events import EventType
from sstools_agent.domain.roles import Role
from sstools_agent.settings import Settings

SETTINGS_PAGE = {"contextVersion": 1, "route": "/settings", "envId": "ss-dev"}
# What langgraph's serializer logs when it meets a type outside its allowlist (lenient or strict)
REFUSED = ("unregistered type", "Blocked deserialization")


def serializer_complaints(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if any(w in r.getMessage() for w in REFUSED)]


@pytest.mark.anyio
async def test_a_follow_up_after_the_capabilities_answer_loads_everything(
    stack: AgentStack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="langgraph")
    thread = uuid.uuid4().hex
    context = stack.context("admin", SETTINGS_PAGE)
    await collect(stack.agent().send(thread, "что ты умеешь?", context))
    # another instance, as the next request may land on one: the history is read back
    follow_up = answer(await collect(stack.agent().send(thread, "а что с дашбордом 10?", context)))
    assert "10" in follow_up
    assert serializer_complaints(caplog) == []
    state = await stack.agent().graph.aget_state({"configurable": {"thread_id": thread}})
    capabilities = next(
        m for m in state.values["messages"] if isinstance(m, ToolMessage) and m.artifact
    )
    assert capabilities.artifact["output"]["role"] == "admin"


def test_what_an_earlier_release_wrote_loads_under_the_strict_serializer(
    stack_settings: Settings, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="langgraph")
    thread = uuid.uuid4().hex
    config: Any = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {
        "messages": [
            HumanMessage("что ты умеешь?"),
            AIMessage("", tool_calls=[{"name": "show_capabilities", "args": {}, "id": "c1"}]),
            ToolMessage(
                "...",
                tool_call_id="c1",
                artifact={"output": {"role": Role.ADMIN, "tools": []}},
            ),
        ]
    }
    # the earlier release's saver: the library's, with langgraph's lenient default serializer
    earlier = DynamoDBSaver(
        table_name=stack_settings.checkpoint_table,
        region_name=stack_settings.aws_region,
        endpoint_url=stack_settings.aws_endpoint_url,
        enable_checkpoint_compression=True,
    )
    earlier.put(config, checkpoint, {"step": 1}, {})

    loaded = checkpointer_from(stack_settings).get_tuple(config)

    assert loaded is not None
    stored = loaded.checkpoint["channel_values"]["messages"][-1]
    assert stored.artifact["output"]["role"] == "admin"
    assert serializer_complaints(caplog) == []


def test_a_type_outside_the_list_is_refused_today_not_after_an_upgrade(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING, logger="langgraph")
    serde = checkpoint_serde()
    stranger = serde.loads_typed(serde.dumps_typed({"kind": EventType.STREAM_TOKEN}))
    assert serializer_complaints(caplog), stranger
