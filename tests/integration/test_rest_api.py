"""The REST API function through real HTTP: the API and chat apps behind the local gateway (one
origin, routed by the template's own paths), conversations in moto, the service token signed by
the template's KMS key in moto, and the sample upstream verifying it through the JWKS endpoint.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import httpx
import jwt
import pytest

from functions.api.app import create_app as create_api_app
from local.agent_stack import AgentStack, SampleUpstream, chat_app, user_issuer
from local.gateway import LocalGateway
from local.servers import serve
from sstools_agent.adapters.dynamodb.conversations import DynamoDBConversationStore
from sstools_agent.adapters.jwks import JwksUrlKeys
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.adapters.service_tokens import KmsJwtIssuer, ServiceTokenClient
from sstools_agent.domain.identity import AuthenticationError
from sstools_agent.settings import Settings
from sstools_agent.wiring.adapters import (
    client_credentials_from,
    secrets_reader_from,
    service_verifier_from,
)
from sstools_agent.wiring.api import build_api
from tests.support.models import ScriptedChatModel
from tests.support.seed import DASHBOARD_10, DATASET_15

STATUS = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}
DEPLOY = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}


@dataclass
class Origin:
    """The local stack's one origin, and what a test needs to act as several users."""

    url: str
    stack: AgentStack
    store: DynamoDBConversationStore

    def user(self, role: str = "engineer") -> dict[str, str]:
        """Headers of a new user (each test's users see only their own conversations)."""
        subject = f"{role}-{uuid.uuid4().hex[:10]}"
        token = user_issuer(self.stack.settings).issue(subject, 600, {"roles": [role]}).token
        return {"Authorization": f"Bearer {token}"}

    def get(self, path: str, headers: dict[str, str], **params: Any) -> httpx.Response:
        return httpx.get(f"{self.url}{path}", headers=headers, params=params, timeout=30)

    def post(
        self, path: str, headers: dict[str, str], body: dict[str, Any] | None = None
    ) -> httpx.Response:
        return httpx.post(f"{self.url}{path}", headers=headers, json=body or {}, timeout=30)

    def delete(self, path: str, headers: dict[str, str]) -> httpx.Response:
        return httpx.delete(f"{self.url}{path}", headers=headers, timeout=30)

    def create(self, headers: dict[str, str], title: str | None = None) -> str:
        response = self.post("/api/assistant/conversations", headers, {"title": title})
        assert response.status_code == 201, response.text
        return str(response.json()["id"])

    def chat(
        self, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, list[dict[str, Any]]]:
        """A chat turn through the same origin; the status and the events' data."""
        with httpx.stream(
            "POST", f"{self.url}/api/agent/chat", headers=headers, json=body, timeout=30
        ) as response:
            if response.status_code != 200:
                return response.status_code, [json.loads(response.read())]
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
        return 200, [json.loads(line[6:]) for line in lines]

    def append(
        self, conversation_id: str, headers: dict[str, str], key: str, content: str
    ) -> httpx.Response:
        return httpx.post(
            f"{self.url}/api/assistant/conversations/{conversation_id}/messages",
            headers={**headers, "Idempotency-Key": key},
            json={"role": "user", "content": content},
            timeout=30,
        )


@pytest.fixture(scope="module")
def origin(stack_settings: Settings, upstream_server: SampleUpstream) -> Iterator[Origin]:
    """One origin for the module (users keep tests apart: each test makes its own)."""
    settings = stack_settings.model_copy(update={"upstream_base_url": upstream_server.base_url})
    stack = AgentStack(settings, upstream_server)
    api = create_api_app(build_api(settings))
    chat, store, _ = chat_app(stack, ScriptedChatModel(), audit=MemoryAuditSink())
    gateway = LocalGateway({"ChatFunction": chat, "ApiFunction": api})
    with serve(gateway, lifespan="on") as url:
        yield Origin(url, stack, store)


def types(events: list[dict[str, Any]]) -> list[str | None]:
    return [event["metadata"].get("type") for event in events]


