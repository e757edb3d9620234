"""Where audit records go. Today a structured log line; EventBridge joins with issue 5."""

from __future__ import annotations

import json
import logging
from typing import Protocol

from sstools_agent.domain.audit import AuditRecord

audit_logger = logging.getLogger("sstools_agent.audit")


class AuditSink(Protocol):
    def emit(self, record: AuditRecord) -> None: ...


class LogAuditSink:
    """Writes each record as one JSON log line on the `sstools_agent.audit` logger."""

    def emit(self, record: AuditRecord) -> None:
        audit_logger.info(json.dumps(record.to_payload(), ensure_ascii=False, default=str))
