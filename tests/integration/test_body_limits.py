"""What both functions do with a request body before they read it, over real HTTP (uvicorn): a body
over its endpoint's limit is refused with 413 before it is read or parsed (by its Content-Length,
or by counting a body sent without one), then the caller is authenticated, and only a signed-in
caller's body is parsed and validated (an anonymous caller learns nothing of the schema)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from local.agent_stack import AgentStack
from sstools_agent.http.body_limits import (
    AG_UI_MAX_BODY_BYTES,
    CHAT_MAX_BODY_BYTES,
    DEFAULT_MAX_BODY_BYTES,
)
from tests.support.chat_http import STATUS
from tests.support.http_apps import SOME_ID, Apps, serve_apps

TOO_LARGE = {"code": "PAYLOAD_TOO_LARGE"}


@dataclass(frozen=True)
class Endpoint:
    """A POST endpoint that takes a body: where it is, a body it accepts, and what a signed-in
    caller gets for that body (the status proves the body was read and validated)."""

    function: str
    path: str
    body: dict[str, Any]
    limit: int
    accepted: int
    headers: dict[str, str] = field(default_factory=dict)
    public: bool = False

    def url(self, apps: Apps) -> str:
        return (apps.chat_url if self.function == "chat" else apps.api_url) + self.path


def ag_ui_run() -> dict[str, Any]:
    return {
        "threadId": uuid.uuid4().hex,
        "runId": str(uuid.uuid4()),
        "messages": [{"id": str(uuid.uuid4()), "role": "user", "content": "привет"}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }


CONVERSATIONS = "/api/assistant/conversations"
ENDPOINTS = [
    Endpoint("chat", "/api/agent/chat", STATUS, CHAT_MAX_BODY_BYTES, 200),
    Endpoint("chat", "/api/agent/ag-ui", ag_ui_run(), AG_UI_MAX_BODY_BYTES, 200),
    Endpoint(
        "chat", "/api/agent/chat/cancel", {"conversation_id": SOME_ID}, DEFAULT_MAX_BODY_BYTES, 409
    ),
    Endpoint("api", CONVERSATIONS, {"title": "t"}, DEFAULT_MAX_BODY_BYTES, 201),
    Endpoint(
        "api",
        f"{CONVERSATIONS}/{SOME_ID}/messages",
        {"role": "user", "content": "hi"},
        DEFAULT_MAX_BODY_BYTES,
        404,
        headers={"Idempotency-Key": "key-0000001"},
    ),
    Endpoint(
        "api",
        "/api/assistant/files",
        {"name": "a.csv", "content_type": "text/csv", "size": 10},
        DEFAULT_MAX_BODY_BYTES,
        201,
    ),
    Endpoint(
        "api",
        "/api/auth/service-token",
        {"client_id": "nobody", "client_secret": "guess"},
        DEFAULT_MAX_BODY_BYTES,
        401,
        public=True,
    ),
]
IDS = [endpoint.path.rsplit("/", 1)[-1] or endpoint.path for endpoint in ENDPOINTS]
SIGNED_IN_ENDPOINTS = [endpoint for endpoint in ENDPOINTS if not endpoint.public]


@pytest.fixture(scope="module")
def apps(module_stack: AgentStack) -> Iterator[Apps]:
    yield from serve_apps(module_stack)


def padded(body: dict[str, Any], size: int) -> bytes:
    """`body` as JSON, padded with whitespace to exactly `size` bytes (still the same document)."""
    text = json.dumps(body).encode()
    assert len(text) <= size
    return text + b" " * (size - len(text))


def oversized(limit: int) -> bytes:
    """A JSON document one byte over `limit` that no endpoint's schema accepts."""
    return padded({"not_a_field": "x"}, limit + 1)


class RecordedBody:
    """A request body sent in chunks from a generator that counts what the client took from it:
    what the server did not read stays in the generator."""

    CHUNK = 64 * 1024

    def __init__(self, total: int) -> None:
        self.total = total
        self.consumed = 0

    def __iter__(self) -> Iterator[bytes]:
        yield b'{"message": "'
        while self.consumed < self.total:
            self.consumed += self.CHUNK
            yield b"a" * self.CHUNK


def send_recorded(url: str, body: RecordedBody, headers: dict[str, str]) -> httpx.Response:
    with httpx.Client(timeout=30) as client:
        return client.post(url, content=iter(body), headers=headers)


# --- Authentication comes before the body ------------------------------------------------------