def conversation_of(events: list[dict[str, Any]]) -> str:
    end = next(e for e in events if e["metadata"].get("type") == "stream_end")
    return str(end["metadata"]["conversation_id"])


# --- Create and list ----------------------------------------------------------------------


def test_create_answers_id_title_and_creation_time(origin: Origin):
    alice = origin.user()
    response = origin.post("/api/assistant/conversations", alice, {"title": "  Отчёт Q3  "})
    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "title", "created_at", "subject"}
    assert body["title"] == "Отчёт Q3"
    assert body["subject"] is None  # created from no page
    untitled = origin.post("/api/assistant/conversations", alice).json()
    assert untitled["title"] == "Новый разговор"
    listed = origin.get("/api/assistant/conversations", alice).json()["items"]
    assert [item["id"] for item in listed] == [untitled["id"], body["id"]]


def test_a_bad_page_context_creates_nothing(origin: Origin):
    alice = origin.user()
    bad = {**DASHBOARD_10, "envId": "nowhere"}
    response = origin.post("/api/assistant/conversations", alice, {"ui_context": bad})
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_CONTEXT"
    assert origin.get("/api/assistant/conversations", alice).json()["items"] == []


def test_pages_cover_every_conversation_once_newest_first(origin: Origin):
    alice = origin.user()
    created = [origin.create(alice, f"conversation {n}") for n in range(7)]
    seen, cursor, pages = [], None, 0
    while True:
        params: dict[str, Any] = {"limit": 3}
        if cursor:
            params["cursor"] = cursor
        page = origin.get("/api/assistant/conversations", alice, **params).json()
        seen += [item["id"] for item in page["items"]]
        pages += 1
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(reversed(created))
    assert pages == 3  # 3 + 3 + 1, and no empty last page


def test_search_in_titles_ignores_case(origin: Origin):
    alice = origin.user()
    origin.create(alice, "Отчёт по продажам")
    origin.create(alice, "старый ОТЧЁТ")
    origin.create(alice, "Deploy to prod")
    found = origin.get("/api/assistant/conversations", alice, q="отчёт").json()["items"]
    assert sorted(item["title"] for item in found) == ["Отчёт по продажам", "старый ОТЧЁТ"]
    assert [
        i["title"]
        for i in origin.get("/api/assistant/conversations", alice, q="DEPLOY").json()["items"]
    ] == ["Deploy to prod"]


def test_a_listed_conversation_says_what_it_is_about_and_is_found_by_it(origin: Origin):
    # Given a conversation the chat started on dashboard 10 in ss-dev, one created here on
    # dataset 15 in staging, and one with no page
    alice = origin.user()
    status, _ = origin.chat(alice, STATUS)
    assert status == 200
    created = origin.post(
        "/api/assistant/conversations",
        alice,
        {"title": "Где используется?", "ui_context": DATASET_15},
    )
    assert created.json()["subject"] == {
        "object_type": "dataset",
        "object_id": "15",
        "object_name": None,
        "env_id": "staging",
    }
    origin.create(alice, "что ты умеешь?")
    # When the list is read
    items = origin.get("/api/assistant/conversations", alice).json()["items"]
    # Then each row carries its page's object and environment as data (null without a page)
    subjects = {item["title"]: item["subject"] for item in items}
    assert subjects["какой статус у этого дашборда?"] == {
        "object_type": "dashboard",
        "object_id": "10",
        "object_name": "Отчёт по энергопотреблению",
        "env_id": "ss-dev",
    }
    assert subjects["что ты умеешь?"] is None

    def found(q: str) -> list[str]:
        page = origin.get("/api/assistant/conversations", alice, q=q).json()
        return [item["title"] for item in page["items"]]

    # And a search finds them by object name, type word, environment and title words together
    assert found("энергопотреблению") == ["какой статус у этого дашборда?"]
    assert found("датасет staging") == ["Где используется?"]
    assert found("статус ss-dev") == ["какой статус у этого дашборда?"]
    assert found("статус staging") == []


