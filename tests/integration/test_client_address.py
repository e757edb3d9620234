"""Which source the attempt counters count per: the address the infrastructure vouches for, on each
deployment path, never the caller's own `X-Forwarded-For`. Over real HTTP (uvicorn, as the
function URL's adapter and `make run` serve the apps), and through Mangum for API Gateway."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from mangum import Mangum
from pydantic import SecretStr
from starlette.requests import Request

from functions.api.app import create_app as create_api_app
from local.agent_stack import AgentStack, chat_app
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.domain.attempt_limits import DEFAULT_MAX_FAILURES
from sstools_agent.domain.audit import AuditKind
from sstools_agent.http.client_address import VIEWER_ADDRESS_HEADER, ClientAddresses
from sstools_agent.http.origin import ORIGIN_VERIFY_HEADER
from sstools_agent.wiring.adapters import secrets_reader_from
from sstools_agent.wiring.api import build_api
from tests.support.chat_http import STATUS
from tests.support.events import load_event
from tests.support.http_apps import ORIGIN_SECRET, FakeClock
from tests.support.models import ScriptedChatModel

SECRET = ORIGIN_SECRET
ROOT = Path(__file__).resolve().parents[2]
EDGE = "130.176.98.17"
"""A CloudFront edge server: the last `X-Forwarded-For` entry of every viewer it serves."""
TOKEN_PATH = "/api/auth/service-token"


@dataclass
class TokenEndpoint:
    """The REST API's service-token endpoint, as deployed: the origin secret configured, the
    default limit, a clock that stays in one window."""

    url: str
    audit: MemoryAuditSink
    right: dict[str, str]

    @property
    def wrong(self) -> dict[str, str]:
        return {**self.right, "client_secret": "guess"}

    def post(self, client: httpx.Client, body: dict[str, str], headers: Any) -> httpx.Response:
        return client.post(f"{self.url}{TOKEN_PATH}", json=body, headers=headers)

    def sources(self) -> list[str]:
        return [
            r.detail["source"]
            for r in self.audit.records
            if r.kind is AuditKind.AUTH_FAILED and r.detail.get("endpoint") == "service-token"
        ]


def api_deps(stack: AgentStack, audit: MemoryAuditSink) -> Any:
    settings = stack.settings.model_copy(update={"origin_verify_secret": SecretStr(SECRET)})
    return replace(
        build_api(settings),
        audit=audit,
        service_token_failures=settings.service_token_limiter(clock=FakeClock()),
    )


def credentials(stack: AgentStack) -> dict[str, str]:
    reader = secrets_reader_from(stack.settings).client_credentials(
        stack.settings.service_client_secret_id
    )
    return {"client_id": reader.client_id, "client_secret": reader.client_secret}


@pytest.fixture
def token_endpoint(stack: AgentStack) -> Iterator[TokenEndpoint]:
    audit = MemoryAuditSink()
    with serve(create_api_app(api_deps(stack, audit))) as url:
        yield TokenEndpoint(url, audit, credentials(stack))


def through_cloudfront(viewer: str, *, origin: list[str] | None = None) -> list[tuple[str, str]]:
    """The headers CloudFront sends the origin for `viewer` (`<ip>:<port>`): the viewer's own
    claims, then the edge, in X-Forwarded-For; the viewer's address; the origin secret."""
    secret = [SECRET] if origin is None else origin
    return [
        ("X-Forwarded-For", f"203.0.113.99, {EDGE}"),
        (VIEWER_ADDRESS_HEADER, viewer),
        *((ORIGIN_VERIFY_HEADER, value) for value in secret),
    ]


# --- Locally and on the function URL: the socket's peer -------------------------------------------


def test_rotating_x_forwarded_for_does_not_escape_the_limit(token_endpoint: TokenEndpoint):
    # Given one client guessing 20 secrets, each with another X-Forwarded-For (last entry too)
    with httpx.Client(timeout=30) as client:
        answers = [
            token_endpoint.post(
                client, token_endpoint.wrong, {"X-Forwarded-For": f"10.4.{n}.1, 10.5.{n}.2"}
            ).status_code
            for n in range(20)
        ]
        right = token_endpoint.post(client, token_endpoint.right, {"X-Forwarded-For": "10.6.0.1"})
    # Then they all count against its one address: 5 refusals, then 429 (right secret or not)
    assert answers == [401] * DEFAULT_MAX_FAILURES + [429] * (20 - DEFAULT_MAX_FAILURES)
    assert right.status_code == 429
    assert set(token_endpoint.sources()) == {"127.0.0.1"}


# --- Behind CloudFront: the viewer's address, when the origin secret vouches for it ---------------


def test_two_viewers_behind_one_edge_are_limited_separately(token_endpoint: TokenEndpoint):
    # Given two viewers served by the same edge server (the same last X-Forwarded-For entry)
    attacker = through_cloudfront("198.51.100.7:50123")
    agent = through_cloudfront("2001:db8::7:443")
    with httpx.Client(timeout=30) as client:
        # When one of them guesses until it is refused
        answers = [
            token_endpoint.post(client, token_endpoint.wrong, attacker).status_code
            for _ in range(DEFAULT_MAX_FAILURES + 1)
        ]
        # Then only it is limited: the other still gets its token
        assert answers == [401] * DEFAULT_MAX_FAILURES + [429]
        assert token_endpoint.post(client, token_endpoint.right, agent).status_code == 200
    assert set(token_endpoint.sources()) == {"198.51.100.7"}


