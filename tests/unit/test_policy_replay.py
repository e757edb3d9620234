"""`make policy-check`'s core: audited calls replayed against the policy set in force and a
candidate, and what would change for each (tool, environment, who, before → after, the deciding
policies). The records are audit table items, as the audit function stores them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from sstools_agent.domain.cedar_policy import InvalidPolicySet, shipped_policy_text
from sstools_agent.domain.policy_engine import FixedPolicies
from sstools_agent.domain.policy_replay import audited_calls, policy_changes, render_changes

NO_PROD_DEPLOYS_FOR_CONTRACTORS = """
@id("no-prod-deploys-for-contractors")
forbid (
  principal in SsTools::Group::"contractors",
  action == SsTools::Action::"deploy_dashboard",
  resource
)
when { resource.tier == "prod" };
"""
FREEZE = """
@id("freeze")
@window_start("2026-12-01T00:00")
@window_end("2026-12-02T00:00")
@timezone("UTC")
forbid (principal, action in SsTools::Action::"tool", resource)
when { context.operation == "write" };
"""
TWO_FOR_PROD = """
@id("two-for-prod")
permit (principal, action == SsTools::Action::"RequireSecondApprover", resource)
when { resource.tier == "prod" && context.operation == "write" };
"""


def item(kind: str, user: str, at: str, tool: str, call: dict[str, Any] | None) -> dict[str, Any]:
    """An audit table item (its detail as the audit function keeps it: JSON text)."""
    detail: dict[str, Any] = {"kind": kind, "user": user, "detail": {"tool": tool}}
    if call is not None:
        detail["detail"]["call"] = call
    return {"kind": kind, "user": user, "at": at, "detail": json.dumps(detail)}


def call(tier: str | None, role: str, groups: tuple[str, ...] = (), op: str = "write") -> Any:
    env = {"prod": "prod", "staging": "staging", "dev": "ss-dev", None: None}[tier]
    return {"operation": op, "environment": env, "tier": tier, "role": role, "groups": list(groups)}


ITEMS = [
    item(
        "confirmation_requested",
        "ivanov",
        "2026-12-01T10:00:00Z",
        "deploy_dashboard",
        call("prod", "admin", ("contractors",)),
    ),
    item(
        "confirmation_requested",
        "petrov",
        "2026-12-01T11:00:00Z",
        "deploy_dashboard",
        call("prod", "admin", ("sre",)),
    ),
    item(
        "tool_called",
        "sidorova",
        "2026-12-03T09:00:00Z",
        "search_dashboards",
        call("dev", "analyst", op="read"),
    ),
    item("tool_denied", "mallory", "2026-12-03T09:30:00Z", "run_backup", call("prod", "analyst")),
    # records that carry no call (older ones, other kinds) are not replayed
    item("tool_called", "old", "2026-11-01T09:00:00Z", "search_dashboards", None),
    item("tools_routed", "x", "2026-12-03T09:00:00Z", "", None),
]


def replay(extra: str) -> list[Any]:
    return policy_changes(
        audited_calls(ITEMS),
        FixedPolicies.shipped(),
        FixedPolicies(shipped_policy_text() + extra),
    )


def test_only_the_calls_a_candidate_decides_otherwise_are_reported():
    (change,) = replay(NO_PROD_DEPLOYS_FOR_CONTRACTORS)
    assert (change.call.tool, change.call.environment, change.call.user) == (
        "deploy_dashboard",
        "prod",
        "ivanov",
    )
    assert change.before.words() == "allowed with a card"
    assert change.after.words() == "denied"
    assert change.before.policies == ("writes-for-admins", "card-for-every-change")
    assert change.after.policies == ("no-prod-deploys-for-contractors",)


def test_a_window_is_replayed_at_the_time_of_each_call():
    # the freeze held on December 1st: the two deploys then would have been refused, not the
    # later calls
    changes = replay(FREEZE)
    assert [c.call.user for c in changes] == ["ivanov", "petrov"]
    assert all(c.after.policies == ("freeze",) for c in changes)


def test_a_second_approver_is_a_change_too():
    changes = replay(TWO_FOR_PROD)
    assert [(c.call.user, c.before.approvers, c.after.approvers) for c in changes] == [
        ("ivanov", 1, 2),
        ("petrov", 1, 2),
    ]
    assert changes[0].after.words() == "allowed with a card, 2 approvers"


def test_the_same_set_changes_nothing_and_the_report_says_so():
    assert replay("") == []
    assert "no audited call would be decided otherwise (3 replayed)" in render_changes([], 3)


def test_the_report_names_tool_environment_who_before_after_and_policies():
    text = render_changes(replay(NO_PROD_DEPLOYS_FOR_CONTRACTORS), 4)
    assert "2026-12-01T10:00:00Z deploy_dashboard prod ivanov (admin; contractors)" in text
    assert (
        "allowed with a card [writes-for-admins, card-for-every-change] -> "
        "denied [no-prod-deploys-for-contractors]"
    ) in text
    assert "1 of 4 audited calls would be decided otherwise" in text


def test_a_candidate_that_fails_validation_is_refused_before_any_replay():
    with pytest.raises(InvalidPolicySet, match="deploy_dashbaord"):
        FixedPolicies(
            '@id("x")\npermit (principal, action == SsTools::Action::"deploy_dashbaord", resource);'
        )