@pytest.mark.parametrize(
    "content",
    [b'{"unexpected": [1, 2, 3], "message": 5}', b"not json", b'{"message": ', b"\xff\xfe"],
    ids=["schema", "text", "cut", "binary"],
)
@pytest.mark.parametrize("authorization", [None, "Bearer nope"], ids=["no-token", "bad-token"])
@pytest.mark.parametrize("endpoint", SIGNED_IN_ENDPOINTS, ids=IDS[:-1])
def test_an_anonymous_caller_gets_the_same_401_whatever_the_body(
    apps: Apps, endpoint: Endpoint, authorization: str | None, content: bytes
):
    # Given a caller without a valid token
    headers = {**endpoint.headers, "Content-Type": "application/json"}
    if authorization is not None:
        headers["Authorization"] = authorization
    with httpx.Client(timeout=30) as client:
        # When it sends a body the schema refuses, and then one it accepts
        refused = client.post(endpoint.url(apps), content=content, headers=headers)
        accepted = client.post(endpoint.url(apps), json=endpoint.body, headers=headers)
    # Then both are the same 401: nothing of the schema (field names, types) in the answer
    assert refused.status_code == 401, refused.text
    assert refused.json()["code"] == "UNAUTHORIZED"
    assert refused.json() == accepted.json()


@pytest.mark.parametrize("endpoint", SIGNED_IN_ENDPOINTS, ids=IDS[:-1])
def test_a_token_given_twice_is_no_token(apps: Apps, endpoint: Endpoint):
    # Given a valid token, sent twice (which one counts would be a guess)
    token = apps.bearer()["Authorization"]
    headers = [*endpoint.headers.items(), ("Authorization", token), ("Authorization", token)]
    # When it comes with a body the schema refuses, Then it is a 401, before the body
    response = httpx.post(endpoint.url(apps), content=b'{"unexpected": 1}', headers=headers)
    assert (response.status_code, response.json()["code"]) == (401, "UNAUTHORIZED")


# --- Bodies over the limit -----------------------------------------------------------------------


@pytest.mark.parametrize("signed_in", [False, True], ids=["anonymous", "signed-in"])
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
def test_a_body_over_the_limit_is_413_before_it_is_parsed(
    apps: Apps, endpoint: Endpoint, signed_in: bool
):
    # Given a body one byte over the endpoint's limit, which its schema would refuse with 422
    headers = {**endpoint.headers, **(apps.bearer() if signed_in else {})}
    # When it is sent with its Content-Length
    response = httpx.post(
        endpoint.url(apps), content=oversized(endpoint.limit), headers=headers, timeout=30
    )
    # Then it is 413 in the `{code, detail}` shape, not a 401 or a 422 of its contents
    assert response.status_code == 413, response.text
    assert response.json().keys() == {"code", "detail"}
    assert response.json()["code"] == TOO_LARGE["code"]
    assert f"{endpoint.limit // 1024} КБ" in response.json()["detail"]


@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
def test_a_body_at_the_limit_is_read_and_answered(apps: Apps, endpoint: Endpoint):
    # Given an accepted body padded with whitespace to exactly the endpoint's limit
    body = endpoint.body | ({"threadId": uuid.uuid4().hex} if "threadId" in endpoint.body else {})
    content = padded(body, endpoint.limit)
    headers = {**endpoint.headers, **apps.bearer(), "Content-Type": "application/json"}
    # When a signed-in caller sends it, Then the endpoint answers it as it answers the body
    response = httpx.post(endpoint.url(apps), content=content, headers=headers, timeout=60)
    assert response.status_code == endpoint.accepted, response.text[:500]


@pytest.mark.parametrize("declared", [True, False], ids=["content-length", "chunked"])
@pytest.mark.parametrize("endpoint", ENDPOINTS, ids=IDS)
def test_a_large_streamed_body_is_refused_without_being_read(
    apps: Apps, endpoint: Endpoint, declared: bool
):
    # Given a body of 64 MB more than the limit, streamed from a generator, with its
    # Content-Length or chunked without one
    body = RecordedBody(endpoint.limit + 64 * 1024 * 1024)
    headers = {**endpoint.headers, **apps.bearer(), "Content-Type": "application/json"}
    if declared:
        headers["Content-Length"] = str(body.total + len(b'{"message": "'))
    # When it is sent
    response = send_recorded(endpoint.url(apps), body, headers)
    # Then the answer is 413, and most of the body was never taken from the client: the server
    # stopped at the limit (what it took is the limit and the sockets' buffers, far below 64 MB)
    assert response.status_code == 413, response.text
    assert response.json()["code"] == TOO_LARGE["code"]
    assert body.consumed < body.total // 2
