"""Policies beyond the shipped set, through the policy core and the audit: a change window (a
freeze) refuses with its end, a log-only policy changes nothing but is audited, and a refusal's
audit record names the policy that refused it."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from langchain_core.messages import ToolMessage

from sstools_agent.agent.event_mapping import EventMapper
from sstools_agent.agent.middleware import PERMISSION_DENIED
from sstools_agent.chat.turn_audit import TurnAudit
from sstools_agent.domain.audit import AuditRecord
from sstools_agent.domain.cedar_policy import shipped_policy_text
from sstools_agent.domain.chat_events import ConfirmRequired
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.guardrails import GuardrailDecision
from sstools_agent.domain.policy_engine import FixedPolicies, PolicyEngine, Principal
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.ui_context import UIContext

THURSDAY_NOON_UTC = datetime(2026, 12, 3, 12, 0, tzinfo=UTC)
FRIDAY_EVENING_UTC = datetime(2026, 12, 4, 16, 0, tzinfo=UTC)  # 19:00 in Moscow: after the freeze
FREEZE = """
@id("prod-freeze-before-release")
@window_start("2026-12-03T09:00")
@window_end("2026-12-04T18:00")
@timezone("Europe/Moscow")
forbid (principal, action in SsTools::Action::"tool", resource)
when { context.operation == "write" && resource.tier == "prod" };
"""
TRIAL_FORBID = """
@id("trial-no-prod-deploys")
@mode("log_only")
forbid (principal, action == SsTools::Action::"deploy_dashboard", resource)
when { resource.tier == "prod" };
"""
NO_PROD_SQL = """
@id("no-sql-writes-in-prod")
forbid (principal, action == SsTools::Action::"superset_execute_sql", resource)
when { context.operation == "write" && resource.tier == "prod" };
"""


def policy_with(extra: str, now: datetime = THURSDAY_NOON_UTC) -> ToolPolicy:
    engine = PolicyEngine(FixedPolicies(shipped_policy_text() + extra), clock=lambda: now)
    return ToolPolicy(CATALOG, DEFAULT_ENVIRONMENTS, engine=engine)


def page(env_id: str = "ss-dev") -> UIContext:
    payload = {"contextVersion": 1, "objectType": "dashboard", "objectId": "10", "envId": env_id}
    return UIContext.model_validate(payload, context={"environments": DEFAULT_ENVIRONMENTS})


def deploy(target: str) -> dict[str, Any]:
    return {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": target}


class ListSink:
    def __init__(self) -> None:
        self.records: list[AuditRecord] = []

    def emit(self, record: AuditRecord) -> None:
        self.records.append(record)


def audited(event: Any) -> AuditRecord:
    """The record TurnAudit writes for a streamed event of a turn."""
    sink = ListSink()
    turn = SimpleNamespace(
        journaled=set(), conversation=SimpleNamespace(owner="user.admin", conversation_id="c1")
    )
    TurnAudit(sink).streamed(turn, event, SimpleNamespace(tool_calls={}))  # type: ignore[arg-type]
    (record,) = sink.records
    return record


def refusal_event(decision: GuardrailDecision) -> Any:
    """The stream's refusal, mapped from the tool message the middleware writes."""
    message = ToolMessage(
        "PERMISSION_DENIED",
        tool_call_id="call-1",
        name=decision.tool,
        artifact={"event": PERMISSION_DENIED, "decision": decision.to_payload()},
    )
    (event,) = EventMapper("thread").on_tool_message(message)
    return event


def card_event(decision: GuardrailDecision, args: dict[str, Any]) -> ConfirmRequired:
    return ConfirmRequired(
        prompt=decision.prompt,
        thread_id="thread",
        tool_call_id="call-1",
        interrupt_id="i-1",
        decision=decision.to_payload(),
        tool_input=args,
    )


def test_a_freeze_refuses_a_prod_change_with_the_windows_end():
    # Given a freeze of prod changes until Friday 18:00 Moscow time, and an admin on Thursday
    policy = policy_with(FREEZE)
    # When they deploy to prod
    decision = policy.evaluate(Role.ADMIN, "deploy_dashboard", deploy("prod"), page())
    # Then no card is offered, and the refusal says when the window ends, in its time zone
    assert decision.permission.allowed is False
    assert decision.requires_confirmation is False
    assert decision.prompt == "Изменения в prod заморожены до пятницы 18:00 (Europe/Moscow)."
    assert decision.permission.policies == ("prod-freeze-before-release",)
    # and the audit record of the refusal names the window's policy
    record = audited(refusal_event(decision))
    assert (record.kind, record.outcome) == ("tool_denied", "denied")
    assert record.detail["policies"] == ["prod-freeze-before-release"]


def test_a_freeze_leaves_other_tiers_and_the_time_after_it_alone():
    frozen = policy_with(FREEZE)
    staging = frozen.evaluate(Role.ADMIN, "deploy_dashboard", deploy("staging"), page())
    assert staging.permission.allowed
    assert staging.requires_confirmation
    after = policy_with(FREEZE, now=FRIDAY_EVENING_UTC)
    prod = after.evaluate(Role.ADMIN, "deploy_dashboard", deploy("prod"), page())
    assert prod.permission.allowed
    assert prod.requires_confirmation
    assert prod.permission.policies == ("writes-for-admins",)


