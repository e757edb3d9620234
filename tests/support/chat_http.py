"""The chat function's HTTP surface as tests read it: the stream as events, the bodies they send,
what the confirmations table holds, and waiting for what another process does."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, Protocol

import boto3
import httpx

from local.agent_stack import AgentStack
from tests.support.seed import DASHBOARD_10

STATUS: Final = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}
"""A message that asks a read on the dashboard page: a turn that runs a tool and changes nothing."""


class OnStack(Protocol):
    """A chat server of the tests, over the stack it was built on."""

    @property
    def stack(self) -> AgentStack: ...


@dataclass
class Received:
    """One event of the stream, with the moment it arrived."""

    id: str
    data: dict[str, Any]
    at: float

    @property
    def type(self) -> str | None:
        return self.data["metadata"].get("type")  # type: ignore[no-any-return]


async def sse_events(response: httpx.Response) -> AsyncIterator[Received]:
    """Parses a text/event-stream as it arrives."""
    event_id, data = "", ""
    async for line in response.aiter_lines():
        if line.startswith("id: "):
            event_id = line[4:]
        elif line.startswith("data: "):
            data = line[6:]
        elif line == "" and data:
            yield Received(event_id, json.loads(data), time.monotonic())
            event_id, data = "", ""


def types(events: list[Received]) -> list[str | None]:
    """The events' types, in order (None for text)."""
    return [e.type for e in events]


def one(events: list[Received], kind: str) -> dict[str, Any]:
    """The metadata of the only event of type `kind`."""
    found: list[dict[str, Any]] = [e.data["metadata"] for e in events if e.type == kind]
    assert len(found) == 1, [e.data for e in events]
    return found[0]


def edit(conversation: str, card: dict[str, Any], edited_args: dict[str, Any]) -> dict[str, Any]:
    """The body that approves `card` with its arguments edited to `edited_args`."""
    return {
        "action": "edit",
        "conversation_id": conversation,
        "confirmation_id": card["confirmation_id"],
        "edited_args": edited_args,
    }


def confirmation_item(chat: OnStack, confirmation_id: str) -> dict[str, Any]:
    """The confirmation's item in the conversations table, as it is now."""
    settings = chat.stack.settings
    dynamodb = boto3.client(
        "dynamodb", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region
    )
    item = dynamodb.get_item(
        TableName=settings.conversations_table,
        ConsistentRead=True,
        Key={"PK": {"S": f"CONF#{confirmation_id}"}, "SK": {"S": "CONFIRMATION"}},
    )["Item"]
    return {k: next(iter(v.values())) for k, v in item.items()}


async def wait_for(predicate: Callable[[], object], timeout_s: float = 15) -> None:
    """Until `predicate` holds (something another server or process does); `timeout_s` is a
    bound on a hang, never what the test decides by."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.1)


@asynccontextmanager
async def in_flight(
    url: str,
    body: dict[str, Any],
    headers: dict[str, str],
    sent: Callable[[], object],
    timeout_s: float = 15,
) -> AsyncIterator[AsyncIterator[Received]]:
    """Posts `body` to the chat at `url` and enters once `sent` holds (the upstream has the
    call), with the stream open: its events are yielded; leaving closes the connection."""
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream("POST", f"{url}/api/agent/chat", json=body, headers=headers) as response,
    ):
        assert response.status_code == 200
        events = sse_events(response)
        await wait_for(sent, timeout_s)
        yield events
