"""The sample upstream checks both identities and the user's role, and writes change its state."""

from __future__ import annotations

import httpx
import pytest

from sstools_agent.factories import service_token_issuer_from
from tests.support.agent_stack import AgentStack, user_issuer


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
