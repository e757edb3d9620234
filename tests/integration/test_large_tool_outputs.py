"""Tool outputs of any size through the whole stack: the chat function and the REST API on one
origin (uvicorn, the local gateway), conversations, checkpoints and kept outputs in moto, the
sample upstream answering with outputs of hundreds of kilobytes.

The outputs are made large in the upstream's own data (the dashboards' descriptions), so the
upstream, the tool client, the agent and the stores all see a real, large answer.
"""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import httpx
import pytest
from langchain_core.messages import ToolMessage

from functions.api.app import create_app as create_api_app
from local.agent_stack import AgentStack, SampleUpstream, chat_app, user_issuer
from local.gateway import LocalGateway
from local.servers import serve
from sstools_agent.adapters.blob_store import S3BlobStore
from sstools_agent.adapters.checkpointer import checkpointer_from
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.domain.tool_output_summary import to_json
from sstools_agent.settings import Settings
from sstools_agent.wiring.api import build_api
from tests.support.models import ANSWER, ScriptedChatModel

ITEM_LIMIT_BYTES = 400 * 1024
SEARCH = {
    "message": "найди дашборды",
    "ui_context": {"contextVersion": 1, "envId": "ss-dev", "route": "/dashboards"},
}


@dataclass
class Origin:
    url: str
    stack: AgentStack

    def user(self) -> dict[str, str]:
        subject = f"engineer-{uuid.uuid4().hex[:10]}"
        token = user_issuer(self.stack.settings).issue(subject, 600, {"roles": ["engineer"]})
        return {"Authorization": f"Bearer {token.token}"}

    def chat(self, headers: dict[str, str], body: dict[str, Any]) -> list[dict[str, Any]]:
        """A chat turn; every event's data, in order (the stream must end cleanly)."""
        with httpx.stream(
            "POST", f"{self.url}/api/agent/chat", headers=headers, json=body, timeout=60
        ) as response:
            assert response.status_code == 200, response.read()
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
        return [json.loads(line[6:]) for line in lines]

    def get(self, path: str, headers: dict[str, str], **params: Any) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", headers=headers, params=params, timeout=60)


def _origin(stack: AgentStack, **chat_options: Any) -> Iterator[Origin]:
    api = create_api_app(build_api(stack.settings))
    chat, _, _ = chat_app(stack, ScriptedChatModel(), MemoryAuditSink(), **chat_options)
    with serve(LocalGateway({"ChatFunction": chat, "ApiFunction": api}), lifespan="on") as url:
        yield Origin(url, stack)


@pytest.fixture
def origin(stack: AgentStack) -> Iterator[Origin]:
    # tests of size: an upstream building a megabyte may take seconds on a busy machine
    yield from _origin(stack.patient())


def types(events: list[dict[str, Any]]) -> list[str | None]:
    return [event["metadata"].get("type") for event in events]


