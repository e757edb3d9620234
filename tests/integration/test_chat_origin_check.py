"""The chat function's origin check: with ORIGIN_VERIFY_SECRET set (in AWS) it answers only
requests that carry the secret in X-Origin-Verify, as CloudFront sends them; unset, nothing
changes. Through a real uvicorn server, as Lambda Web Adapter proxies to it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from functions.chat.app import create_app
from local.agent_stack import AgentStack, minted_service_tokens, user_issuer
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.http.origin import ORIGIN_VERIFY_HEADER, OriginCheck
from sstools_agent.settings import ChatSettings
from sstools_agent.wiring.chat import build_chat
from tests.support.models import ScriptedChatModel
from tests.support.seed import DASHBOARD_10

SECRET = "s3cr3t-value-cloudfront-sends-0123456789abcdef"
STATUS = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}


def chat_url(stack: AgentStack, origin_verify_secret: SecretStr | None) -> Iterator[str]:
    """The chat app over this stack (a scripted model), as main.py builds it."""
    agent = stack.agent(ScriptedChatModel())
    deps = replace(
        build_chat(stack.settings),
        agent=lambda: agent,
        audit=MemoryAuditSink(),
        service_token=minted_service_tokens(stack.settings),
    )
    with serve(create_app(deps, origin_verify_secret=origin_verify_secret), lifespan="on") as url:
        yield url


@pytest.fixture
def checked(stack: AgentStack) -> Iterator[str]:
    yield from chat_url(stack, SecretStr(SECRET))


@pytest.fixture
def unchecked(stack: AgentStack) -> Iterator[str]:
    yield from chat_url(stack, None)


def bearer(stack: AgentStack) -> dict[str, str]:
    token = user_issuer(stack.settings).issue("user.engineer", 600, {"roles": ["engineer"]}).token
    return {"Authorization": f"Bearer {token}"}


def post(url: str, path: str, body: dict[str, Any], headers: Any) -> httpx.Response:
    return httpx.post(f"{url}{path}", json=body, headers=headers, timeout=30)


def events(response: httpx.Response) -> list[dict[str, Any]]:
    return [
        json.loads(line[6:]) for line in response.text.splitlines() if line.startswith("data: ")
    ]


@pytest.mark.parametrize(
    "origin",
    [
        [],
        [(ORIGIN_VERIFY_HEADER, "wrong")],
        [(ORIGIN_VERIFY_HEADER, SECRET[:-1])],
        [(ORIGIN_VERIFY_HEADER, SECRET + "x")],
        [(ORIGIN_VERIFY_HEADER, "")],
        [(ORIGIN_VERIFY_HEADER, SECRET), (ORIGIN_VERIFY_HEADER, SECRET)],
    ],
    ids=["missing", "wrong", "prefix", "longer", "empty", "twice"],
)
@pytest.mark.parametrize("path", ["/api/agent/chat", "/api/agent/chat/cancel", "/"])
def test_a_request_not_from_cloudfront_is_refused(checked, stack, origin, path):
    # Given a valid user token, but not the origin header's secret (once, exactly)
    headers = [*bearer(stack).items(), *origin]
    # When the request reaches the function directly (its function URL, or ChatApi)
    response = post(checked, path, {**STATUS, "conversation_id": "c-1"}, headers)
    # Then it is refused before anything else, in the app's error shape
    assert response.status_code == 403
    assert response.headers["content-type"] == "application/json"
    assert response.json() == {
        "code": "FORBIDDEN",
        "detail": "This endpoint is served only through the ss-tools distribution.",
    }


def test_a_request_from_cloudfront_gets_the_stream(checked, stack):
    headers = {**bearer(stack), ORIGIN_VERIFY_HEADER: SECRET}
    response = post(checked, "/api/agent/chat", STATUS, headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    assert events(response)[-1]["metadata"]["type"] == "stream_end"


def test_the_header_name_is_case_insensitive(checked, stack):
    headers = {**bearer(stack), ORIGIN_VERIFY_HEADER.lower(): SECRET}
    assert post(checked, "/api/agent/chat", STATUS, headers).status_code == 200


def test_past_the_check_the_apps_own_answers_are_unchanged(checked, unchecked):
    # No user token: the app's 401, not the origin check's 403
    for url, headers in [(checked, {ORIGIN_VERIFY_HEADER: SECRET}), (unchecked, {})]:
        response = post(url, "/api/agent/chat", STATUS, headers)
        assert response.status_code == 401
        assert response.json()["code"] == "UNAUTHORIZED"


def test_without_the_setting_nothing_is_checked(unchecked, stack):
    # Locally and in the tests: no origin header, the stream as before
    response = post(unchecked, "/api/agent/chat", STATUS, bearer(stack))
    assert response.status_code == 200
    assert events(response)[-1]["metadata"]["type"] == "stream_end"
    # and a header sent anyway changes nothing
    headers = {**bearer(stack), ORIGIN_VERIFY_HEADER: "anything"}
    assert post(unchecked, "/api/agent/chat", STATUS, headers).status_code == 200


def test_the_setting_is_read_from_the_environment(monkeypatch):
    assert ChatSettings(_env_file=None).origin_verify_secret is None
    monkeypatch.setenv("ORIGIN_VERIFY_SECRET", SECRET)
    secret = ChatSettings(_env_file=None).origin_verify_secret
    assert secret is not None
    assert secret.get_secret_value() == SECRET


def test_an_empty_secret_is_refused_at_start():
    # ORIGIN_VERIFY_SECRET="" would otherwise let a request with an empty header through
    with pytest.raises(ValueError, match="secret"):
        OriginCheck(lambda scope, receive, send: None, secret="")  # type: ignore[arg-type,return-value]
