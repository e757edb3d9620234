"""Where audit records go: the EventBridge audit bus (a rule feeds the audit function).

Every producer in the chat function emits through an `AuditSink`; the state machine publishes its
confirmation outcomes to the same bus with the same fields.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any, Final

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.domain.audit import AUDIT_SOURCE, AuditRecord, EmissionClock

audit_logger = logging.getLogger("sstools_agent.audit")

ENTRIES_PER_PUT: Final = 10
"""PutEvents takes at most 10 entries..."""
BYTES_PER_PUT: Final = 200_000
"""...of at most 256 KB together (this leaves room for the envelope)."""
LINGER_S: Final = 1.0
"""How long a record waits for others to share its PutEvents, unless flushed sooner."""


class EventBridgeAuditSink:
    """`domain.ports.AuditSink` on the audit bus. `emit` never waits: records are stamped in the
    caller's order and put from a background thread, up to 10 per PutEvents, once the oldest has
    waited `linger_s` (so a turn's first event is not behind its audit) or when `flush` asks.
    The functions flush before every response ends (`http.audit_flush`): Lambda freezes a
    container between invocations, and a record still held then would wait for the next one."""

    def __init__(
        self,
        bus_name: str,
        *,
        region: str,
        endpoint_url: str | None = None,
        linger_s: float = LINGER_S,
        client: Any = None,
    ) -> None:
        self._bus = bus_name
        self._client = client or aws_session(region).client("events", endpoint_url=endpoint_url)
        self._clock = EmissionClock()
        self._linger_s = linger_s
        self._held: list[tuple[float, AuditRecord]] = []
        self._emitted = 0
        self._sent = 0
        self._flush_to = 0
        self._changed = threading.Condition()
        self._sender: threading.Thread | None = None
        """Started by the first record (a sink that never emits costs no thread)."""

    def emit(self, record: AuditRecord) -> None:
        """Stamps the emission time now, in the caller's order; sent in the background."""
        with self._changed:
            if self._sender is None:
                self._sender = threading.Thread(
                    target=self._send_forever, name="audit", daemon=True
                )
                self._sender.start()
            self._held.append((time.monotonic(), record.stamped(self._clock)))
            self._emitted += 1
            self._changed.notify_all()

    def flush(self) -> None:
        """Waits until every record emitted so far was put on the bus (or, refused, logged)."""
        with self._changed:
            self._flush_to = max(self._flush_to, self._emitted)
            self._changed.notify_all()
            self._changed.wait_for(lambda: self._sent >= self._flush_to)

    def _due(self) -> float | None:
        """Seconds until the held records are due (0: now), None when none is held."""
        if not self._held:
            return None
        if self._flush_to > self._sent or len(self._held) >= ENTRIES_PER_PUT:
            return 0.0
        return max(0.0, self._held[0][0] + self._linger_s - time.monotonic())

    def _send_forever(self) -> None:
        while True:
            with self._changed:
                while (due := self._due()) != 0.0:
                    self._changed.wait(timeout=due)
                batch = self._take_batch()
            try:
                self._put(batch)
            except Exception:  # the thread must outlive any record: every flush waits on it
                for record, _ in batch:
                    audit_logger.exception("audit record not sent: %s", record.to_payload())
            finally:
                with self._changed:
                    self._sent += len(batch)
                    self._changed.notify_all()

    def _take_batch(self) -> list[tuple[AuditRecord, dict[str, Any]]]:
        """The held records that fit one PutEvents, each with its entry (built once)."""
        batch: list[tuple[AuditRecord, dict[str, Any]]] = []
        size = 0
        while self._held and len(batch) < ENTRIES_PER_PUT:
            record = self._held[0][1]
            entry = self._entry(record)
            size += len(entry["Detail"])
            if batch and size > BYTES_PER_PUT:
                break
            batch.append((record, entry))
            del self._held[0]
        return batch

    def _entry(self, record: AuditRecord) -> dict[str, Any]:
        return {
            "EventBusName": self._bus,
            "Source": AUDIT_SOURCE,
            "DetailType": record.kind.value,
            "Detail": json.dumps(record.to_payload(), ensure_ascii=False, default=str),
        }

    def _put(self, batch: list[tuple[AuditRecord, dict[str, Any]]]) -> None:
        try:
            response = self._client.put_events(Entries=[entry for _, entry in batch])
        except Exception:
            # An audit event must not be lost silently: it goes to the log instead.
            for record, _ in batch:
                audit_logger.exception("audit bus refused a record: %s", record.to_payload())
            return
        for (record, _), result in zip(batch, response.get("Entries", []), strict=False):
            if result.get("ErrorCode"):
                audit_logger.error(
                    "audit bus refused a record (%s): %s",
                    result.get("ErrorCode"),
                    record.to_payload(),
                )
