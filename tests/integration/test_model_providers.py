"""The bedrock and openai providers wired through the whole agent, without the network.

Bedrock: the real ChatBedrockConverse on a boto3 client whose converse_stream answers come from a
botocore Stubber. OpenAI: the real langchain-openai client against a local OpenAI-compatible
server (uvicorn) that streams a tool call, then an answer.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from local.agent_stack import AgentStack, answer, collect, of_type
from local.servers import serve
from sstools_agent.agent.models import build_chat_model
from sstools_agent.domain.chat_events import EventType

pytestmark = pytest.mark.anyio
DASHBOARD_10 = {"contextVersion": 1, "objectType": "dashboard", "objectId": "10", "envId": "ss-dev"}


class StubbedEventStream(dict[str, Any]):
    """Stands in for botocore's EventStream in a stubbed converse_stream answer.

    The Stubber validates a response against the operation's shape, which types the stream as a
    structure (a dict); the caller then iterates it for events. The first iteration is the
    Stubber's validation and sees an empty structure; later ones yield the events.
    """

    def __init__(self, events: list[dict[str, Any]]) -> None:
        super().__init__()
        self._events = events
        self._validated = False

    def __iter__(self) -> Iterator[Any]:
        if not self._validated:
            self._validated = True
            return iter(())
        return iter(self._events)


def tool_use_events(tool: str, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        {
            "contentBlockStart": {
                "contentBlockIndex": 0,
                "start": {"toolUse": {"toolUseId": "tu-1", "name": tool}},
            }
        },
        {
            "contentBlockDelta": {
                "contentBlockIndex": 0,
                "delta": {"toolUse": {"input": json.dumps(arguments)}},
            }
        },
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "tool_use"}},
    ]


def text_events(words: list[str]) -> list[dict[str, Any]]:
    return [
        {"messageStart": {"role": "assistant"}},
        *({"contentBlockDelta": {"contentBlockIndex": 0, "delta": {"text": w}}} for w in words),
        {"contentBlockStop": {"contentBlockIndex": 0}},
        {"messageStop": {"stopReason": "end_turn"}},
    ]


async def test_bedrock_converse_streams_a_tool_call_through_the_agent(stack: AgentStack):
    client = boto3.client("bedrock-runtime", region_name="eu-central-1")
    stubber = Stubber(client)
    stubber.add_response(
        "converse_stream",
        {
            "stream": StubbedEventStream(
                tool_use_events("search_dashboards", {"dashboard_ids": [10]})
            )
        },
    )
    stubber.add_response(
        "converse_stream",
        {"stream": StubbedEventStream(text_events(["Дашборд ", "10 ", "в ", "порядке."]))},
    )
    settings = stack.settings.model_copy(update={"model_provider": "bedrock"})
    model = build_chat_model(settings, bedrock_client=client)
    with stubber:
        events = await collect(
            stack.agent(model).send(
                uuid.uuid4().hex, "статус?", stack.context("analyst", DASHBOARD_10)
            )
        )
    assert [e["tool"] for e in of_type(events, EventType.TOOL_END)] == ["search_dashboards"]
    assert [e["token"] for e in of_type(events, EventType.STREAM_TOKEN)] == [
        "Дашборд ",
        "10 ",
        "в ",
        "порядке.",
    ]
    stubber.assert_no_pending_responses()


async def test_bedrock_failure_is_llm_unavailable(stack: AgentStack):
    client = boto3.client("bedrock-runtime", region_name="eu-central-1")
    stubber = Stubber(client)
    stubber.add_client_error("converse_stream", "ThrottlingException", "Rate exceeded", 429)
    settings = stack.settings.model_copy(update={"model_provider": "bedrock"})
    with stubber:
        events = await collect(
            stack.agent(build_chat_model(settings, bedrock_client=client)).send(
                uuid.uuid4().hex, "статус?", stack.context("analyst", DASHBOARD_10)
            )
        )
    assert events[-1].metadata["code"] == "LLM_UNAVAILABLE"


class OpenAICompatibleServer:
    """Streams chat.completions chunks: a tool call first, then an answer; records requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []

    def chunks(self, request: dict[str, Any]) -> list[dict[str, Any]]:
        base = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": request.get("model", "local"),
        }
        if request["messages"][-1]["role"] == "tool":
            deltas: list[dict[str, Any]] = [{"role": "assistant", "content": ""}] + [
                {"content": w} for w in ("Statuses ", "are ", "fine.")
            ]
            finish = "stop"
        else:
            call = {
                "index": 0,
                "id": "call_1",
                "type": "function",
                "function": {"name": "search_dashboards", "arguments": ""},
            }
            deltas = [
                {"role": "assistant", "tool_calls": [call]},
                {"tool_calls": [{"index": 0, "function": {"arguments": '{"dashboard_'}}]},
                {"tool_calls": [{"index": 0, "function": {"arguments": 'ids": [10]}'}}]},
            ]
            finish = "tool_calls"
        out = [
            base | {"choices": [{"index": 0, "delta": d, "finish_reason": None}]} for d in deltas
        ]
        out.append(base | {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
        return out

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        self.requests.append(request)
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream")],
            }
        )
        for chunk in self.chunks(request):
            data = f"data: {json.dumps(chunk)}\n\n".encode()
            await send({"type": "http.response.body", "body": data, "more_body": True})
        await send({"type": "http.response.body", "body": b"data: [DONE]\n\n"})


async def test_openai_compatible_server_streams_a_tool_call_through_the_agent(stack: AgentStack):
    server = OpenAICompatibleServer()
    with serve(server) as base_url:
        settings = stack.settings.model_copy(
            update={"model_provider": "openai", "openai_base_url": f"{base_url}/v1"}
        )
        events = await collect(
            stack.agent(build_chat_model(settings)).send(
                uuid.uuid4().hex, "status?", stack.context("analyst", DASHBOARD_10)
            )
        )
    assert of_type(events, EventType.TOOL_START)[0]["input"] == {"dashboard_ids": [10]}
    assert of_type(events, EventType.TOOL_END)[0]["output"]["dashboards"][0]["id"] == 10
    assert answer(events) == "Statuses are fine."
    # The model was offered the analyst's dashboard tools only, and saw the page context
    offered = {tool["function"]["name"] for tool in server.requests[0]["tools"]}
    assert "search_dashboards" in offered
    assert "deploy_dashboard" not in offered
    assert '"objectId": "10"' in server.requests[0]["messages"][0]["content"]
