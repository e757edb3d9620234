"""Where audit records go: the EventBridge audit bus (a rule feeds the audit function).

Every producer in the chat function emits through an `AuditSink`; the state machine publishes its
confirmation outcomes to the same bus with the same fields.
"""

from __future__ import annotations

import json
import logging
from concurrent.futures import ThreadPoolExecutor

import boto3

from sstools_agent.domain.audit import AUDIT_SOURCE, AuditRecord, EmissionClock

audit_logger = logging.getLogger("sstools_agent.audit")


class EventBridgeAuditSink:
    """`domain.ports.AuditSink` on the audit bus: each record is put from a background
    thread, so the stream never waits."""

    def __init__(self, bus_name: str, *, region: str, endpoint_url: str | None = None) -> None:
        self._bus = bus_name
        self._client = boto3.session.Session(region_name=region).client(
            "events", endpoint_url=endpoint_url
        )
        self._sender = ThreadPoolExecutor(max_workers=1, thread_name_prefix="audit")
        self._clock = EmissionClock()

    def _send(self, record: AuditRecord) -> None:
        try:
            response = self._client.put_events(
                Entries=[
                    {
                        "EventBusName": self._bus,
                        "Source": AUDIT_SOURCE,
                        "DetailType": record.kind.value,
                        "Detail": json.dumps(record.to_payload(), ensure_ascii=False, default=str),
                    }
                ]
            )
            if response.get("FailedEntryCount"):
                raise RuntimeError(str(response.get("Entries")))
        except Exception:
            # An audit event must not be lost silently: it goes to the log instead.
            audit_logger.exception("audit bus refused a record: %s", record.to_payload())

    def emit(self, record: AuditRecord) -> None:
        """Stamps the emission time now, in the caller's order, then sends in the background."""
        self._sender.submit(self._send, record.stamped(self._clock))

    def drain(self) -> None:
        """Waits until every record handed over so far was sent (tests, shutdown)."""
        self._sender.submit(lambda: None).result()