def test_a_new_conversation_is_offered_questions_the_users_role_can_have_answered(
    origin: Origin,
):
    def starters(role: str, **page: str) -> list[dict[str, str]]:
        response = origin.get("/api/assistant/starters", origin.user(role), **page)
        assert response.status_code == 200, response.text
        return list(response.json()["items"])

    dashboard = {"object_type": "dashboard", "env_id": "ss-dev"}
    analyst, engineer = starters("analyst", **dashboard), starters("engineer", **dashboard)
    assert [item["tool"] for item in analyst] == [
        "get_health_summary",
        "run_llm_validation",
        "search_dashboards",
    ]
    assert "deploy_dashboard" in [item["tool"] for item in engineer]
    assert analyst[0]["text"] == "Какое здоровье у этого дашборда?"
    dataset = starters("analyst", object_type="dataset", env_id="staging")
    assert all("датасет" in item["text"] for item in dataset[:2])
    assert starters("analyst")[0]["text"] == "Что ты умеешь?"
    refused = origin.get(
        "/api/assistant/starters", origin.user(), object_type="report", env_id="ss-dev"
    )
    assert (refused.status_code, refused.json()["code"]) == (422, "INVALID_CONTEXT")


@pytest.mark.parametrize("limit", [0, 101, "many"])
def test_page_sizes_are_bounded(origin: Origin, limit: Any):
    response = origin.get("/api/assistant/conversations", origin.user(), limit=limit)
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert "limit" in response.json()["detail"]


def test_tampered_foreign_and_misused_cursors_are_400(origin: Origin):
    alice, bob = origin.user(), origin.user()
    for n in range(3):
        origin.create(alice, f"отчёт {n}")
        origin.create(bob, f"note {n}")
    cursor = origin.get("/api/assistant/conversations", alice, limit=1).json()["next_cursor"]
    assert cursor
    tampered = cursor[:-3] + ("AAA" if not cursor.endswith("AAA") else "BBB")
    bob_cursor = origin.get("/api/assistant/conversations", bob, limit=1).json()["next_cursor"]
    cases = [
        ({"cursor": tampered}, alice),
        ({"cursor": "not-a-cursor"}, alice),
        ({"cursor": bob_cursor}, alice),  # another user's
        ({"cursor": cursor, "q": "отчёт"}, alice),  # another query's
    ]
    for params, headers in cases:
        response = origin.get("/api/assistant/conversations", headers, limit=1, **params)
        assert response.status_code == 400, params
        assert response.json() == {
            "code": "INVALID_CURSOR",
            "detail": "The cursor is not valid for this listing.",
        }
    # The genuine cursor still works for its owner
    assert (
        origin.get("/api/assistant/conversations", alice, limit=1, cursor=cursor).status_code == 200
    )


# --- Ownership ----------------------------------------------------------------------------


def test_another_users_conversation_is_not_found_everywhere(origin: Origin):
    alice, mallory = origin.user(), origin.user("admin")
    conversation = origin.create(alice, "private")
    missing = uuid.uuid4().hex
    for target in (conversation, missing):
        answers = [
            origin.get("/api/assistant/history", mallory, conversation_id=target),
            origin.append(target, mallory, "key-0000001", "hi"),
            origin.delete(f"/api/assistant/conversations/{target}", mallory),
            origin.get(f"/api/agent/conversations/{target}/active", mallory),
        ]
        for response in answers:
            assert response.status_code == 404, response.request.url
            assert response.json() == {"code": "NOT_FOUND", "detail": "No such conversation."}
    assert origin.get("/api/assistant/conversations", mallory).json()["items"] == []
    # Nothing changed for the owner
    history = origin.get("/api/assistant/history", alice, conversation_id=conversation).json()
    assert history["items"] == []
    assert history["is_archived"] is False


