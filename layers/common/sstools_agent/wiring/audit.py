"""The audit function's composition: `build_audit(settings) -> AuditDeps`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import boto3

from sstools_agent.settings import AuditFunctionSettings


@dataclass(frozen=True, slots=True)
class AuditDeps:
    """The audit function's collaborators."""

    table: Any
    """The append-only audit table (a boto3 DynamoDB Table)."""


def build_audit(settings: AuditFunctionSettings) -> AuditDeps:
    """The audit table as `settings` name it, on the configured endpoint."""
    resource = boto3.resource(
        "dynamodb", region_name=settings.aws_region, endpoint_url=settings.aws_endpoint_url
    )
    return AuditDeps(resource.Table(settings.audit_table))
