"""A second approver for production (issue 32, part 3), on the real state machine in moto.

With `PROD_APPROVERS=2` a prod write needs two people: the requester's confirm is the first
approval («подтверждено (1 из 2)»), nothing runs; another admin finds the card in
`GET /api/assistant/approvals` and answers it with `POST /api/assistant/approvals/{id}`; the
state machine then invokes the chat function (locally: its Lambda task's payload handed to the
chat app's pass-through path by `local.state_machine_tasks`, as the adapter would), which runs
the call once in the requester's conversation.
"""

from __future__ import annotations

import asyncio
import functools
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import pytest

from local.agent_stack import AgentStack, user_issuer
from local.bus_rules import start_expiry_pump
from local.state_machine_tasks import deliver_over_http, start_lambda_task_pump
from sstools_agent.chat.approval_routes import SECOND_DECISION_PATH
from sstools_agent.domain.confirmations import iso_moment
from sstools_agent.wiring.chat import build_chat, tool_policy_from
from tests.support.chat_http import confirmation_item, wait_for
from tests.support.chat_server import ChatServer, post_stream
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio
DEPLOYS = ("POST", "/api/dashboards/deploy")
PROD_DEPLOY = {"message": "задеплой этот дашборд в prod", "ui_context": DASHBOARD_10}
REQUESTER, SECOND = "user.admin", "boris.admin"


def serve_two_approvers(stack: AgentStack, **settings: Any) -> Iterator[ChatServer]:
    """The chat with `PROD_APPROVERS=2` and the state machine's Lambda task handed to it."""
    from tests.support.chat_server import make_chat  # (one server per test: its own settings)

    stack.settings = stack.settings.model_copy(update={"prod_approvers": 2, **settings})
    stack.policy = tool_policy_from(stack.settings)
    for chat in make_chat(stack):
        stop = start_lambda_task_pump(
            stack.settings.aws_endpoint_url or "",
            stack.settings.aws_region,
            stack.settings.confirmation_state_machine_arn,
            functools.partial(deliver_over_http, f"{chat.url}{SECOND_DECISION_PATH}"),
        )
        try:
            yield chat
        finally:
            stop.set()


@pytest.fixture
def chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from serve_two_approvers(stack)


def headers(chat: ChatServer, subject: str, role: str = "admin") -> dict[str, str]:
    token = user_issuer(chat.stack.settings).issue(subject, 600, {"roles": [role]}).token
    return {"Authorization": f"Bearer {token}"}


def deploys(chat: ChatServer) -> int:
    return chat.stack.upstream.plan.requests(*DEPLOYS)


async def first_approval(chat: ChatServer) -> tuple[str, dict[str, Any], list[Any]]:
    """A prod deploy card, confirmed by its requester: its conversation, card and the
    confirm's events, once the second approval's wait holds its token."""
    status, events, _ = await post_stream(chat, PROD_DEPLOY, role="admin")
    assert status == 200
    card = next(e for e in events if e.type == "confirm_required").data["metadata"]
    conversation = events[-1].data["metadata"]["conversation_id"]
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    status, events, error = await post_stream(
        chat,
        {
            "action": "confirm",
            "conversation_id": conversation,
            "confirmation_id": card["confirmation_id"],
        },
        role="admin",
    )
    assert status == 200, error
    await wait_for(lambda: "approval_token" in confirmation_item(chat, card["confirmation_id"]))
    return conversation, card, events


async def approvals(chat: ChatServer, subject: str, role: str = "admin") -> list[dict[str, Any]]:
    async with httpx.AsyncClient(timeout=30) as client:
        response = await client.get(
            f"{chat.url}/api/assistant/approvals", headers=headers(chat, subject, role)
        )
    assert response.status_code == 200, response.text
    found: list[dict[str, Any]] = response.json()["approvals"]
    return found


async def decide(
    chat: ChatServer, subject: str, confirmation_id: str, decision: str
) -> httpx.Response:
    async with httpx.AsyncClient(timeout=60) as client:
        return await client.post(
            f"{chat.url}/api/assistant/approvals/{confirmation_id}",
            json={"decision": decision},
            headers=headers(chat, subject),
        )


def said(messages: list[Any]) -> str:
    return " ".join(message.content for message in messages)


