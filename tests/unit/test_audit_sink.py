"""The audit bus sink: records leave in order, up to 10 per PutEvents, after their linger or on a
flush, and a refused one goes to the log (adapters/audit.py). A fake EventBridge client records
each PutEvents; the sink's own thread sends."""

from __future__ import annotations

import json
import logging
import threading
import time
from typing import Any

import pytest

from sstools_agent.adapters.audit import EventBridgeAuditSink
from sstools_agent.domain.audit import AuditKind, AuditRecord


class FakeEvents:
    def __init__(self, refuse: set[int] | None = None) -> None:
        self.puts: list[list[dict[str, Any]]] = []
        self.refuse = refuse or set()
        self.put = threading.Event()

    def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
        self.puts.append(Entries)
        self.put.set()
        results = []
        for entry in Entries:
            number = json.loads(entry["Detail"])["detail"]["n"]
            results.append(
                {"ErrorCode": "Throttled"} if number in self.refuse else {"EventId": "x"}
            )
        return {"FailedEntryCount": len(self.refuse), "Entries": results}


def record(n: int) -> AuditRecord:
    return AuditRecord(AuditKind.TOOL_CALLED, "user.engineer", "ok", "c1", {"n": n})


def sink(client: FakeEvents, linger_s: float) -> EventBridgeAuditSink:
    return EventBridgeAuditSink("bus", region="eu-central-1", linger_s=linger_s, client=client)


def numbers(client: FakeEvents) -> list[list[int]]:
    return [[json.loads(e["Detail"])["detail"]["n"] for e in put] for put in client.puts]


def test_a_flush_sends_every_record_so_far_in_order_ten_per_put():
    client = FakeEvents()
    bus = sink(client, linger_s=600)
    for n in range(25):
        bus.emit(record(n))
    bus.flush()
    assert numbers(client) == [list(range(10)), list(range(10, 20)), list(range(20, 25))]


def test_a_record_lingers_for_company_then_leaves_without_a_flush():
    client = FakeEvents()
    bus = sink(client, linger_s=2)  # far beyond the 0.1 s looked at first, even on a busy machine
    bus.emit(record(1))
    bus.emit(record(2))
    assert not client.put.wait(0.1)  # still lingering
    assert client.put.wait(30)
    time.sleep(0.05)
    assert numbers(client) == [[1, 2]]


def test_a_flush_with_nothing_held_returns_at_once():
    bus = sink(FakeEvents(), linger_s=600)
    started = time.monotonic()
    bus.flush()
    assert time.monotonic() - started < 60  # not the linger's 600 s


def test_a_refused_record_goes_to_the_log(caplog: pytest.LogCaptureFixture):
    client = FakeEvents(refuse={2})
    bus = sink(client, linger_s=600)
    for n in (1, 2, 3):
        bus.emit(record(n))
    with caplog.at_level(logging.ERROR, logger="sstools_agent.audit"):
        bus.flush()
    refused = [r for r in caplog.records if "refused" in r.getMessage()]
    assert len(refused) == 1
    assert "'n': 2" in refused[0].getMessage()


def test_a_send_that_breaks_still_lets_every_flush_return(caplog: pytest.LogCaptureFixture):
    class Broken(FakeEvents):
        def put_events(self, Entries: list[dict[str, Any]]) -> dict[str, Any]:
            super().put_events(Entries)
            return {"Entries": None}  # not what EventBridge answers: reading it fails

    client = Broken()
    bus = sink(client, linger_s=600)
    bus.emit(record(1))
    with caplog.at_level(logging.ERROR, logger="sstools_agent.audit"):
        bus.flush()  # returns: the record is logged, not lost silently
    bus.emit(record(2))
    bus.flush()  # and the sender is still there for the next one
    assert numbers(client) == [[1], [2]]
    assert any("'n': 1" in r.getMessage() for r in caplog.records)
