"""Confirmations held by the real state machine definition in moto (execution enabled).

Through the chat function over HTTP: confirm, deny, timeout, late confirm, double confirm, another
user's confirm, reconnect; the outcome reaches the EventBridge bus (checked through an SQS target).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from local.agent_stack import AgentStack
from local.sam_template import load_template
from tests.support.chat_http import confirmation_item, wait_for
from tests.support.chat_server import ChatServer, answer_card, ask, deploys, make_chat, post_stream
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio
# The audit function's own rule pattern, from the template: the tap sees what the function sees.
AUDIT_PATTERN = load_template()["Resources"]["AuditFunction"]["Properties"]["Events"][
    "AuditEvents"
]["Properties"]["Pattern"]


def clients(stack: AgentStack) -> dict[str, Any]:
    settings = stack.settings
    kwargs = {"endpoint_url": settings.aws_endpoint_url, "region_name": settings.aws_region}
    return {
        name: boto3.client(name, **kwargs)
        for name in ("stepfunctions", "dynamodb", "events", "sqs")
    }


@pytest.fixture
def audit_queue(stack: AgentStack) -> str:
    """An SQS queue behind a rule on the audit bus, to see what the bus delivers."""
    aws = clients(stack)
    name = f"audit-tap-{time.monotonic_ns()}"
    url = aws["sqs"].create_queue(QueueName=name)["QueueUrl"]
    arn = aws["sqs"].get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])
    aws["events"].put_rule(
        Name=name,
        EventBusName=stack.settings.audit_bus_name,
        EventPattern=json.dumps(AUDIT_PATTERN),
    )
    aws["events"].put_targets(
        Rule=name,
        EventBusName=stack.settings.audit_bus_name,
        Targets=[{"Id": "tap", "Arn": arn["Attributes"]["QueueArn"]}],
    )
    return str(url)


@pytest.fixture
def chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from make_chat(stack)


@pytest.fixture
def quick_chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from make_chat(stack, confirmation_timeout_s=2)


def execution(chat: ChatServer, confirmation_id: str) -> dict[str, Any]:
    sfn = clients(chat.stack)["stepfunctions"]
    arn = (
        chat.stack.settings.confirmation_state_machine_arn.replace(":stateMachine:", ":execution:")
        + f":{confirmation_id}"
    )
    return dict(sfn.describe_execution(executionArn=arn))


def audit_events(chat: ChatServer, queue: str, conversation: str) -> list[dict[str, Any]]:
    """What the bus delivered about `conversation` (the bus is the session's: cards of other
    tests expire on it too)."""
    sqs = clients(chat.stack)["sqs"]
    found: list[dict[str, Any]] = []
    for _ in range(3):
        messages = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        found += [json.loads(m["Body"])["detail"] for m in messages.get("Messages", [])]
    return [e for e in found if e.get("conversation_id") == conversation]


def audit_decisions(chat: ChatServer, queue: str, conversation: str) -> list[str]:
    return [
        e["decision"]["result"]
        for e in audit_events(chat, queue, conversation)
        if e["kind"] == "confirmation_decided"
    ]


async def test_the_card_is_held_by_an_execution_with_its_task_token(chat, audit_queue):
    conversation, card = await ask(chat)
    assert card["confirmation_id"]
    assert card["expires_at"].endswith("Z")
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    assert execution(chat, card["confirmation_id"])["status"] == "RUNNING"
    item = confirmation_item(chat, card["confirmation_id"])
    assert (item["status"], item["user"], item["tool"]) == (
        "pending",
        "user.engineer",
        "deploy_dashboard",
    )
    # Confirm: resolved first, the deploy runs once, the execution ends, the bus hears of it
    status, events, _ = await answer_card(chat, conversation, card, "confirm")
    assert status == 200
    assert events[0].data["metadata"] == {"type": "confirm_resolved", "result": "confirmed"}
    assert any(e.type == "tool_end" for e in events)
    assert deploys(chat) == 1
    await wait_for(lambda: execution(chat, card["confirmation_id"])["status"] == "SUCCEEDED")
    assert confirmation_item(chat, card["confirmation_id"])["status"] == "confirmed"
    events = audit_events(chat, audit_queue, conversation)
    kinds = sorted(e["kind"] for e in events)
    assert kinds == ["confirmation_decided", "confirmation_requested", "tool_called"]
    # Each record carries both identities
    assert {(e["service_actor"], e["user"]) for e in events} == {
        ("ss-tools-agent", "user.engineer")
    }
    decided = next(e for e in events if e["kind"] == "confirmation_decided")
    assert decided["decision"]["result"] == "confirmed"


async def test_deny_runs_nothing_and_says_so(chat, audit_queue):
    conversation, card = await ask(chat)
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    status, events, _ = await answer_card(chat, conversation, card, "deny")
    assert status == 200
    assert events[0].data["metadata"]["result"] == "denied"
    assert any("отменена" in e.data["content"] for e in events)
    assert deploys(chat) == 0
    await wait_for(lambda: execution(chat, card["confirmation_id"])["status"] == "SUCCEEDED")
    assert audit_decisions(chat, audit_queue, conversation) == ["denied"]


async def test_timeout_expires_the_card_and_the_next_access_says_so(quick_chat, audit_queue):
    chat = quick_chat
    conversation, card = await ask(chat)
    await wait_for(lambda: confirmation_item(chat, card["confirmation_id"])["status"] == "expired")
    assert audit_decisions(chat, audit_queue, conversation) == ["expired"]
    # The next message first resolves the expired call as rejected, then answers
    status, events, _ = await post_stream(
        chat,
        {
            "message": "какой статус у этого дашборда?",
            "conversation_id": conversation,
            "ui_context": DASHBOARD_10,
        },
    )
    assert status == 200
    assert events[0].data["metadata"] == {"type": "confirm_resolved", "result": "expired"}
    assert "время подтверждения истекло" in events[1].data["content"] + "".join(
        e.data["metadata"].get("token", "") for e in events
    )
    assert any(
        e.type == "tool_end" and e.data["metadata"]["tool"] == "search_dashboards" for e in events
    )
    assert deploys(chat) == 0


async def test_a_confirm_after_expiry_executes_nothing(quick_chat):
    chat = quick_chat
    conversation, card = await ask(chat)
    await wait_for(lambda: confirmation_item(chat, card["confirmation_id"])["status"] == "expired")
    status, events, _ = await answer_card(chat, conversation, card, "confirm")
    assert status == 200
    assert events[0].data["metadata"]["result"] == "expired"
    assert deploys(chat) == 0


async def test_a_double_confirm_runs_the_tool_exactly_once(chat):
    conversation, card = await ask(chat)
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    first, second = await asyncio.gather(
        answer_card(chat, conversation, card, "confirm"),
        answer_card(chat, conversation, card, "confirm"),
    )
    assert sorted([first[0], second[0]]) == [200, 409]
    refused = first[2] or second[2]
    assert refused is not None
    assert refused["code"] in {"CONVERSATION_BUSY", "ALREADY_DECIDED"}
    assert deploys(chat) == 1
    # And a third click, after the first finished, is refused as answered
    status, _, error = await answer_card(chat, conversation, card, "confirm")
    assert (status, error and error["code"]) == (409, "ALREADY_DECIDED")
    assert deploys(chat) == 1


async def test_another_users_confirm_is_403(chat):
    conversation, card = await ask(chat, role="engineer")
    status, _, error = await answer_card(chat, conversation, card, "confirm", role="admin")
    assert (status, error and error["code"]) == (403, "FORBIDDEN")
    assert deploys(chat) == 0
    assert confirmation_item(chat, card["confirmation_id"])["status"] == "pending"


async def test_an_answer_refused_after_the_lock_leaves_the_conversation_as_it_was(chat):
    # Given two conversations of one user, each with a card
    conversation, card = await ask(chat)
    other, other_card = await ask(chat)
    before = await chat.store.get(other)
    # When the first card's answer names the other conversation (its lock is taken while the
    # card is read, side by side)
    status, _, error = await answer_card(chat, other, card, "confirm")
    # Then it is refused, and the other conversation is as it was: not held, not touched
    assert (status, error and error["code"]) == (404, "NOT_FOUND")
    assert await chat.store.get(other) == before
    assert confirmation_item(chat, card["confirmation_id"])["status"] == "pending"
    assert deploys(chat) == 0
    # and its own card can be answered at once
    await wait_for(lambda: "task_token" in confirmation_item(chat, other_card["confirmation_id"]))
    status, events, _ = await answer_card(chat, other, other_card, "deny")
    assert status == 200
    assert events[0].data["metadata"] == {"type": "confirm_resolved", "result": "denied"}
    assert conversation != other


async def test_a_reconnect_re_emits_the_held_card(chat):
    conversation, card = await ask(chat)
    status, replay, _ = await post_stream(
        chat,
        {
            "action": "resume",
            "conversation_id": conversation,
            "last_event_id": f"{conversation}:999",
        },
    )
    assert status == 200
    again, end = (e.data["metadata"] for e in replay)
    assert again["type"] == "confirm_required"
    assert again["confirmation_id"] == card["confirmation_id"]
    assert end["type"] == "stream_end"


async def test_a_new_message_cancels_the_held_card(chat, audit_queue):
    conversation, card = await ask(chat)
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    status, events, _ = await post_stream(
        chat,
        {
            "message": "какой статус у этого дашборда?",
            "conversation_id": conversation,
            "ui_context": DASHBOARD_10,
        },
    )
    assert status == 200
    assert events[0].data["metadata"] == {"type": "confirm_resolved", "result": "cancelled"}
    assert confirmation_item(chat, card["confirmation_id"])["status"] == "cancelled"
    await wait_for(lambda: execution(chat, card["confirmation_id"])["status"] == "SUCCEEDED")
    assert audit_decisions(chat, audit_queue, conversation) == ["cancelled"]
    assert deploys(chat) == 0


async def test_a_confirm_without_a_page_context_uses_the_conversations(chat):
    conversation, card = await ask(chat)
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    status, events, _ = await post_stream(
        chat,
        {
            "action": "confirm",
            "conversation_id": conversation,
            "confirmation_id": card["confirmation_id"],
        },
    )
    assert status == 200
    assert any(e.type == "tool_end" for e in events)
    assert deploys(chat) == 1
