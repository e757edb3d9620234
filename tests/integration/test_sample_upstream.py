"""The sample upstream checks both identities and the user's role, and writes change its state."""

from __future__ import annotations

import time

import httpx
import pytest

from local.agent_stack import AgentStack, user_issuer
from local.run_stack import serve_sample_upstream
from local.sample_upstream.app import create_app
from local.servers import serve
from sstools_agent.settings import Settings
from sstools_agent.wiring.adapters import service_token_issuer_from, user_verifier_from


def headers(stack: AgentStack, role: str | None, *, service: bool = True) -> dict[str, str]:
    out = {}
    if service:
        out["Authorization"] = (
            f"Bearer {service_token_issuer_from(stack.settings).service_token().token}"
        )
    if role:
        user = user_issuer(stack.settings).issue(f"u.{role}", 60, {"roles": [role]}).token
        out["X-User-JWT"] = user
    return out


@pytest.mark.parametrize(
    ("service", "role", "status"),
    [(False, "admin", 401), (True, None, 401), (True, "admin", 200)],
    ids=["no-service-token", "no-user-token", "both"],
)
def test_both_identities_are_required(stack, service, role, status):
    response = httpx.get(
        f"{stack.upstream.base_url}/api/environments", headers=headers(stack, role, service=service)
    )
    assert response.status_code == status
    if status == 401:
        assert response.json()["code"] == "UNAUTHORIZED"


def test_a_user_token_cannot_stand_in_for_the_service_token(stack):
    user = user_issuer(stack.settings).issue("mallory", 60, {"roles": ["admin"]}).token
    response = httpx.get(
        f"{stack.upstream.base_url}/api/environments",
        headers={"Authorization": f"Bearer {user}", "X-User-JWT": user},
    )
    assert response.status_code == 401


@pytest.mark.parametrize(
    ("role", "target", "status"),
    [
        ("analyst", "staging", 403),
        ("engineer", "prod", 403),
        ("engineer", "staging", 200),
        ("admin", "prod", 200),
    ],
)
def test_the_upstream_enforces_roles_on_its_own(stack, role, target, status):
    body = {"dashboard_ids": [42], "source_env_id": "ss-dev", "target_env_id": target}
    response = httpx.post(
        f"{stack.upstream.base_url}/api/dashboards/deploy", json=body, headers=headers(stack, role)
    )
    assert response.status_code == status, response.text
    deployed = stack.upstream.state.dashboards[target].get(42)
    assert (deployed is not None and deployed["last_change"]["by"] == f"u.{role}") is (
        status == 200
    )


def test_seeded_objects_the_scenarios_name(stack):
    state = stack.upstream.state
    assert state.dashboards["ss-dev"][10]["title"] == "Отчёт по энергопотреблению"
    assert 42 in state.dashboards["ss-dev"]
    assert state.datasets["staging"][15]["review"]["status"] == "changes_requested"
    assert sum(len(d) for d in state.dashboards.values()) >= 30
    assert len(state.datasets["staging"]) >= 20


def test_make_runs_upstream_answers_a_reset_fault_with_a_connection_reset():
    # started by the very function `make run` uses, so the local stack's /_control faults behave
    # as they do in the tests: a reset is a TCP reset the client sees at once, not a hang
    with serve_sample_upstream(Settings(), port=0) as base_url:
        fault = {"kind": "reset", "method": "GET", "path": "/api/environments"}
        assert httpx.post(f"{base_url}/_control/faults", json=fault).status_code == 201
        started = time.monotonic()
        with pytest.raises((httpx.RemoteProtocolError, httpx.ConnectError, httpx.ReadError)):
            httpx.get(f"{base_url}/api/environments", timeout=10)
        assert time.monotonic() - started < 5  # a hang would take the full 10 s
        # the fault was spent: the next request is answered (401: it carries no identities)
        assert httpx.get(f"{base_url}/api/environments", timeout=10).status_code == 401
        requests = httpx.get(f"{base_url}/_control/requests", params={"path": "/api/environments"})
        assert requests.json()["count"] == 2


def test_a_server_that_cannot_reset_refuses_a_reset_fault_instead_of_hanging():
    app = create_app(user_verifier_from(Settings()), user_verifier_from(Settings()))
    with serve(app) as base_url:  # plain h11: no way to send a TCP reset
        fault = {"kind": "reset", "method": "GET", "path": "/api/environments"}
        refused = httpx.post(f"{base_url}/_control/faults", json=fault)
        assert refused.status_code == 422
        assert "cannot reset connections" in refused.json()["detail"]
