"""Audit records: one shape for every producer (tool calls, denials, confirmations, rejections)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from enum import StrEnum
from typing import Any

from sstools_agent.domain.identity import SERVICE_SUBJECT


class AuditKind(StrEnum):
    CONTEXT_REJECTED = "context_rejected"
    AUTH_FAILED = "auth_failed"
    TURN_STARTED = "turn_started"
    TURN_FINISHED = "turn_finished"


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
