"""The audit function's composition: `build_audit(settings) -> AuditDeps`."""

from __future__ import annotations

from dataclasses import dataclass

from sstools_agent.adapters.dynamodb.audit_table import DynamoDBAuditRecordStore
from sstools_agent.domain.ports import AuditRecordStore
from sstools_agent.settings import AuditFunctionSettings


@dataclass(frozen=True, slots=True)
class AuditDeps:
    """The audit function's collaborators."""

    records: AuditRecordStore
    """The append-only audit table."""


def build_audit(settings: AuditFunctionSettings) -> AuditDeps:
    """The audit table as `settings` name it, on the configured endpoint."""
    return AuditDeps(
        DynamoDBAuditRecordStore(
            settings.audit_table,
            region=settings.aws_region,
            endpoint_url=settings.aws_endpoint_url,
        )
    )
