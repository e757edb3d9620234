"""What the team's policies decide, seen from a turn: the audit record of a call run without a
card names the policies that allowed it (and a log-only policy's would-be decision), and a
policy may name the groups the user's token carries.

Real turns through ChatAgent (policy middleware, checkpoints in moto, tools over HTTP to the
sample upstream); the audit records are the ones TurnAudit writes for the streamed events.
"""

from __future__ import annotations

import uuid
from types import SimpleNamespace
from typing import Any

import pytest

from local.agent_stack import AgentStack, collect
from sstools_agent.chat.turn_audit import TurnAudit
from sstools_agent.domain.audit import AuditRecord
from sstools_agent.domain.cedar_policy import shipped_policy_text
from sstools_agent.domain.chat_events import ChatEvent, EventType
from sstools_agent.domain.policy_engine import FixedPolicies, PolicyEngine
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from tests.support.models import ScriptedModel
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio

SEARCH = {"name": "search_dashboards", "args": {}, "id": "c1"}
DEPLOY_TO_STAGING = {
    "name": "deploy_dashboard",
    "args": {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "staging"},
    "id": "c1",
}
TRIAL_NO_SEARCH = """
@id("trial-no-searches")
@mode("log_only")
forbid (principal, action == SsTools::Action::"search_dashboards", resource);
"""
NO_DEPLOYS_FOR_CONTRACTORS = """
@id("no-deploys-for-contractors")
forbid (
  principal in SsTools::Group::"contractors",
  action == SsTools::Action::"deploy_dashboard",
  resource
);
"""


class ListSink:
    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def emit(self, record: AuditRecord) -> None:
        self.records.append(record)


def audit_of(events: list[ChatEvent], who: Any = None) -> list[AuditRecord]:
    """The records the chat's turn audit writes for these streamed events (of `who`'s turn)."""
    sink = ListSink()
    turn = SimpleNamespace(
        journaled=set(), conversation=SimpleNamespace(owner="user", conversation_id="c")
    )
    recorder = SimpleNamespace(tool_calls={})
    for event in events:
        TurnAudit(sink).streamed(turn, event, recorder, who=who)  # type: ignore[arg-type]
    return sink.records


def with_policies(stack: AgentStack, extra: str) -> ToolPolicy:
    engine = PolicyEngine(FixedPolicies(shipped_policy_text() + extra))
    return ToolPolicy(CATALOG, stack.policy.environments, engine=engine)


async def turn(
    stack: AgentStack, call: dict[str, Any], role: str, policy: ToolPolicy | None = None, **kw: Any
) -> list[ChatEvent]:
    agent = stack.agent(ScriptedModel(calls=[call]), policy=policy)
    context = stack.context(role, DASHBOARD_10, **kw)
    return await collect(agent.send(uuid.uuid4().hex, "сделай", context))


async def test_a_call_run_without_a_card_is_audited_with_the_policies_that_allowed_it(
    stack: AgentStack,
):
    # When an analyst's search runs (a read: no card)
    events = await turn(stack, SEARCH, "analyst")
    assert [e.type for e in events].count(EventType.TOOL_END) == 1
    # Then its tool_called record names the policy that allowed it, and no trial
    (record,) = audit_of(events)
    assert (record.kind, record.outcome) == ("tool_called", "succeeded")
    assert record.detail["policies"] == ["reads-for-every-role"]
    assert "log_only" not in record.detail
    # and what policy saw of it, for `make policy-check` to replay
    assert record.detail["call"] == {
        "operation": "read",
        "environment": "ss-dev",
        "tier": "dev",
        "role": "analyst",
        "groups": [],
    }


async def test_a_log_only_policy_on_a_call_without_a_card_is_audited_and_changes_nothing(
    stack: AgentStack,
):
    # Given a log-only policy that would forbid searches
    policy = with_policies(stack, TRIAL_NO_SEARCH)
    # When the search runs
    events = await turn(stack, SEARCH, "analyst", policy)
    # Then it ran, and its record says what the log-only policy would have decided
    (record,) = audit_of(events)
    assert (record.kind, record.outcome) == ("tool_called", "succeeded")
    assert record.detail["policies"] == ["reads-for-every-role"]
    assert record.detail["log_only"] == {"allowed": False, "policies": ["trial-no-searches"]}


async def test_a_policy_may_forbid_a_group_the_token_names(stack: AgentStack):
    policy = with_policies(stack, NO_DEPLOYS_FOR_CONTRACTORS)
    # Given an engineer whose token puts them in the group «contractors»
    events = await turn(stack, DEPLOY_TO_STAGING, "engineer", policy, groups=["contractors"])
    who = stack.context("engineer", None, groups=["contractors"]).who
    # Then their deploy is refused by that policy, with no card
    types = [e.type for e in events]
    assert EventType.CONFIRM_REQUIRED not in types
    (record,) = audit_of(events, who)
    assert (record.kind, record.outcome) == ("tool_denied", "denied")
    assert record.detail["policies"] == ["no-deploys-for-contractors"]
    assert record.detail["call"] == {
        "operation": "write",
        "environment": "staging",
        "tier": "staging",
        "role": "engineer",
        "groups": ["contractors"],
    }
    # While an engineer outside the group gets the card as before
    others = await turn(stack, DEPLOY_TO_STAGING, "engineer", policy)
    assert EventType.CONFIRM_REQUIRED in [e.type for e in others]