@pytest.mark.parametrize(
    "authorization", [None, "Bearer not.a.jwt", "Basic dXNlcjpwYXNz"], ids=["none", "bad", "basic"]
)
def test_every_user_endpoint_requires_the_user_jwt(origin: Origin, authorization: str | None):
    headers = {"Authorization": authorization} if authorization else {}
    some_id = uuid.uuid4().hex
    answers = [
        origin.post("/api/assistant/conversations", headers),
        origin.get("/api/assistant/conversations", headers),
        origin.get("/api/assistant/history", headers, conversation_id=some_id),
        origin.append(some_id, headers, "key-0000001", "hi"),
        origin.delete(f"/api/assistant/conversations/{some_id}", headers),
        origin.get(f"/api/agent/conversations/{some_id}/active", headers),
        origin.get("/api/assistant/environments", headers),
    ]
    for response in answers:
        assert response.status_code == 401, response.request.url
        assert response.json()["code"] == "UNAUTHORIZED"


def test_the_environments_are_the_ones_the_chat_accepts_in_a_page_context(origin: Origin):
    # Given the deployment's environments (the chat validates envId against the same registry)
    known = origin.stack.settings.environments()
    # When the page asks for its selector's options
    response = origin.get("/api/assistant/environments", origin.user("analyst"))
    # Then it gets them in declaration order, each with its tier
    assert response.status_code == 200
    assert response.json() == {"items": [{"id": e.env_id, "tier": e.tier} for e in known]}
    assert [item["id"] for item in response.json()["items"]] == ["ss-dev", "staging", "prod"]


# --- History, as the chat stored it ---------------------------------------------------------


def test_history_holds_tool_calls_and_confirmations_in_order(origin: Origin):
    egor = origin.user("engineer")
    status, events = origin.chat(egor, STATUS)
    assert status == 200
    conversation = conversation_of(events)
    status, events = origin.chat(egor, {**DEPLOY, "conversation_id": conversation})
    card = next(e for e in events if e["metadata"].get("type") == "confirm_required")
    status, events = origin.chat(
        egor,
        {
            "action": "deny",
            "conversation_id": conversation,
            "confirmation_id": card["metadata"]["confirmation_id"],
        },
    )
    assert "confirm_resolved" in types(events)

    history = origin.get("/api/assistant/history", egor, conversation_id=conversation).json()
    items = history["items"]
    assert [m["role"] for m in items] == ["user", "assistant", "user", "assistant", "assistant"]
    assert items[0]["content"] == STATUS["message"]
    assert items[0]["ui_context"]["objectId"] == "10"
    assert [m["seq"] for m in items] == sorted(m["seq"] for m in items)
    status_call = items[1]["tool_calls"][0]
    assert status_call["status"] == "tool_end"
    assert status_call["output"]
    assert items[3]["confirmations"][0]["type"] == "confirm_required"
    assert items[3]["confirmations"][0]["decision"]["environment"] == "staging"
    resolved = items[4]["confirmations"][0]
    assert (resolved["type"], resolved["result"]) == ("confirm_resolved", "denied")

    # The same history, one message a page
    paged, cursor = [], None
    while True:
        params: dict[str, Any] = {"conversation_id": conversation, "limit": 1}
        if cursor:
            params["cursor"] = cursor
        page = origin.get("/api/assistant/history", egor, **params).json()
        paged += page["items"]
        cursor = page["next_cursor"]
        if not cursor:
            break
    assert paged == items
    # A history cursor is no conversation cursor, and belongs to its conversation
    first = origin.get("/api/assistant/history", egor, conversation_id=conversation, limit=1)
    other = origin.create(egor, "other")
    for path, params in (
        ("/api/assistant/conversations", {}),
        ("/api/assistant/history", {"conversation_id": other}),
    ):
        response = origin.get(path, egor, cursor=first.json()["next_cursor"], **params)
        assert response.status_code == 400


# --- Soft delete ----------------------------------------------------------------------------


