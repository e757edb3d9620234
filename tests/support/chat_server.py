"""One chat server for the tests that speak to the chat function over HTTP: the app under a real
uvicorn (`ChatServer`), a request read as its stream (`post_stream`), and the deploy card most
confirmation tests start from (`ask`, `answer_card`, `deploys`).

`make_chat` serves it with the real audit producer (records go to the audit bus, where an SQS tap
can see them); tests that read audit records in memory build theirs with `chat_app` and a
`MemoryAuditSink`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx

from local.agent_stack import AgentStack, chat_app, user_issuer
from local.servers import serve
from sstools_agent.adapters.audit import EventBridgeAuditSink
from sstools_agent.adapters.dynamodb.conversations import DynamoDBConversationStore
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.agent.standin_model import StandinChatModel
from tests.support.chat_http import Received, sse_events
from tests.support.seed import DASHBOARD_10

DEPLOY = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
"""An engineer's staging deploy from dashboard 10: the card most confirmation tests answer."""


@dataclass
class ChatServer:
    url: str
    stack: AgentStack
    store: DynamoDBConversationStore
    audit: MemoryAuditSink
    tokens: dict[str, str] = field(default_factory=dict)

    def headers(self, role: str = "engineer", **extra: str) -> dict[str, str]:
        if role not in self.tokens:
            issuer = user_issuer(self.stack.settings)
            self.tokens[role] = issuer.issue(f"user.{role}", 600, {"roles": [role]}).token
        return {"Authorization": f"Bearer {self.tokens[role]}", **extra}


async def post_stream(
    chat: ChatServer, body: dict[str, Any], role: str = "engineer", **headers: str
) -> tuple[int, list[Received], dict[str, Any] | None]:
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            "POST", f"{chat.url}/api/agent/chat", json=body, headers=chat.headers(role, **headers)
        ) as response,
    ):
        if response.status_code != 200:
            return response.status_code, [], json.loads(await response.aread())
        return 200, [e async for e in sse_events(response)], None


def make_chat(stack: AgentStack, **settings: Any) -> Iterator[ChatServer]:
    stack.settings = stack.settings.model_copy(update=settings)
    # The real audit producer: records go to the audit bus, where the SQS tap can see them.
    bus = EventBridgeAuditSink(
        stack.settings.audit_bus_name,
        region=stack.settings.aws_region,
        endpoint_url=stack.settings.aws_endpoint_url,
    )
    app, store, _ = chat_app(stack, StandinChatModel(), bus)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, stack, store, MemoryAuditSink())
    bus.flush()


async def ask(chat: ChatServer, role: str = "engineer") -> tuple[str, dict[str, Any]]:
    """A conversation whose staging deploy card waits, and that card."""
    status, events, _ = await post_stream(chat, DEPLOY, role=role)
    assert status == 200
    card = next(e for e in events if e.type == "confirm_required").data["metadata"]
    return events[-1].data["metadata"]["conversation_id"], card


def deploys(chat: ChatServer) -> int:
    """How many deploys the upstream received."""
    return chat.stack.upstream.plan.requests("POST", "/api/dashboards/deploy")


async def answer_card(
    chat: ChatServer, conversation: str, card: dict[str, Any], action: str, role: str = "engineer"
) -> tuple[int, list[Any], dict[str, Any] | None]:
    """Answers `card` (`confirm` or `deny`) from the card's page."""
    return await post_stream(
        chat,
        {
            "action": action,
            "conversation_id": conversation,
            "confirmation_id": card["confirmation_id"],
            "ui_context": DASHBOARD_10,
        },
        role=role,
    )
