"""The audit function: every event on the audit bus becomes one append-only audit table item.

Items are keyed by user (table key) and by conversation (index `ByConversation`), expire by TTL,
and are written with a condition so a redelivered event is stored once.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from sstools_agent.domain.audit import audit_table_item
from sstools_agent.settings import AuditFunctionSettings
from sstools_agent.wiring.audit import AuditDeps, build_audit

logger = Logger(service="sstools-agent-audit")


class AuditEvent(EventBridgeModel):
    """An audit bus event: its detail is one audit record (domain/audit.py)."""

    detail: dict[str, Any]


deps: AuditDeps = build_audit(AuditFunctionSettings())
"""Settings read and the table client built once, at import (one per Lambda container)."""


def store(event: AuditEvent) -> bool:
    """Writes the event once; False when it was already stored (a redelivery)."""
    item = audit_table_item(
        event.detail, event.id, event.time.isoformat(), int(event.time.timestamp())
    )
    return deps.records.store_once(item)


@logger.inject_lambda_context
@event_parser(model=AuditEvent)
def handler(event: AuditEvent, context: LambdaContext) -> dict[str, Any]:
    """EventBridge rule target."""
    stored = store(event)
    logger.info(
        "audit", extra={"event_id": event.id, "kind": event.detail.get("kind"), "stored": stored}
    )
    return {"stored": stored, "event_id": event.id}