def test_soft_delete_hides_keeps_and_closes_the_conversation(origin: Origin):
    egor = origin.user("engineer")
    status, events = origin.chat(egor, STATUS)
    conversation = conversation_of(events)
    kept = origin.create(egor, "kept")

    response = origin.delete(f"/api/assistant/conversations/{conversation}", egor)
    assert response.status_code == 200
    assert response.json() == {"id": conversation, "is_archived": True}
    again = origin.delete(f"/api/assistant/conversations/{conversation}", egor)
    assert again.status_code == 200  # deleting twice is not an error

    listed = origin.get("/api/assistant/conversations", egor).json()["items"]
    assert [item["id"] for item in listed] == [kept]
    everything = origin.get("/api/assistant/conversations", egor, include_archived="true").json()
    archived = {item["id"]: item["is_archived"] for item in everything["items"]}
    assert archived == {kept: False, conversation: True}

    history = origin.get("/api/assistant/history", egor, conversation_id=conversation).json()
    assert history["is_archived"] is True
    assert len(history["items"]) == 2  # nothing was removed

    status, refusal = origin.chat(egor, {**STATUS, "conversation_id": conversation})
    assert status == 409
    assert refusal[0]["code"] == "CONVERSATION_ARCHIVED"
    appended = origin.append(conversation, egor, "after-delete-1", "hello?")
    assert appended.status_code == 409
    assert appended.json()["code"] == "CONVERSATION_ARCHIVED"
    after = origin.get("/api/assistant/history", egor, conversation_id=conversation).json()
    assert after["items"] == history["items"]


# --- Append -------------------------------------------------------------------------------


def test_append_is_idempotent_under_the_clients_key(origin: Origin):
    egor = origin.user()
    status, events = origin.chat(egor, STATUS)
    conversation = conversation_of(events)

    first = origin.append(conversation, egor, "note-000000001", "Записка после ответа")
    assert first.status_code == 201
    assert first.headers["Idempotent-Replayed"] == "false"
    retry = origin.append(conversation, egor, "note-000000001", "Записка после ответа")
    assert retry.status_code == 200
    assert retry.headers["Idempotent-Replayed"] == "true"
    assert retry.json() == first.json()

    reused = origin.append(conversation, egor, "note-000000001", "другой текст")
    assert reused.status_code == 409
    assert reused.json()["code"] == "IDEMPOTENCY_KEY_REUSED"

    items = origin.get("/api/assistant/history", egor, conversation_id=conversation).json()["items"]
    assert [m["content"] for m in items].count("Записка после ответа") == 1
    assert items[-1]["id"] == first.json()["id"]
    assert items[-1]["seq"] > items[-2]["seq"]

    # The next chat turn numbers its events after the appended message
    status, events = origin.chat(egor, {**STATUS, "conversation_id": conversation})
    assert status == 200
    items = origin.get("/api/assistant/history", egor, conversation_id=conversation).json()["items"]
    assert items[-3]["id"] == first.json()["id"]
    assert [m["seq"] for m in items] == sorted(m["seq"] for m in items)


def test_append_waits_for_the_end_of_the_stream(origin: Origin):
    egor = origin.user()
    conversation = origin.create(egor, "busy")
    record = asyncio_run(origin.store.get(conversation))
    asyncio_run(origin.store.start_turn(record, "run-in-another-tab", 30, new=False))
    busy = origin.append(conversation, egor, "while-busy-1", "hi")
    assert busy.status_code == 409
    assert busy.json()["code"] == "CONVERSATION_BUSY"
    asyncio_run(
        origin.store.finish_turn(conversation, "run-in-another-tab", 0, "2026-11-30T00:00:00.000Z")
    )
    assert origin.append(conversation, egor, "while-busy-1", "hi").status_code == 201


