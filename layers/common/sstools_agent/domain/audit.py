"""Audit records: one shape for every producer, and how the audit table stores them."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any, Final

from sstools_agent.domain.identity import SERVICE_SUBJECT

AUDIT_SOURCE: Final = "sstools.agent.chat"
RETENTION_DAYS: Final = 400


class AuditKind(StrEnum):
    CONTEXT_REJECTED = "context_rejected"
    AUTH_FAILED = "auth_failed"
    TOOL_CALLED = "tool_called"
    TOOL_OUTCOME_UNKNOWN = "tool_outcome_unknown"
    """A confirmed call left and no outcome came back (timeout, drop, cancel, crash)."""
    TOOL_NOT_RUN = "tool_not_run"
    """A confirmed call whose run ended before it left."""
    TOOL_DENIED = "tool_denied"
    CONFIRMATION_REQUESTED = "confirmation_requested"
    CONFIRMATION_DECIDED = "confirmation_decided"
    TOOLS_ROUTED = "tools_routed"


@dataclass(frozen=True, slots=True)
class AuditRecord:
    """Who did what, on whose behalf, with which outcome."""

    kind: AuditKind
    user: str | None
    outcome: str
    conversation_id: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    service_actor: str = SERVICE_SUBJECT

    def to_payload(self) -> dict[str, Any]:
        return {**asdict(self), "kind": self.kind.value}


def args_hash(args: Any) -> str:
    """A stable hash of tool arguments: the audit log says which call, without its data."""
    canonical = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def audit_table_item(
    detail: dict[str, Any], event_id: str, at: str, at_epoch: int
) -> dict[str, Any]:
    """The audit table's item for one event: by user (table key) and by conversation (index)."""
    user = detail.get("user") or "anonymous"
    item: dict[str, Any] = {
        "PK": f"USER#{user}",
        "SK": f"{at}#{event_id}",
        "event_id": event_id,
        "at": at,
        "kind": str(detail.get("kind", "unknown")),
        "user": user,
        "service_actor": str(detail.get("service_actor", SERVICE_SUBJECT)),
        "detail": json.dumps(detail, ensure_ascii=False, default=str),
        "ttl": at_epoch + RETENTION_DAYS * 86_400,
    }
    if detail.get("conversation_id"):
        item["GSI1PK"] = f"CONV#{detail['conversation_id']}"
        item["GSI1SK"] = f"{at}#{event_id}"
    return item
