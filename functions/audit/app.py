"""The audit function: every event on the audit bus becomes one append-only audit table item.

Items are keyed by user (table key) and by conversation (index `ByConversation`), expire by TTL,
and are written with a condition so a redelivered event is stored once.
"""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools import Logger
from aws_lambda_powertools.utilities.parser import event_parser
from aws_lambda_powertools.utilities.parser.models import EventBridgeModel
from aws_lambda_powertools.utilities.typing import LambdaContext

from sstools_agent.adapters.dynamodb.audit_table import DynamoDBAuditRecordStore
from sstools_agent.domain.audit import audit_table_item
from sstools_agent.domain.ports import AuditRecordStore

logger = Logger(service="sstools-agent-audit")


class AuditEvent(EventBridgeModel):
    """An audit bus event: its detail is one audit record (domain/audit.py)."""

    detail: dict[str, Any]


_table: AuditRecordStore | None = None


def audit_table() -> AuditRecordStore:
    """The audit table, built on first use (configuration read once, at entry)."""
    global _table  # noqa: PLW0603 - one client per Lambda container
    if _table is None:
        _table = DynamoDBAuditRecordStore(
            os.environ.get("AUDIT_TABLE", "AuditTable"),
            endpoint_url=os.environ.get("AWS_ENDPOINT_URL"),
        )
    return _table


def store(event: AuditEvent) -> bool:
    """Writes the event once; False when it was already stored (a redelivery)."""
    item = audit_table_item(
        event.detail, event.id, event.time.isoformat(), int(event.time.timestamp())
    )
    return audit_table().store_once(item)


@logger.inject_lambda_context
@event_parser(model=AuditEvent)
def handler(event: AuditEvent, context: LambdaContext) -> dict[str, Any]:
    """EventBridge rule target."""
    stored = store(event)
    logger.info(
        "audit", extra={"event_id": event.id, "kind": event.detail.get("kind"), "stored": stored}
    )
    return {"stored": stored, "event_id": event.id}