async def test_the_requesters_confirm_is_the_first_of_two_and_runs_nothing(chat: ChatServer):
    # Given a prod deploy card, which says it needs two people
    status, events, _ = await post_stream(chat, PROD_DEPLOY, role="admin")
    card = next(e for e in events if e.type == "confirm_required").data["metadata"]
    assert card["decision"]["approvers"] == 2
    # When its requester confirms it
    conversation, card, events = await first_approval(chat)
    # Then it is approved once, says who approved and that it waits for someone else, and
    # nothing ran
    resolved = [e.data["metadata"]["result"] for e in events if e.type == "confirm_resolved"]
    assert resolved == ["awaiting_approval"]
    text = " ".join(e.data.get("content", "") for e in events if e.type is None)
    assert "подтверждено (1 из 2)" in text, text
    assert f"подтвердил {REQUESTER}" in text
    assert "ждёт второго подтверждения другого человека с ролью «администратор»" in text
    assert not any(e.type in ("tool_start", "tool_end") for e in events)
    assert deploys(chat) == 0
    item = confirmation_item(chat, card["confirmation_id"])
    assert (item["status"], item["approved_by"]) == ("awaiting_approval", REQUESTER)
    # A reconnect replays the card as it was shown, and does not offer it again: its requester
    # has nothing left to answer
    status, events, _ = await post_stream(
        chat, {"action": "resume", "conversation_id": conversation}, role="admin"
    )
    assert status == 200
    assert [e.type for e in events].count("confirm_required") == 1
    # And the requester can neither confirm again nor be the second approver
    status, _, error = await post_stream(
        chat,
        {
            "action": "confirm",
            "conversation_id": conversation,
            "confirmation_id": card["confirmation_id"],
        },
        role="admin",
    )
    assert (status, error and error["code"]) == (403, "FORBIDDEN")
    assert error is not None
    assert "другой человек" in error["detail"]
    own = await decide(chat, REQUESTER, card["confirmation_id"], "approve")
    assert own.status_code == 403
    assert own.json()["code"] == "FORBIDDEN"
    assert "Второе подтверждение должен дать другой человек" in own.json()["detail"]
    assert card["confirmation_id"] not in [
        a["confirmation_id"] for a in await approvals(chat, REQUESTER)
    ]
    assert deploys(chat) == 0


async def test_two_admins_approve_a_prod_deploy_and_it_runs_once(chat: ChatServer):
    # Given a prod deploy its requester confirmed
    conversation, card, _ = await first_approval(chat)
    confirmation_id = card["confirmation_id"]
    # Then another admin sees it, with the same plan and the second approval's deadline, and
    # nothing else of the conversation; an engineer (who may not deploy to prod) does not
    waiting = {a["confirmation_id"]: a for a in await approvals(chat, SECOND)}
    seen = waiting[confirmation_id]
    assert seen["plan"] == card["plan"]
    assert (seen["approved_by"], seen["requested_by"]) == (REQUESTER, REQUESTER)
    assert seen["approvals"] == "подтверждено (1 из 2)"
    item = confirmation_item(chat, confirmation_id)
    assert seen["expires_at"] == iso_moment(float(item["approval_expires_at"]))
    assert not {"conversation_id", "messages", "history"} & seen.keys()
    assert confirmation_id not in [
        a["confirmation_id"] for a in await approvals(chat, "egor", "engineer")
    ]
    # When the second admin approves it with a double click, and a third admin at the same time
    approvers = (SECOND, SECOND, "vera.admin")
    answers = await asyncio.gather(
        *(decide(chat, subject, confirmation_id, "approve") for subject in approvers)
    )
    # Then one decision is taken, the others refused as decided
    assert sorted(a.status_code for a in answers) == [200, 409, 409], [a.text for a in answers]
    winner = next(s for s, a in zip(approvers, answers, strict=True) if a.status_code == 200)
    taken = next(a for a in answers if a.status_code == 200).json()
    assert taken["outcome"] == "approved"
    refused = [a.json()["code"] for a in answers if a.status_code == 409]
    assert refused == ["ALREADY_DECIDED", "ALREADY_DECIDED"]
    # And the deploy runs once, without the requester, written into their conversation
    await wait_for(lambda: deploys(chat) == 1, timeout_s=30)
    record = None
    for _ in range(300):
        record = await chat.store.get(conversation)
        if (
            record is not None
            and record.pending_confirmation_id is None
            and not record.is_running(time.time())
        ):
            break
        await asyncio.sleep(0.1)
    messages = await chat.store.messages(conversation)
    calls = [c for m in messages for c in m.tool_calls if c["tool_call_id"] == card["tool_call_id"]]
    assert any(call["status"] == "tool_end" for call in calls), calls
    assert f"{winner} дал второе подтверждение — подтверждено (2 из 2)" in said(messages)
    # And nothing runs it again: a redelivered invocation, another approval
    async with httpx.AsyncClient(timeout=60) as client:
        again = await client.post(
            f"{chat.url}/events", json={"second_decision": {"confirmation_id": confirmation_id}}
        )
    assert again.status_code == 200
    late = await decide(chat, "gleb.admin", confirmation_id, "approve")
    assert late.status_code == 409
    assert deploys(chat) == 1
    assert confirmation_item(chat, confirmation_id)["execution"] == "succeeded"


