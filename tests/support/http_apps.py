"""Both HTTP apps, the chat and the REST API, each on its own server (uvicorn) over a test's stack,
recording audit in memory; as deployed behind CloudFront, or reached directly."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Final

from pydantic import SecretStr

from functions.api.app import create_app as create_api_app
from local.agent_stack import AgentStack, chat_app, user_issuer
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.http.client_address import VIEWER_ADDRESS_HEADER, ClientAddresses
from sstools_agent.http.origin import ORIGIN_VERIFY_HEADER
from sstools_agent.wiring.api import build_api
from tests.support.models import ScriptedChatModel

SOME_ID: Final = "0123456789abcdef0123456789abcdef"
"""A well-formed id that names nothing."""
ORIGIN_SECRET: Final = "origin-secret-cloudfront-sends-0123456789abcdef"
"""The origin secret CloudFront sends, as the tests deploy the apps behind it."""


def from_viewer(address: str) -> dict[str, str]:
    """What CloudFront adds for a viewer at `address`: its address, and the origin secret that
    makes the apps believe it (each attempt counter keys on it)."""
    return {VIEWER_ADDRESS_HEADER: f"{address}:443", ORIGIN_VERIFY_HEADER: ORIGIN_SECRET}


@dataclass
class Apps:
    """The chat and REST API apps, each on its own server, recording audit in memory."""

    chat_url: str
    api_url: str
    stack: AgentStack
    chat_audit: MemoryAuditSink
    api_audit: MemoryAuditSink

    def token(self, claims: dict[str, Any], subject: str = "user.engineer") -> str:
        return user_issuer(self.stack.settings).issue(subject, 600, claims).token

    def bearer(self, claims: dict[str, Any] | None = None) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token(claims or {'roles': ['engineer']})}"}


def serve_apps(stack: AgentStack, origin_verify_secret: str | None = None) -> Iterator[Apps]:
    """With `origin_verify_secret`, as deployed behind CloudFront: the chat answers only requests
    that carry it, and both apps count attempts per viewer (`from_viewer`)."""
    chat_audit, api_audit = MemoryAuditSink(), MemoryAuditSink()
    secret = SecretStr(origin_verify_secret) if origin_verify_secret else None
    chat, _, _ = chat_app(stack, ScriptedChatModel(), chat_audit, origin_verify_secret=secret)
    addresses = ClientAddresses(origin_verify_secret)
    api = create_api_app(
        replace(build_api(stack.settings), audit=api_audit, client_addresses=addresses)
    )
    with serve(chat, lifespan="on") as chat_url, serve(api) as api_url:
        yield Apps(chat_url, api_url, stack, chat_audit, api_audit)


class FakeClock:
    """A clock that stays where a test puts it (`now`): attempt windows never roll over."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now
