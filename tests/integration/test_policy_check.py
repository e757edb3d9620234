"""`make policy-check`: audit records as the audit function stores them in the audit table
(moto), replayed against a candidate file; the report names each call decided otherwise."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from scripts.policy_check import main
from sstools_agent.adapters.dynamodb.audit_table import DynamoDBAuditRecordStore
from sstools_agent.domain.audit import AuditKind, AuditRecord, audit_table_item
from sstools_agent.domain.cedar_policy import shipped_policy_text
from sstools_agent.settings import Settings

NO_PROD_DEPLOYS = """
@id("no-prod-deploys")
forbid (principal, action == SsTools::Action::"deploy_dashboard", resource)
when { resource.tier == "prod" };
"""


def store(settings: Settings, user: str, tier: str, days_ago: float) -> None:
    """A card for a deploy, audited `days_ago` days ago, as the audit function stores it."""
    at = datetime.now(UTC) - timedelta(days=days_ago)
    call = {"operation": "write", "environment": tier, "tier": tier, "role": "admin", "groups": []}
    record = AuditRecord(
        AuditKind.CONFIRMATION_REQUESTED,
        user,
        "pending",
        "c-1",
        {"tool": "deploy_dashboard", "policies": ["writes-for-admins"], "call": call},
        emitted_at=at.isoformat(),
    )
    item = audit_table_item(
        record.to_payload(), uuid.uuid4().hex, at.isoformat(), int(at.timestamp())
    )
    table = DynamoDBAuditRecordStore(
        settings.audit_table, region=settings.aws_region, endpoint_url=settings.aws_endpoint_url
    )
    assert table.store_once(item)


def test_the_calls_a_candidate_decides_otherwise_are_printed(
    stack_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # Given an admin's prod deploy yesterday, one to staging, and one to prod a month ago
    user = f"admin-{uuid.uuid4().hex[:8]}"
    store(stack_settings, user, "prod", 1)
    store(stack_settings, user, "staging", 1)
    store(stack_settings, f"{user}-old", "prod", 30)
    candidate = tmp_path / "policy.cedar"
    candidate.write_text(shipped_policy_text() + NO_PROD_DEPLOYS)
    # When the candidate forbidding prod deploys is checked over the last week
    code = main(["--policy", str(candidate), "--days", "7"], stack_settings)
    # Then yesterday's prod deploy is reported, from a card to a refusal by the new policy
    assert code == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if user in line]
    assert lines == [line for line in lines if f"{user} (admin)" in line]
    (line,) = lines
    assert "deploy_dashboard prod" in line
    assert line.endswith(
        "allowed with a card [writes-for-admins, card-for-every-change] -> denied [no-prod-deploys]"
    )


def test_a_candidate_that_fails_validation_replays_nothing(
    stack_settings: Settings, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    candidate = tmp_path / "policy.cedar"
    candidate.write_text(
        '@id("x")\npermit (principal, action == SsTools::Action::"nope", resource);'
    )
    assert main(["--policy", str(candidate)], stack_settings) == 2
    out = capsys.readouterr().out
    assert "refused, nothing replayed" in out
    assert "nope" in out
