"""What both HTTP apps answer at their edge, over real HTTP (uvicorn) with moto behind: malformed
tokens, bodies that do not validate or are not JSON, and internal failures, always `{code, detail}`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest

from functions.api.app import app_from_settings
from local.servers import serve
from sstools_agent.agent.offline_model import OfflineChatModel
from tests.integration.test_chat_function import MemoryAudit
from tests.support.agent_stack import AgentStack, chat_app, user_issuer
from tests.support.seed import DASHBOARD_10

STATUS = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}
SOME_ID = "0123456789abcdef0123456789abcdef"


@dataclass
class Apps:
    """The chat and REST API apps, each on its own server, recording audit in memory."""

    chat_url: str
    api_url: str
    stack: AgentStack
    chat_audit: MemoryAudit
    api_audit: MemoryAudit

    def token(self, claims: dict[str, Any], subject: str = "user.engineer") -> str:
        return user_issuer(self.stack.settings).issue(subject, 600, claims).token

    def bearer(self, claims: dict[str, Any] | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(claims or {'roles': ['engineer']})}"}


def serve_apps(stack: AgentStack) -> Iterator[Apps]:
    chat_audit, api_audit = MemoryAudit(), MemoryAudit()
    chat, _, _ = chat_app(stack, OfflineChatModel(), chat_audit)
    api = app_from_settings(stack.settings, audit=api_audit)
    with serve(chat, lifespan="on") as chat_url, serve(api) as api_url:
        yield Apps(chat_url, api_url, stack, chat_audit, api_audit)


@pytest.fixture
def apps(stack: AgentStack) -> Iterator[Apps]:
    yield from serve_apps(stack)


@pytest.fixture
def broken_apps(stack: AgentStack) -> Iterator[Apps]:
    """Both apps pointed at a conversations table that does not exist in moto: every storage
    call fails as it would if the table were deleted or the role lost its permissions."""
    settings = stack.settings.model_copy(update={"conversations_table": "NoSuchTable"})
    yield from serve_apps(AgentStack(settings, stack.upstream))


def every_endpoint(apps: Apps, headers: dict[str, str]) -> list[httpx.Response]:
    """One request to every endpoint that takes a user JWT, on both apps."""
    chat, api = apps.chat_url, apps.api_url
    conversation = f"{api}/api/assistant/conversations"
    with httpx.Client(timeout=30) as client:
        return [
            client.post(f"{chat}/api/agent/chat", json=STATUS, headers=headers),
            client.post(
                f"{chat}/api/agent/chat/cancel", json={"conversation_id": SOME_ID}, headers=headers
            ),
            client.post(conversation, json={}, headers=headers),
            client.get(conversation, headers=headers),
            client.get(
                f"{api}/api/assistant/history", params={"conversation_id": SOME_ID}, headers=headers
            ),
            client.post(
                f"{conversation}/{SOME_ID}/messages",
                json={"role": "user", "content": "hi"},
                headers={**headers, "Idempotency-Key": "key-0000001"},
            ),
            client.delete(f"{conversation}/{SOME_ID}", headers=headers),
            client.get(f"{api}/api/agent/conversations/{SOME_ID}/active", headers=headers),
        ]


# --- Tokens ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "roles",
    [5, True, False, {"admin": True}, ["admin", 7]],
    ids=["int", "true", "false", "dict", "mixed"],
)
def test_a_malformed_roles_claim_is_401_on_every_endpoint(apps: Apps, roles: Any):
    # Given a correctly signed token whose roles claim is not a string or a list of strings
    headers = apps.bearer({"roles": roles})
    # When it is sent to any endpoint of either app, Then it is refused as unauthenticated
    for response in every_endpoint(apps, headers):
        assert response.status_code == 401, (response.request.url, response.text)
        assert response.json()["code"] == "UNAUTHORIZED"
        assert "roles claim" in response.json()["detail"]