@pytest.mark.parametrize(
    ("headers", "body"),
    [
        ({}, {"role": "user", "content": "no key"}),
        ({"Idempotency-Key": "short"}, {"role": "user", "content": "key too short"}),
        ({"Idempotency-Key": "key-0000001"}, {"role": "system", "content": "not a role"}),
        ({"Idempotency-Key": "key-0000001"}, {"role": "user", "content": ""}),
        ({"Idempotency-Key": "key-0000001"}, {"role": "user", "content": "x", "extra": 1}),
    ],
    ids=["no-key", "short-key", "bad-role", "empty", "unknown-field"],
)
def test_invalid_appends_are_422_and_write_nothing(origin: Origin, headers, body):
    egor = origin.user()
    conversation = origin.create(egor)
    response = httpx.post(
        f"{origin.url}/api/assistant/conversations/{conversation}/messages",
        headers={**egor, **headers},
        json=body,
    )
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"
    items = origin.get("/api/assistant/history", egor, conversation_id=conversation).json()
    assert items["items"] == []


# --- The multi-tab gate ---------------------------------------------------------------------


def test_the_gate_says_whether_an_answer_runs_and_since_when(origin: Origin):
    egor = origin.user()
    conversation = origin.create(egor)
    idle = origin.get(f"/api/agent/conversations/{conversation}/active", egor).json()
    assert idle == {
        "conversation_id": conversation,
        "active": False,
        "since": None,
        "lease_until": None,
        "pending_confirmation_id": None,
    }
    before = time.time()
    record = asyncio_run(origin.store.get(conversation))
    asyncio_run(origin.store.start_turn(record, "run-in-tab-1", 30, new=False))
    busy = origin.get(f"/api/agent/conversations/{conversation}/active", egor).json()
    assert busy["active"] is True
    since = _epoch(busy["since"])
    assert before - 1 <= since <= time.time() + 1
    assert _epoch(busy["lease_until"]) > since + 25
    asyncio_run(
        origin.store.finish_turn(conversation, "run-in-tab-1", 0, "2026-11-30T00:00:00.000Z")
    )
    assert (
        origin.get(f"/api/agent/conversations/{conversation}/active", egor).json()["active"]
        is False
    )


def test_the_gate_shows_a_waiting_confirmation(origin: Origin):
    egor = origin.user()
    _status, events = origin.chat(egor, DEPLOY)
    card = next(e for e in events if e["metadata"].get("type") == "confirm_required")
    gate = origin.get(f"/api/agent/conversations/{conversation_of(events)}/active", egor).json()
    assert gate["active"] is False
    assert gate["pending_confirmation_id"] == card["metadata"]["confirmation_id"]


# --- Service token and JWKS -----------------------------------------------------------------


def client_credentials(origin: Origin) -> dict[str, str]:
    settings = origin.stack.settings
    credentials = secrets_reader_from(settings).client_credentials(
        settings.service_client_secret_id
    )
    return {"client_id": credentials.client_id, "client_secret": credentials.client_secret}


def test_service_token_verifies_through_the_published_jwks(origin: Origin):
    response = origin.post("/api/auth/service-token", {}, client_credentials(origin))
    assert response.status_code == 200
    body = response.json()
    assert body["token_type"] == "Bearer"
    assert body["expires_in"] == origin.stack.settings.service_token_ttl_s
    assert abs(body["expires_at"] - (time.time() + body["expires_in"])) < 5

    jwks = httpx.get(f"{origin.url}/.well-known/jwks.json")
    assert jwks.status_code == 200
    assert "max-age" in jwks.headers["Cache-Control"]
    assert all("d" not in key for key in jwks.json()["keys"])  # public halves only
    verifier = service_verifier_from(
        origin.stack.settings, JwksUrlKeys(f"{origin.url}/.well-known/jwks.json")
    )
    principal = verifier.verify(body["access_token"])
    assert principal.subject == "ss-tools-agent"
    assert principal.expires_at == body["expires_at"]


@pytest.mark.parametrize(
    "credentials",
    [
        {"client_id": "ss-tools-agent", "client_secret": "guess"},
        {"client_id": "someone-else", "client_secret": "guess"},
    ],
)
def test_wrong_client_credentials_get_no_token(origin: Origin, credentials):
    response = origin.post("/api/auth/service-token", {}, credentials)
    assert response.status_code == 401
    assert response.json() == {"code": "UNAUTHORIZED", "detail": "Unknown client credentials."}


