"""Approve-with-edits over HTTP: the edited call runs once, asks again on a card of its own, or is
refused before anything runs (docs/confirmations.md, "Edits").

Through the chat function under uvicorn, with the confirmations held by the real state machine
in moto; what the sample upstream received is read from its own state.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local.servers import serve
from sstools_agent.agent.offline_model import OfflineChatModel
from sstools_agent.domain.audit import AuditKind
from tests.integration.test_chat_function import ChatServer, MemoryAudit, post_stream
from tests.support.agent_stack import AgentStack, chat_app
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio
DEPLOY = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
DEPLOYS = ("POST", "/api/dashboards/deploy")


@pytest.fixture
def chat(stack: AgentStack) -> Iterator[ChatServer]:
    audit = MemoryAudit()
    app, store, _ = chat_app(stack, OfflineChatModel(), audit)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, stack, store, audit)


async def ask(chat: ChatServer, role: str) -> tuple[str, dict[str, Any]]:
    status, events, _ = await post_stream(chat, DEPLOY, role=role)
    assert status == 200
    card = next(e for e in events if e.type == "confirm_required").data["metadata"]
    return events[-1].data["metadata"]["conversation_id"], card


def edit(conversation: str, card: dict[str, Any], edited_args: dict[str, Any]) -> dict[str, Any]:
    return {
        "action": "edit",
        "conversation_id": conversation,
        "confirmation_id": card["confirmation_id"],
        "edited_args": edited_args,
    }


async def refused(
    chat: ChatServer, body: dict[str, Any], role: str = "engineer"
) -> tuple[int, Any]:
    """The status and `code` of a request refused before the stream."""
    status, _, error = await post_stream(chat, body, role=role)
    assert error is not None, "the request was not refused"
    return status, error["code"]


def deployed(chat: ChatServer) -> list[list[int]]:
    """The dashboards of each deploy the upstream made, as its task log has them (its seeded
    tasks carry no dashboards)."""
    tasks = chat.stack.upstream.state.tasks.values()
    return [task["result"]["deployed"] for task in tasks if isinstance(task["result"], dict)]


def types(events: list[Any]) -> list[str | None]:
    return [e.type for e in events]


async def test_an_edit_of_the_same_risk_runs_once_with_the_edited_arguments(chat: ChatServer):
    conversation, card = await ask(chat, "engineer")
    edited = {**card["input"], "dashboard_ids": [11]}
    status, events, error = await post_stream(chat, edit(conversation, card, edited))
    assert (status, error) == (200, None)
    assert events[0].data["metadata"] == {"type": "confirm_resolved", "result": "confirmed"}
    start = next(e for e in events if e.type == "tool_start").data["metadata"]
    assert (start["input"], start["tool_call_id"]) == (edited, card["tool_call_id"])
    assert any(e.type == "tool_end" for e in events)
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1
    assert deployed(chat) == [[11]]
    # The history keeps what ran, not what the model proposed
    messages = await chat.store.messages(conversation)
    assert messages[-1].tool_calls[-1]["input"] == edited
    # The edit and the call's outcome are audited with both fingerprints and who edited
    decided = [r for r in chat.audit.records if r.kind is AuditKind.CONFIRMATION_DECIDED]
    assert len(decided) == 1
    assert decided[0].outcome == "edited"
    assert decided[0].detail["edited_by"] == "user.engineer"
    assert decided[0].detail["fingerprint"] != decided[0].detail["edited_fingerprint"]
    called = [r for r in chat.audit.records if r.kind is AuditKind.TOOL_CALLED]
    assert called[-1].detail["edited_fingerprint"] == decided[0].detail["edited_fingerprint"]
    # The card is spent: the same edit again runs nothing
    assert await refused(chat, edit(conversation, card, edited)) == (409, "ALREADY_DECIDED")
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1


async def test_a_prod_target_from_a_staging_card_asks_again_on_a_destructive_card(
    chat: ChatServer,
):
    conversation, card = await ask(chat, "admin")
    assert card["decision"]["environment"] == "staging"
    edited = {**card["input"], "target_env_id": "prod"}
    status, events, _ = await post_stream(chat, edit(conversation, card, edited), role="admin")
    assert status == 200
    assert types(events) == ["confirm_resolved", "confirm_required", "stream_end"]
    assert events[0].data["metadata"]["result"] == "superseded"
    new = events[1].data["metadata"]
    assert new["confirmation_id"] != card["confirmation_id"]
    assert new["tool_call_id"] == card["tool_call_id"]
    assert new["input"] == edited
    assert (new["decision"]["environment"], new["decision"]["risk"]) == ("prod", "dangerous")
    assert new["decision"]["badge"] == "⚠️ PRODUCTION"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    # The old card cannot be confirmed any more; the new one runs the prod deploy, once
    old = {"action": "confirm", "conversation_id": conversation, **_card_id(card)}
    assert await refused(chat, old, "admin") == (409, "ALREADY_DECIDED")
    status, events, _ = await post_stream(
        chat,
        {"action": "confirm", "conversation_id": conversation, **_card_id(new)},
        role="admin",
    )
    assert status == 200
    assert events[0].data["metadata"]["result"] == "confirmed"
    assert any(e.type == "tool_end" for e in events)
    assert deployed(chat) == [card["input"]["dashboard_ids"]]
    assert chat.stack.upstream.state.dashboards["prod"]


async def test_an_edit_the_user_may_not_run_is_refused_and_the_card_still_waits(chat: ChatServer):
    conversation, card = await ask(chat, "engineer")
    edited = {**card["input"], "target_env_id": "prod"}
    status, _, error = await post_stream(chat, edit(conversation, card, edited))
    assert status == 403
    assert error is not None
    assert error["code"] == "FORBIDDEN"
    assert "admin" in error["detail"]
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    # Nothing was decided: the card's own call can still be confirmed
    status, _, _ = await post_stream(
        chat, {"action": "confirm", "conversation_id": conversation, **_card_id(card)}
    )
    assert status == 200
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"dashboard_ids": "десять"}, "dashboard_ids"),
        ({"target_env_id": "nowhere"}, "nowhere"),
        ({"tool": "execute_migration"}, "tool"),
    ],
)
async def test_invalid_edited_arguments_are_a_422_and_nothing_runs(
    chat: ChatServer, change: dict[str, Any], needle: str
):
    conversation, card = await ask(chat, "engineer")
    status, _, error = await post_stream(chat, edit(conversation, card, card["input"] | change))
    assert status == 422
    assert error is not None
    assert error["code"] == "VALIDATION_ERROR"
    assert needle in error["detail"]
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    denied, _, _ = await post_stream(
        chat, {"action": "deny", "conversation_id": conversation, **_card_id(card)}
    )
    assert denied == 200  # the card still waited


async def test_an_edit_cannot_name_another_tool(chat: ChatServer):
    conversation, card = await ask(chat, "engineer")
    body = edit(conversation, card, card["input"]) | {"tool": "run_backup"}
    assert await refused(chat, body) == (422, "VALIDATION_ERROR")
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_an_edit_by_another_user_is_403(chat: ChatServer):
    conversation, card = await ask(chat, "engineer")
    body = edit(conversation, card, card["input"])
    assert await refused(chat, body, "admin") == (403, "FORBIDDEN")
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


def _card_id(card: dict[str, Any]) -> dict[str, str]:
    return {"confirmation_id": card["confirmation_id"]}
