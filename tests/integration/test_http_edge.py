"""What both HTTP apps answer at their edge, over real HTTP (uvicorn) with moto behind: malformed
tokens, bodies that do not validate or are not JSON, and internal failures, always `{code, detail}`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest

from functions.api.app import create_app as create_api_app
from local.agent_stack import AgentStack, SampleUpstream
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.domain.attempt_limits import AuthFailureSampler
from sstools_agent.domain.audit import AuditKind, AuditRecord
from sstools_agent.http.client_address import ClientAddresses
from sstools_agent.settings import Settings
from sstools_agent.wiring.adapters import secrets_reader_from
from sstools_agent.wiring.api import build_api
from tests.support.chat_http import STATUS
from tests.support.http_apps import (
    ORIGIN_SECRET,
    SOME_ID,
    Apps,
    FakeClock,
    from_viewer,
    serve_apps,
)
from tests.support.seed import DASHBOARD_10


@pytest.fixture(scope="module")
def module_stack(stack_settings: Settings, upstream_server: SampleUpstream) -> AgentStack:
    """One stack for the module: these tests change no upstream state."""
    settings = stack_settings.model_copy(update={"upstream_base_url": upstream_server.base_url})
    return AgentStack(settings, upstream_server)


@pytest.fixture(scope="module")
def apps(module_stack: AgentStack) -> Iterator[Apps]:
    yield from serve_apps(module_stack)


@pytest.fixture(scope="module")
def cloudfront_apps(module_stack: AgentStack) -> Iterator[Apps]:
    """Both apps as behind CloudFront: requests name their viewer (`from_viewer`)."""
    yield from serve_apps(module_stack, ORIGIN_SECRET)


@pytest.fixture(scope="module")
def broken_apps(module_stack: AgentStack) -> Iterator[Apps]:
    """Both apps pointed at a conversations table that does not exist in moto: every storage
    call fails as it would if the table were deleted or the role lost its permissions."""
    settings = module_stack.settings.model_copy(update={"conversations_table": "NoSuchTable"})
    yield from serve_apps(AgentStack(settings, module_stack.upstream))


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


# --- Bodies ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "conversation_id",
    ["x" * 10_000, "x#META", "", "../etc", 42],
    ids=["10k", "hash", "empty", "path", "int"],
)
def test_cancel_validates_the_conversation_id(apps: Apps, conversation_id: Any):
    response = httpx.post(
        f"{apps.chat_url}/api/agent/chat/cancel",
        json={"conversation_id": conversation_id},
        headers=apps.bearer(),
    )
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert "conversation_id" in response.json()["detail"]


def test_an_unknown_environment_is_named_in_the_refusal(apps: Apps):
    context = {**DASHBOARD_10, "envId": "nowhere"}
    chat = httpx.post(
        f"{apps.chat_url}/api/agent/chat",
        json={**STATUS, "ui_context": context},
        headers=apps.bearer(),
    )
    api = httpx.post(
        f"{apps.api_url}/api/assistant/conversations",
        json={"ui_context": context},
        headers=apps.bearer(),
    )
    for response in (chat, api):
        assert response.status_code == 422
        problem = response.json()["problems"][0]
        assert problem["reason"] == "unknown_environment"
        assert problem["detail"] == "envId: envId 'nowhere' is not a known environment"
        assert "{" not in response.json()["detail"]


@pytest.mark.parametrize(
    "body",
    [b"not json", b'{"message": ', b"\xff\xfe\x00", b""],
    ids=["text", "cut", "binary", "empty"],
)
def test_a_body_that_is_not_json_is_422_on_both_apps(apps: Apps, body: bytes):
    headers = {**apps.bearer(), "Content-Type": "application/json"}
    answers = [
        httpx.post(f"{apps.chat_url}/api/agent/chat", content=body, headers=headers),
        httpx.post(f"{apps.chat_url}/api/agent/chat/cancel", content=body, headers=headers),
        httpx.post(f"{apps.api_url}/api/assistant/conversations", content=body, headers=headers),
    ]
    for response in answers:
        assert response.status_code == 422, (response.request.url, response.text)
        assert response.json()["code"] == "VALIDATION_ERROR"


@pytest.mark.parametrize("action", ["confirm", "deny", "resume"])
def test_a_message_sent_with_an_action_is_refused_not_dropped(apps: Apps, action: str):
    body = {
        "action": action,
        "conversation_id": SOME_ID,
        "confirmation_id": "card",
        "message": "и ещё задеплой в prod",
    }
    response = httpx.post(f"{apps.chat_url}/api/agent/chat", json=body, headers=apps.bearer())
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert "takes no message" in response.json()["detail"]


def test_the_seeds_confirm_message_is_still_accepted(apps: Apps):
    # The seed's client sends {message: "confirm", action: "confirm"}: that is no extra text
    body = {
        "action": "confirm",
        "conversation_id": SOME_ID,
        "confirmation_id": "card",
        "message": "confirm",
    }
    response = httpx.post(f"{apps.chat_url}/api/agent/chat", json=body, headers=apps.bearer())
    assert (response.status_code, response.json()["code"]) == (404, "NOT_FOUND")


# --- Internal failures -------------------------------------------------------------------------


def test_an_internal_failure_is_500_with_a_json_body_on_both_apps(broken_apps: Apps):
    # Given both apps' conversations table is missing (a real DynamoDB fault from moto)
    headers = broken_apps.bearer()
    # When a request needs it
    answers = [
        httpx.post(
            f"{broken_apps.chat_url}/api/agent/chat", json=STATUS, headers=headers, timeout=30
        ),
        httpx.post(
            f"{broken_apps.chat_url}/api/agent/chat/cancel",
            json={"conversation_id": SOME_ID},
            headers=headers,
        ),
        httpx.get(f"{broken_apps.api_url}/api/assistant/conversations", headers=headers),
        httpx.post(f"{broken_apps.api_url}/api/assistant/conversations", json={}, headers=headers),
    ]
    # Then the answer is a 500 in the `{code, detail}` shape, naming no internals
    for response in answers:
        assert response.status_code == 500, (response.request.url, response.text)
        assert response.headers["content-type"] == "application/json"
        assert response.json() == {
            "code": "INTERNAL_ERROR",
            "detail": "Internal error; please try again later.",
        }


# --- What failed authentication costs ------------------------------------------------------------


def failed_auth_records(audit: MemoryAuditSink, outcome: str = "refused") -> list[AuditRecord]:
    return [r for r in audit.records if r.kind is AuditKind.AUTH_FAILED and r.outcome == outcome]


def test_the_request_id_in_an_audit_record_is_bounded_and_safe(cloudfront_apps: Apps):
    apps = cloudfront_apps
    cases = (("x" * 8192, False), ("a b<script>", False), ("x" * 129, False), ("req-4.a:b_c", True))
    for n, (header, kept) in enumerate(cases):
        before = len(failed_auth_records(apps.chat_audit)), len(failed_auth_records(apps.api_audit))
        headers = {
            "Authorization": "Bearer nope",
            "X-Request-ID": header,
            **from_viewer(f"10.9.0.{n}"),
        }
        httpx.post(f"{apps.chat_url}/api/agent/chat", json=STATUS, headers=headers)
        httpx.get(f"{apps.api_url}/api/assistant/conversations", headers=headers)
        for audit, count in zip((apps.chat_audit, apps.api_audit), before, strict=True):
            [record] = failed_auth_records(audit)[count:]
            request_id = record.detail["request_id"]
            assert (request_id == header) is kept
            assert len(request_id) <= 128
            assert (
                request_id.replace("-", "")
                .replace(".", "")
                .replace(":", "")
                .replace("_", "")
                .isalnum()
            )


def test_a_flood_of_failed_logins_writes_a_bounded_number_of_records(cloudfront_apps: Apps):
    apps = cloudfront_apps
    # Given 300 failed logins from one source on the chat function (default: 5 a source a minute)
    headers = {
        "Authorization": "Bearer nope",
        "X-Request-ID": "r" * 128,
        **from_viewer("10.1.1.1"),
    }
    before = len(failed_auth_records(apps.chat_audit))
    started = time.time()
    with httpx.Client(timeout=30) as client:
        for _ in range(300):
            assert (
                client.post(
                    f"{apps.chat_url}/api/agent/chat", json=STATUS, headers=headers
                ).status_code
                == 401
            )
    # Then at most 5 records were written in each minute (the windows are the clock's minutes:
    # a flood that crosses one gets 5 more), each small
    minutes = int(time.time() // 60) - int(started // 60) + 1
    written = failed_auth_records(apps.chat_audit)[before:]
    assert 1 <= len(written) <= 5 * minutes
    assert all(len(json.dumps(r.to_payload())) < 1024 for r in written)


def test_suppressed_failures_are_counted_in_one_aggregate_record(stack: AgentStack):
    # Given the REST API with 2 records a source and 10 a window, under a clock the test moves
    clock, audit = FakeClock(), MemoryAuditSink()
    sampler = AuthFailureSampler(per_source=2, per_window=10, window_s=60, clock=clock)
    api = create_api_app(
        replace(
            build_api(stack.settings),
            audit=audit,
            auth_failures=sampler,
            client_addresses=ClientAddresses(ORIGIN_SECRET),
        )
    )
    with serve(api) as url, httpx.Client(timeout=30) as client:
        # When 20 sources fail 3 times each within the window
        for source in range(20):
            for _ in range(3):
                response = client.get(
                    f"{url}/api/assistant/conversations",
                    headers={"Authorization": "Bearer nope", **from_viewer(f"10.2.0.{source}")},
                )
                assert response.status_code == 401
        assert len(failed_auth_records(audit)) == 10
        # And one more failure comes after the window ended
        clock.now += 60
        client.get(f"{url}/api/assistant/conversations", headers={"Authorization": "Bearer nope"})
    # Then the closed window is one aggregate record: 50 failures not recorded, from 20 sources
    [aggregate] = failed_auth_records(audit, "suppressed")
    assert (aggregate.detail["suppressed"], aggregate.detail["sources"]) == (50, 20)
    assert len(failed_auth_records(audit)) == 11


def test_failed_service_token_requests_are_audited_and_rate_limited(stack: AgentStack):
    # Given the REST API allowing 3 failures a source in a 60 s window, under a clock that stays
    # in one window (the real one may pass a minute's edge between the 3rd failure and the 4th)
    audit = MemoryAuditSink()
    settings = stack.settings.model_copy(
        update={"service_token_max_failures": 3, "service_token_failure_window_s": 60}
    )
    limiter = settings.service_token_limiter(clock=FakeClock())
    api = create_api_app(
        replace(
            build_api(settings),
            audit=audit,
            service_token_failures=limiter,
            client_addresses=ClientAddresses(ORIGIN_SECRET),
        )
    )
    reader = secrets_reader_from(settings).client_credentials(settings.service_client_secret_id)
    right = {"client_id": reader.client_id, "client_secret": reader.client_secret}
    wrong = {**right, "client_secret": "guess"}
    attacker, agent = from_viewer("10.3.0.1"), from_viewer("10.3.0.2")
    with serve(api) as url, httpx.Client(timeout=30) as client:
        token = f"{url}/api/auth/service-token"
        # When one source guesses 3 times, each is a 401 and an audit record
        for _ in range(3):
            response = client.post(token, json=wrong, headers=attacker)
            assert response.status_code == 401
        records = failed_auth_records(audit)
        assert len(records) == 3
        assert {(r.detail["endpoint"], r.detail["source"]) for r in records} == {
            ("service-token", "10.3.0.1")
        }
        # Then its next attempts are 429 with Retry-After, even with the right credentials
        for body in (wrong, right):
            response = client.post(token, json=body, headers=attacker)
            assert response.status_code == 429
            assert response.json()["code"] == "RATE_LIMITED"
            assert set(response.json()) == {"code", "detail"}
            assert 0 < int(response.headers["Retry-After"]) <= 60
        # And another source still gets its token
        assert client.post(token, json=right, headers=agent).status_code == 200


def test_a_method_a_path_does_not_serve_is_405_with_its_own_code_and_allow(apps: Apps):
    response = httpx.patch(
        f"{apps.api_url}/api/assistant/conversations/{SOME_ID}", json={}, headers=apps.bearer()
    )
    assert response.status_code == 405
    assert response.json()["code"] == "METHOD_NOT_ALLOWED"
    assert "DELETE" in response.headers["Allow"]


@pytest.mark.parametrize("ui_context", ["x", 5, ["dashboard"]], ids=["text", "number", "list"])
def test_the_rest_api_refuses_a_page_context_as_the_chat_does_and_audits_it(
    apps: Apps, ui_context: Any
):
    headers = apps.bearer()
    listed = httpx.get(f"{apps.api_url}/api/assistant/conversations", headers=headers).json()
    before = len(apps.api_audit.records)
    chat = httpx.post(
        f"{apps.chat_url}/api/agent/chat",
        json={"message": "hi", "ui_context": ui_context},
        headers=headers,
    )
    api = httpx.post(
        f"{apps.api_url}/api/assistant/conversations",
        json={"title": "t", "ui_context": ui_context},
        headers=headers,
    )
    for response in (chat, api):
        assert response.status_code == 422
        assert response.json()["code"] == "INVALID_CONTEXT"
        assert response.json()["problems"][0]["reason"] == "not_an_object"
    rejected = [r for r in apps.api_audit.records[before:] if r.kind is AuditKind.CONTEXT_REJECTED]
    assert len(rejected) == 1
    after = httpx.get(f"{apps.api_url}/api/assistant/conversations", headers=headers).json()
    assert after == listed


def test_an_idempotency_key_given_twice_is_refused_and_nothing_is_appended(apps: Apps):
    headers = apps.bearer()
    created = httpx.post(
        f"{apps.api_url}/api/assistant/conversations", json={"title": "t"}, headers=headers
    ).json()
    response = httpx.post(
        f"{apps.api_url}/api/assistant/conversations/{created['id']}/messages",
        json={"role": "user", "content": "hi"},
        headers=[
            *headers.items(),
            ("Idempotency-Key", "key-0000001"),
            ("Idempotency-Key", "key-0000002"),
        ],
    )
    assert (response.status_code, response.json()["code"]) == (422, "VALIDATION_ERROR")
    assert "idempotency-key" in response.json()["detail"]
    history = httpx.get(
        f"{apps.api_url}/api/assistant/history",
        params={"conversation_id": created["id"]},
        headers=headers,
    ).json()
    assert history["items"] == []