def test_an_expired_service_token_is_refused(origin: Origin):
    settings = origin.stack.settings
    an_hour_ago = KmsJwtIssuer(
        settings.service_token_kms_key_ids,
        issuer=settings.service_token_issuer,
        audience=settings.service_token_audience,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
        clock=lambda: time.time() - 3600,
    )
    token = an_hour_ago.service_token(300).token
    verifier = service_verifier_from(settings, JwksUrlKeys(f"{origin.url}/.well-known/jwks.json"))
    with pytest.raises(AuthenticationError, match="expired"):
        verifier.verify(token)
    # and the upstream refuses a tool call carrying it
    user = user_issuer(settings).issue("egor", 60, {"roles": ["engineer"]}).token
    response = httpx.get(
        f"{origin.stack.upstream.base_url}/api/environments",
        headers={"Authorization": f"Bearer {token}", "X-User-JWT": user},
    )
    assert response.status_code == 401


def test_the_chat_client_caches_its_token_until_shortly_before_expiry(origin: Origin):
    settings = origin.stack.settings
    now = [time.time()]
    client = token_client(settings, lambda: f"{origin.url}/api/auth/service-token", now)
    first = asyncio_run(client())
    assert asyncio_run(client()) == first  # cached
    now[0] += settings.service_token_ttl_s - 90
    assert asyncio_run(client()) == first  # still over a minute left
    now[0] += 60
    assert asyncio_run(client()) != first  # under a minute left: a new one


def test_the_chat_calls_tools_with_the_token_from_the_endpoint(stack: AgentStack):
    """The whole chain on one origin: the chat fetches its service token from the REST API, the
    upstream verifies it with the REST API's JWKS."""
    settings = stack.settings
    api = create_api_app(build_api(settings))
    base: dict[str, str] = {}
    client = token_client(settings, lambda: f"{base['url']}/api/auth/service-token")
    chat, store, _ = chat_app(stack, ScriptedChatModel(), MemoryAuditSink(), service_token=client)
    with serve(LocalGateway({"ChatFunction": chat, "ApiFunction": api}), lifespan="on") as url:
        base["url"] = url
        upstream_jwks = service_verifier_from(settings, JwksUrlKeys(f"{url}/.well-known/jwks.json"))
        state = stack.upstream.app.app.state
        state.service_verifier, before = upstream_jwks, state.service_verifier
        try:
            origin = Origin(url, stack, store)
            status, events = origin.chat(origin.user(), STATUS)
        finally:
            state.service_verifier = before
    assert status == 200
    assert "tool_end" in types(events), events
    assert "tool_error" not in types(events)


def test_the_chat_answers_503_when_it_cannot_get_a_service_token(stack: AgentStack):
    nowhere = token_client(stack.settings, lambda: "http://127.0.0.1:9/api/auth/service-token")
    chat, store, _ = chat_app(stack, ScriptedChatModel(), MemoryAuditSink(), service_token=nowhere)
    with serve(chat, lifespan="on") as url:
        origin = Origin(url, stack, store)
        alice = origin.user()
        status, body = origin.chat(alice, STATUS)
    assert status == 503
    assert body[0]["code"] == "TOOL_FAILURE"
    # Refused before anything was written: no conversation, no lock left behind
    subject = jwt.decode(alice["Authorization"][7:], options={"verify_signature": False})["sub"]
    page = asyncio_run(
        store.list_owned(subject, limit=10, after=None, search=None, include_archived=True)
    )
    assert page.items == []


# --- helpers --------------------------------------------------------------------------------


def token_client(
    settings: Settings, url: Callable[[], str], now: list[float] | None = None
) -> ServiceTokenClient:
    """The chat's service-token client with the template's credentials (from moto)."""
    clock = (lambda: now[0]) if now is not None else time.time
    credentials = client_credentials_from(settings, secrets_reader_from(settings))
    return ServiceTokenClient(url, credentials, timeout_s=15, clock=clock)  # a busy moto: seconds


def asyncio_run(awaitable: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(awaitable)


def _epoch(value: str) -> float:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