def only(events: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [
        e["metadata"] for e in events if e["metadata"].get("type") == kind
    ]
    assert len(found) == 1, types(events)
    return found[0]


def ascii_text(seed: str, size: int) -> str:
    """`size` characters of base64: ASCII that compresses poorly (as real data often does)."""
    chunks = [
        base64.b64encode(hashlib.sha512(f"{seed}{n}".encode()).digest())
        for n in range(size // 88 + 1)
    ]
    return b"".join(chunks).decode()[:size]


def cyrillic_text(seed: str, size: int) -> str:
    """`size` characters of Russian-looking words (two bytes each in UTF-8)."""
    letters = "абвгдеёжзийклмнопрстуфхцчшщъыьэюя"
    digest = b"".join(hashlib.sha512(f"{seed}{n}".encode()).digest() for n in range(size // 48))
    words = "".join(letters[b % len(letters)] + (" " if b % 7 == 0 else "") for b in digest)
    return (words * (size // max(len(words), 1) + 1))[:size]


def make_outputs_large(upstream: SampleUpstream, text: Any) -> None:
    """Every ss-dev dashboard gets a long description, so a search answers with all of them."""
    for number, found in enumerate(upstream.state.dashboards["ss-dev"].values()):
        found["description"] = text(f"dashboard-{number}", 24_000)


def history(origin: Origin, headers: dict[str, str], conversation: str) -> httpx.Response:
    return origin.get("/api/assistant/history", headers, conversation_id=conversation)


def replay(origin: Origin, headers: dict[str, str], conversation: str) -> list[dict[str, Any]]:
    return origin.chat(
        headers,
        {"action": "resume", "conversation_id": conversation, "last_event_id": f"{conversation}:0"},
    )


@pytest.mark.parametrize("text", [ascii_text, cyrillic_text], ids=["ascii", "cyrillic"])
def test_a_large_output_is_kept_whole_and_shown_everywhere(origin: Origin, text: Any):
    # Given an upstream whose search answers with more than 400 KB of JSON (UTF-8)
    make_outputs_large(origin.stack.upstream, text)
    alice = origin.user()
    # When the user asks for it
    events = origin.chat(alice, SEARCH)
    # Then the live stream ends cleanly, with the answer, the full output and no error
    assert types(events)[-1] == "stream_end"
    assert "error" not in types(events)
    conversation = events[-1]["metadata"]["conversation_id"]
    live = only(events, "tool_end")
    full = live["output"]
    full_bytes = to_json(full).encode()
    assert len(full_bytes) > ITEM_LIMIT_BYTES
    assert len(full["dashboards"]) == 20
    streamed = "".join(e["metadata"].get("token", "") for e in events)
    assert streamed.startswith(ANSWER)  # answered after the (summarised) output
    ref = live["output_ref"]
    assert ref == f"/api/assistant/conversations/{conversation}/tool-outputs/{live['tool_call_id']}"
    assert live["output_bytes"] == len(full_bytes)

    # And the history reads, with the summary inline and the reference to the whole output
    read = history(origin, alice, conversation)
    assert read.status_code == 200, read.text
    _, assistant = read.json()["items"]
    assert assistant["content"] == streamed
    (call,) = assistant["tool_calls"]
    assert call["status"] == "tool_end"
    assert (call["output_ref"], call["output_bytes"], call["truncated"]) == (
        ref,
        len(full_bytes),
        True,
    )
    assert call["output"]["dashboards"]["total_count"] == 20  # the summary

    # And a replay from the start gives every event, the output by reference
    replayed = replay(origin, alice, conversation)
    assert types(replayed) == types(events)
    stored = only(replayed, "tool_end")
    assert (stored["output_ref"], stored["output_bytes"], stored["truncated"]) == (
        ref,
        len(full_bytes),
        True,
    )
    assert [e["metadata"].get("token") for e in replayed] == [
        e["metadata"].get("token") for e in events
    ]

    # And the full output comes back byte for byte from the REST API, to its owner only
    fetched = origin.get(ref, alice)
    assert fetched.status_code == 200
    assert fetched.headers["content-type"].startswith("application/json")
    # (kept by no cache: it is one user's data, docs/rest-api.md)
    assert fetched.headers["cache-control"] == "no-store"
    assert fetched.headers["x-content-type-options"] == "nosniff"
    assert fetched.content == full_bytes
    other = origin.get(ref, origin.user())
    assert other.status_code == 404
    assert other.json()["code"] == "NOT_FOUND"
    missing = origin.get(f"/api/assistant/conversations/{conversation}/tool-outputs/call_x", alice)
    assert (missing.status_code, missing.json()["code"]) == (404, "NOT_FOUND")


def test_the_checkpoint_keeps_the_large_output_and_the_conversation_goes_on(origin: Origin):
    # Given a turn whose tool answered with more than 400 KB
    make_outputs_large(origin.stack.upstream, ascii_text)
    alice = origin.user()
    first = origin.chat(alice, SEARCH)
    conversation = first[-1]["metadata"]["conversation_id"]
    full = only(first, "tool_end")["output"]
    # When the conversation goes on
    second = origin.chat(alice, {**SEARCH, "conversation_id": conversation})
    # Then the next turn runs from the checkpoint (offloaded to S3 by the saver) without error
    assert types(second)[-1] == "stream_end"
    assert "error" not in types(second)
    # And a fresh checkpointer reads the whole output back from the tool message's artifact
    state = checkpointer_from(origin.stack.settings).get_tuple(
        {"configurable": {"thread_id": conversation, "checkpoint_ns": ""}}
    )
    assert state is not None
    messages = state.checkpoint["channel_values"]["messages"]
    tool_messages = [m for m in messages if isinstance(m, ToolMessage)]
    assert tool_messages[0].artifact["output"] == full
    # And the history holds both turns
    assert len(history(origin, alice, conversation).json()["items"]) == 4


def test_event_chunks_and_history_items_stay_under_the_item_limit(origin: Origin):
    make_outputs_large(origin.stack.upstream, cyrillic_text)
    alice = origin.user()
    events = origin.chat(alice, SEARCH)
    conversation = events[-1]["metadata"]["conversation_id"]
    settings = origin.stack.settings
    table = boto3.resource(
        "dynamodb", region_name=settings.aws_region, endpoint_url=settings.aws_endpoint_url
    ).Table(settings.conversations_table)
    items = table.query(
        KeyConditionExpression="PK = :pk", ExpressionAttributeValues={":pk": f"CONV#{conversation}"}
    )["Items"]
    sizes = [len(json.dumps(item, default=str, ensure_ascii=False).encode()) for item in items]
    assert max(sizes) < ITEM_LIMIT_BYTES


@pytest.fixture
def origin_without_bucket(stack: AgentStack) -> Iterator[Origin]:
    """The stack with the kept-outputs bucket missing (the checkpoints' bucket is still there)."""
    missing = S3BlobStore(
        "no-such-bucket",
        region=stack.settings.aws_region,
        endpoint_url=stack.settings.aws_endpoint_url,
    )
    yield from _origin(stack.patient(), outputs=missing)


def test_a_storage_failure_ends_the_stream_cleanly_and_history_stays_readable(
    origin_without_bucket: Origin,
):
    # Given outputs too large to keep inline, and no bucket to keep them in
    origin = origin_without_bucket
    make_outputs_large(origin.stack.upstream, ascii_text)
    alice = origin.user()
    # When the user asks
    events = origin.chat(alice, SEARCH)
    # Then the stream says the output could not be kept, and ends cleanly
    kinds = types(events)
    assert kinds[-2:] == ["error", "stream_end"]
    assert events[-2]["metadata"]["code"] == "STORAGE_FAILURE"
    conversation = events[-1]["metadata"]["conversation_id"]
    # And the history reads, with the summary and no reference
    read = history(origin, alice, conversation)
    assert read.status_code == 200, read.text
    (call,) = read.json()["items"][1]["tool_calls"]
    assert (call["output_ref"], call["truncated"]) == (None, True)
    assert call["output"]["dashboards"]["total_count"] == 20
    # And the replay gives the same events
    assert types(replay(origin, alice, conversation)) == kinds


def test_a_legacy_summarised_item_does_not_break_history_or_replay(
    origin: Origin, stack_settings: Settings
):
    # Given a conversation with items the previous code stored for outputs over 300,000 chars
    alice = origin.user()
    events = origin.chat(alice, {"message": "привет"})
    conversation = events[-1]["metadata"]["conversation_id"]
    settings = origin.stack.settings
    table = boto3.resource(
        "dynamodb", region_name=settings.aws_region, endpoint_url=settings.aws_endpoint_url
    ).Table(settings.conversations_table)
    message = {"message_id": "m-legacy", "role": "assistant", "content": "ответ", "seq": 90}
    table.put_item(
        Item={
            "PK": f"CONV#{conversation}",
            "SK": "MSG#000000000090#000",
            "message": json.dumps({"stored_summary": True, "raw_chars": 300_001, "value": message}),
        }
    )
    table.put_item(
        Item={
            "PK": f"CONV#{conversation}",
            "SK": "EVT#000000000090",
            "last_seq": 91,
            "events": json.dumps(
                {
                    "stored_summary": True,
                    "raw_chars": 300_001,
                    "value": {"items": [[90, {"content": "x", "metadata": {}}]], "truncated": True},
                }
            ),
        }
    )
    # When the history is read and the conversation replayed
    read = history(origin, alice, conversation)
    # Then both answer (the legacy message as well as it can be read)
    assert read.status_code == 200, read.text
    assert read.json()["items"][-1]["content"] == "ответ"
    replayed = replay(origin, alice, conversation)
    assert "x" in [event.get("content") for event in replayed]
    assert "error" not in types(replayed)