@pytest.mark.parametrize(
    "origin",
    [[], ["wrong"], [SECRET, SECRET]],
    ids=["no-origin-secret", "wrong-origin-secret", "origin-secret-twice"],
)
def test_a_viewer_address_without_the_origin_secret_is_ignored(
    token_endpoint: TokenEndpoint, origin: list[str]
):
    # Given a caller that writes CloudFront's viewer header itself, another address each time,
    # without the origin secret CloudFront adds (once, exactly)
    with httpx.Client(timeout=30) as client:
        answers = [
            token_endpoint.post(
                client,
                token_endpoint.wrong,
                through_cloudfront(f"198.51.100.{n}:4000", origin=origin),
            ).status_code
            for n in range(DEFAULT_MAX_FAILURES + 3)
        ]
    # Then the header is not believed: every attempt counts against the connection's address
    assert answers == [401] * DEFAULT_MAX_FAILURES + [429] * 3
    assert set(token_endpoint.sources()) == {"127.0.0.1"}


def test_the_chat_function_counts_failed_logins_per_viewer(stack: AgentStack):
    # Given the chat function as deployed (it answers only requests through CloudFront)
    audit = MemoryAuditSink()
    app, _, _ = chat_app(stack, ScriptedChatModel(), audit, origin_verify_secret=SecretStr(SECRET))
    with serve(app, lifespan="on") as url, httpx.Client(timeout=30) as client:
        # When two viewers behind one edge fail to sign in
        for viewer in ("198.51.100.20:1000", "198.51.100.21:1000"):
            headers = [("Authorization", "Bearer nope"), *through_cloudfront(viewer)]
            response = client.post(f"{url}/api/agent/chat", json=STATUS, headers=headers)
            assert response.status_code == 401
    # Then each failure is audited with its viewer's address, not the edge's
    sources = [r.detail["source"] for r in audit.records if r.kind is AuditKind.AUTH_FAILED]
    assert sources == ["198.51.100.20", "198.51.100.21"]


# --- Straight to API Gateway: the request context's sourceIp -------------------------------------


def gateway_event(source_ip: str, forwarded_for: str, body: dict[str, str]) -> dict[str, Any]:
    """An API Gateway REST event for the service-token endpoint from `source_ip`."""
    event = load_event("api_list_conversations", user_jwt="unused")
    headers = {
        "Content-Type": "application/json",
        "Host": event["headers"]["Host"],
        "X-Forwarded-For": forwarded_for,
    }
    event |= {
        "resource": TOKEN_PATH,
        "path": TOKEN_PATH,
        "httpMethod": "POST",
        "headers": headers,
        "multiValueHeaders": {name: [value] for name, value in headers.items()},
        "queryStringParameters": None,
        "multiValueQueryStringParameters": None,
        "pathParameters": None,
        "body": json.dumps(body),
    }
    event["requestContext"] |= {"httpMethod": "POST", "resourcePath": TOKEN_PATH}
    event["requestContext"]["identity"] = {"sourceIp": source_ip}
    return event


@pytest.mark.filterwarnings("ignore:There is no current event loop:DeprecationWarning")  # Mangum's
def test_through_api_gateway_the_source_is_its_source_ip(stack: AgentStack):
    # Given the REST API under Mangum, as API Gateway invokes it
    audit = MemoryAuditSink()
    handler = Mangum(create_api_app(api_deps(stack, audit)), lifespan="off")
    context = SimpleNamespace(aws_request_id="request-1")
    right = credentials(stack)
    wrong = {**right, "client_secret": "guess"}

    def invoke(source_ip: str, forwarded_for: str, body: dict[str, str]) -> int:
        status: int = handler(gateway_event(source_ip, forwarded_for, body), context)["statusCode"]
        return status

    # When one source guesses with a new X-Forwarded-For each time
    answers = [invoke("192.0.2.10", f"10.7.0.{n}", wrong) for n in range(DEFAULT_MAX_FAILURES + 2)]
    # Then API Gateway's sourceIp is what is counted: refused after 5, and another source is not
    assert answers == [401] * DEFAULT_MAX_FAILURES + [429] * 2
    assert invoke("192.0.2.11", "10.7.0.1", right) == 200
    sources = {r.detail["source"] for r in audit.records if r.kind is AuditKind.AUTH_FAILED}
    assert sources == {"192.0.2.10"}


def test_the_chat_functions_server_keeps_the_socket_peer():
    # uvicorn would otherwise take the peer from X-Forwarded-For on connections from 127.0.0.1,
    # which is where Lambda Web Adapter connects from
    script = (ROOT / "functions" / "chat" / "run.sh").read_text(encoding="utf-8")
    command = script.replace("\\\n", " ").split("exec ", 1)[1]
    assert "--no-proxy-headers" in command.split()


# --- What is not an address ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("viewer", "source"),
    [
        ("198.51.100.7:50123", "198.51.100.7"),
        ("2001:0db8:0000::0007:443", "2001:db8::7"),
        ("not-an-address:1", "127.0.0.1"),
        ("198.51.100.7", "127.0.0.1"),  # no port: the address is cut, and what remains is not one
    ],
)
def test_only_a_well_formed_viewer_address_is_used(viewer: str, source: str):
    addresses = ClientAddresses(SECRET)
    scope = {
        "type": "http",
        "headers": [
            (VIEWER_ADDRESS_HEADER.lower().encode(), viewer.encode()),
            (ORIGIN_VERIFY_HEADER.lower().encode(), SECRET.encode()),
        ],
        "client": ("127.0.0.1", 5000),
    }
    assert addresses.of(Request(scope)) == source