async def test_a_deny_by_the_second_approver_runs_nothing_and_both_are_told(chat: ChatServer):
    conversation, card, _ = await first_approval(chat)
    # When the second admin denies it
    answer = await decide(chat, SECOND, card["confirmation_id"], "deny")
    # Then they are told, the requester's conversation says so, and nothing ran
    assert answer.status_code == 200, answer.text
    assert answer.json()["outcome"] == "denied"
    assert "ничего не выполнено" in answer.json()["detail"]

    async def told() -> bool:
        record = await chat.store.get(conversation)
        return (
            record is not None
            and record.pending_confirmation_id is None
            and not record.is_running(time.time())
        )

    for _ in range(300):
        if await told():
            break
        await asyncio.sleep(0.1)
    messages = await chat.store.messages(conversation)
    assert f"{SECOND} отклонил операцию; ничего не выполнено." in said(messages)
    assert deploys(chat) == 0


async def test_an_approval_whose_plan_changed_runs_nothing(chat: ChatServer):
    conversation, card, _ = await first_approval(chat)
    # Given prod changes after the card was shown (another deploy lands there)
    chat.stack.upstream.state.dashboards["prod"][10]["version"] += 1
    # When the second admin approves
    answer = await decide(chat, SECOND, card["confirmation_id"], "approve")
    # Then nothing runs, both are told: the approver now, the requester with a new card
    assert answer.status_code == 200, answer.text
    assert answer.json()["outcome"] == "stale"
    await wait_for(lambda: confirmation_item(chat, card["confirmation_id"])["status"] == "stale")
    for _ in range(300):
        messages = await chat.store.messages(conversation)
        if "изменилось то, что она меняет" in said(messages):
            break
        await asyncio.sleep(0.1)
    assert "изменилось то, что она меняет" in said(messages)
    assert deploys(chat) == 0


@pytest.fixture
def quick_approval(stack: AgentStack) -> Iterator[ChatServer]:
    yield from serve_two_approvers(stack, approval_timeout_s=2)


async def test_the_second_approval_expires_on_its_own_timer(quick_approval: ChatServer):
    chat = quick_approval
    settings = chat.stack.settings
    stop = start_expiry_pump(
        settings.aws_endpoint_url or "",
        settings.aws_region,
        settings.audit_bus_name,
        build_chat(settings).expiry_recorder(),
    )
    try:
        conversation, card, _ = await first_approval(chat)
        # When nobody approves it within its own time (not the first card's)
        await wait_for(
            lambda: confirmation_item(chat, card["confirmation_id"])["status"] == "expired"
        )
        # Then nothing runs and the conversation says so
        for _ in range(300):
            messages = await chat.store.messages(conversation)
            if "время подтверждения истекло" in said(messages):
                break
            await asyncio.sleep(0.1)
    finally:
        stop.set()
    assert "время подтверждения истекло" in said(messages)
    late = await decide(chat, SECOND, card["confirmation_id"], "approve")
    assert late.status_code == 409
    assert deploys(chat) == 0


async def test_each_pending_approval_is_an_event_a_team_can_route(chat: ChatServer):
    settings = chat.stack.settings
    kwargs = {"endpoint_url": settings.aws_endpoint_url, "region_name": settings.aws_region}
    sqs, events = boto3.client("sqs", **kwargs), boto3.client("events", **kwargs)
    name = f"approvals-tap-{time.monotonic_ns()}"
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    events.put_rule(
        Name=name,
        EventBusName=settings.audit_bus_name,
        EventPattern=json.dumps({"detail-type": ["approval_pending"]}),
    )
    events.put_targets(
        Rule=name,
        EventBusName=settings.audit_bus_name,
        Targets=[{"Id": "t", "Arn": arn["QueueArn"]}],
    )
    _, card, _ = await first_approval(chat)
    found: list[dict[str, Any]] = []
    for _ in range(5):
        received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        found += [json.loads(m["Body"])["detail"] for m in received.get("Messages", [])]
        if any(f["confirmation_id"] == card["confirmation_id"] for f in found):
            break
    event = next(f for f in found if f["confirmation_id"] == card["confirmation_id"])
    assert (event["approved_by"], event["user"], event["tool"]) == (
        REQUESTER,
        REQUESTER,
        "deploy_dashboard",
    )
    assert event["approval_expires_at"].endswith("Z")