def test_a_frozen_tool_is_still_offered_so_the_refusal_can_say_when():
    frozen = policy_with(FREEZE).select_tools(Role.ADMIN, page("prod"))
    assert "deploy_dashboard" in frozen.offered_names


def test_a_log_only_forbid_changes_nothing_but_is_audited():
    # Given a log-only policy that would forbid deploys to prod
    shipped = ToolPolicy(CATALOG, DEFAULT_ENVIRONMENTS)
    trial = policy_with(TRIAL_FORBID)
    # When an admin deploys to prod
    before = shipped.evaluate(Role.ADMIN, "deploy_dashboard", deploy("prod"), page())
    decision = trial.evaluate(Role.ADMIN, "deploy_dashboard", deploy("prod"), page())
    # Then the decision is today's: allowed, with the same card
    assert decision.permission.allowed is before.permission.allowed is True
    assert decision.requires_confirmation is before.requires_confirmation is True
    assert decision.prompt == before.prompt
    assert decision.permission.policies == before.permission.policies == ("writes-for-admins",)
    # and the card's audit record says what the log-only policy would have decided
    record = audited(card_event(decision, deploy("prod")))
    assert record.kind == "confirmation_requested"
    assert record.detail["policies"] == ["writes-for-admins"]
    assert record.detail["card_policies"] == ["card-for-every-change"]
    assert record.detail["log_only"] == {"allowed": False, "policies": ["trial-no-prod-deploys"]}
    # A call the log-only policy does not touch records no trial
    staging = trial.evaluate(Role.ADMIN, "deploy_dashboard", deploy("staging"), page())
    assert "log_only" not in audited(card_event(staging, deploy("staging"))).detail


def test_a_refusal_by_a_forbid_names_it_in_the_audit():
    policy = policy_with(NO_PROD_SQL)
    args = {"database_id": 1, "sql": "UPDATE t SET a = 1 WHERE id = 2"}
    decision = policy.evaluate(Role.ADMIN, "superset_execute_sql", args, page("prod"))
    assert decision.permission.allowed is False
    assert audited(refusal_event(decision)).detail["policies"] == ["no-sql-writes-in-prod"]


GROUP_FORBID = """
@id("nothing-in-prod-for-contractors")
forbid (principal in SsTools::Group::"contractors", action in SsTools::Action::"tool", resource)
when { resource.tier == "prod" };

@id("no-deploys-for-bob")
forbid (principal == SsTools::User::"bob", action == SsTools::Action::"deploy_dashboard", resource);
"""


def test_a_policy_may_name_a_group_or_a_user():
    policy = policy_with(GROUP_FORBID)
    contractor = Principal(Role.ADMIN, groups=("contractors",), user="alice")
    staff = Principal(Role.ADMIN, groups=("sre",), user="carol")
    # A group's forbid refuses its members, names itself, and leaves the others alone
    refused = policy.evaluate(contractor, "deploy_dashboard", deploy("prod"), page())
    assert refused.permission.allowed is False
    assert refused.permission.user_role is Role.ADMIN
    assert refused.permission.policies == ("nothing-in-prod-for-contractors",)
    assert policy.evaluate(staff, "deploy_dashboard", deploy("prod"), page()).permission.allowed
    assert policy.evaluate(
        contractor, "deploy_dashboard", deploy("staging"), page()
    ).permission.allowed
    # and the tools it forbids there are not offered to them on a prod page
    assert "get_health_summary" not in policy.select_tools(contractor, page("prod")).offered_names
    assert "get_health_summary" in policy.select_tools(staff, page("prod")).offered_names
    # A user's forbid refuses that user only
    bob = Principal(Role.ADMIN, user="bob")
    assert not policy.evaluate(
        bob, "deploy_dashboard", deploy("staging"), page()
    ).permission.allowed
    assert policy.evaluate(staff, "deploy_dashboard", deploy("staging"), page()).permission.allowed


SECOND_APPROVER_FOR_STAGING_DEPLOYS = """
@id("second-approver-for-staging-deploys")
permit (principal, action == SsTools::Action::"RequireSecondApprover", resource)
when { context.tool == "deploy_dashboard" && resource.tier == "staging" };
"""


def test_the_policy_set_can_ask_a_second_approver_where_the_setting_does_not():
    # Given the deployment's default of one approver, and a policy asking two for staging deploys
    policy = policy_with(SECOND_APPROVER_FOR_STAGING_DEPLOYS)

    # When an admin asks for a deploy to staging, and another to prod
    staging = policy.evaluate(Role.ADMIN, "deploy_dashboard", deploy("staging"), page())
    prod = policy.evaluate(Role.ADMIN, "deploy_dashboard", deploy("prod"), page())

    # Then the staging card waits for two people; prod, which no policy names, for one
    assert (staging.requires_confirmation, staging.approvers) == (True, 2)
    assert (prod.requires_confirmation, prod.approvers) == (True, 1)
