"""Audit records: one shape for every producer, and how the audit table stores them."""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.identity import SERVICE_SUBJECT
from sstools_agent.domain.ui_context import (
    ContextRejected,
    UIContext,
    UIContextRejection,
    parse_ui_context,
)

AUDIT_SOURCE: Final = "sstools.agent.chat"
RETENTION_DAYS: Final = 400


class AuditKind(StrEnum):
    CONTEXT_REJECTED = "context_rejected"
    ATTACHMENT_REJECTED = "attachment_rejected"
    AUTH_FAILED = "auth_failed"
    TOOL_CALLED = "tool_called"
    TOOL_OUTCOME_UNKNOWN = "tool_outcome_unknown"
    """A confirmed call left and no outcome came back (timeout, drop, cancel, crash)."""
    TOOL_NOT_RUN = "tool_not_run"
    """A confirmed call whose run ended before it left."""
    TOOL_DENIED = "tool_denied"
    CONFIRMATION_REQUESTED = "confirmation_requested"
    CONFIRMATION_DECIDED = "confirmation_decided"
    APPROVAL_DECIDED = "approval_decided"
    """A second person's decision on a card its requester confirmed first."""
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
    emitted_at: str | None = None
    """When the producer emitted it (UTC, microseconds, `EmissionClock`): the table's order."""

    def to_payload(self) -> dict[str, Any]:
        return {**asdict(self), "kind": self.kind.value}

    def stamped(self, clock: EmissionClock) -> AuditRecord:
        """The record with its emission time (kept when it already has one)."""
        return self if self.emitted_at else replace(self, emitted_at=clock.now())


class EmissionClock:
    """Emission times of audit records: UTC to the microsecond, strictly increasing in this
    process (two records in one microsecond, or a clock stepping back, still get increasing
    times), so records keep the order they were emitted in. The bus's own event time has whole
    seconds only."""

    def __init__(self, clock_ns: Callable[[], int] = time.time_ns) -> None:
        self._clock_ns = clock_ns
        self._last_us = 0
        self._lock = threading.Lock()

    def now(self) -> str:
        """The next emission time, ISO 8601 with microseconds and `Z`."""
        with self._lock:
            self._last_us = max(self._clock_ns() // 1000, self._last_us + 1)
            at_us = self._last_us
        return sort_time(datetime.fromtimestamp(at_us / 1_000_000, UTC))


def sort_time(at: datetime) -> str:
    """A time as the audit table sorts it: UTC, fixed width, microseconds."""
    return at.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def args_hash(args: Any) -> str:
    """A stable hash of tool arguments: the audit log says which call, without its data."""
    canonical = json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:32]


def audit_table_item(
    detail: dict[str, Any], event_id: str, at: str, at_epoch: int
) -> dict[str, Any]:
    """The audit table's item for one event: by user (table key) and by conversation (index),
    sorted by the producer's emission time (`emitted_at`; the state machine's state entry time),
    else the bus's event time; the event id breaks ties between producers."""
    user = detail.get("user") or "anonymous"
    order = f"{_sort_time_of(detail.get('emitted_at'), at)}#{event_id}"
    item: dict[str, Any] = {
        "PK": f"USER#{user}",
        "SK": order,
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
        item["GSI1SK"] = order
    return item


def _sort_time_of(emitted_at: object, event_time: str) -> str:
    for value in (emitted_at, event_time):
        if isinstance(value, str) and value:
            try:
                return sort_time(datetime.fromisoformat(value))
            except ValueError:
                continue
    return event_time


def audited_ui_context(
    payload: object,
    environments: EnvironmentRegistry,
    emit: Callable[[AuditRecord], None],
    user: str,
    conversation_id: str | None,
) -> UIContext | None:
    """A request's page context, validated; a refused one is audited (who sent it, where, why)
    and raised as ContextRejected (422). The chat and the REST API both call this."""
    if payload is None:
        return None
    parsed = parse_ui_context(payload, environments)
    if isinstance(parsed, UIContextRejection):
        emit(
            AuditRecord(
                AuditKind.CONTEXT_REJECTED, user, "refused", conversation_id, parsed.to_error_body()
            )
        )
        raise ContextRejected(parsed)
    return parsed
