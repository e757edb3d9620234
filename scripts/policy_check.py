"""`make policy-check POLICY=candidate.cedar [DAYS=7]`: the audited calls of the last DAYS days
replayed against the policy set in force (the team's S3 object when POLICY_BUCKET is set, else
the shipped set) and the candidate; prints each call the candidate would decide otherwise.

Reads the audit table the settings name (AUDIT_TABLE, AWS_REGION, AWS_ENDPOINT_URL): run it with
the stage's variables and credentials allowed to scan that table. Exits 2 when the candidate
fails validation (nothing replayed), 0 otherwise.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sstools_agent.adapters.dynamodb.audit_table import DynamoDBAuditRecordStore
from sstools_agent.domain.audit import AuditKind, sort_time
from sstools_agent.domain.cedar_policy import InvalidPolicySet
from sstools_agent.domain.policy_engine import FixedPolicies
from sstools_agent.domain.policy_replay import audited_calls, policy_changes, render_changes
from sstools_agent.settings import Settings
from sstools_agent.wiring.adapters import policy_source_from

REPLAYED_KINDS = (
    AuditKind.TOOL_CALLED.value,
    AuditKind.TOOL_DENIED.value,
    AuditKind.CONFIRMATION_REQUESTED.value,
)


def main(argv: list[str] | None = None, settings: Settings | None = None) -> int:
    """The check; its report goes to stdout."""
    parser = argparse.ArgumentParser(prog="make policy-check", description=__doc__)
    parser.add_argument("--policy", type=Path, required=True, help="the candidate .cedar file")
    parser.add_argument("--days", type=float, default=7.0, help="how far back to replay")
    args = parser.parse_args(argv)
    settings = settings or Settings()
    try:
        candidate = FixedPolicies(args.policy.read_text(encoding="utf-8"))
    except InvalidPolicySet as invalid:
        sys.stdout.write(f"{args.policy}: refused, nothing replayed:\n")
        sys.stdout.write("".join(f"  {error}\n" for error in invalid.errors))
        return 2
    start = sort_time(datetime.now(UTC) - timedelta(days=args.days))
    table = DynamoDBAuditRecordStore(
        settings.audit_table, region=settings.aws_region, endpoint_url=settings.aws_endpoint_url
    )
    calls = audited_calls(
        table.since(start, REPLAYED_KINDS), frozenset(settings.confirm_read_tools)
    )
    changes = policy_changes(calls, policy_source_from(settings), candidate)
    sys.stdout.write(render_changes(changes, len(calls)) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
