"""Every AWS call a chat turn makes, by what makes it, and when: for the bench and the tests.

Every botocore call in this process is recorded with the moment it started (patched at
`BaseClient._make_api_call`, under every client of every adapter and library); an ASGI wrapper
marks the moments the app sends its first event and its `confirm_resolved`. A call that started
before a mark is on the critical path: the user waits for it. Calls made side by side overlap:
the round trips before a mark are the longest chain of calls, ended by then, each started after
the one before it ended.

moto answers in about a millisecond, so two calls made side by side may not overlap at all when a
busy machine starts the second thread late; they would then read as two round trips. Tests that
count round trips give the trace a network's latency (`latency_s`, slept inside each traced call,
as AWS is some milliseconds away), which makes every call last longer than such a delay.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from botocore.client import BaseClient

from sstools_agent.settings import Settings

FIRST_EVENT = "first event"
TEST_LATENCY_S = 0.1
"""The latency the tests that count round trips give a trace: far above a busy machine's delay in
starting a thread, and few round trips long."""
CONFIRM_RESOLVED = "confirm_resolved"


@dataclass(frozen=True)
class Call:
    started: float
    ended: float
    role: str
    operation: str
    service: str = ""
    params: dict[str, Any] = field(default_factory=dict)
    """What the call sent, and below what it got back (empty on an error): the sizes AWS bills
    by (a DynamoDB item's, an S3 object's, an event's) are read from them."""
    response: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.role}.{self.operation}"


@dataclass
class AwsCallTrace:
    """The calls made while `installed`, and the app's marks (taken per turn with `take`)."""

    settings: Settings
    latency_s: float = 0.0
    """Slept at the start of each traced call, inside its span (see the module's docstring)."""
    calls: list[Call] = field(default_factory=list)
    marks: dict[str, float] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def role(self, service: str, params: dict[str, Any]) -> str:
        """Who makes a call: the store, the confirmations, the checkpointer, or a service."""
        if service == "dynamodb":
            text = repr(params)
            if self.settings.checkpoint_table in text:
                return "checkpointer"
            if params.get("ProjectionExpression") == "cancel_run":
                return "cancel-poll"  # the event writer's, while a run has nothing to store
            return "confirmations" if "CONF#" in text else "store"
        services = {"stepfunctions": "step-functions", "events": "eventbridge"}
        return services.get(service, service)

    @contextmanager
    def installed(self) -> Iterator[AwsCallTrace]:
        original = BaseClient._make_api_call
        trace = self

        ours = (self.settings.aws_endpoint_url or "").rstrip("/")

        def traced(client: BaseClient, operation: str, params: dict[str, Any]) -> Any:
            # Only the stack's own clients: moto in this process makes calls of its own (a state
            # machine's PutEvents when another test's card expires)
            if not ours or client.meta.endpoint_url.rstrip("/") == ours:
                service = client.meta.service_model.service_name
                started, response = time.perf_counter(), {}
                try:
                    if trace.latency_s:
                        time.sleep(trace.latency_s)
                    response = original(client, operation, params)
                    return response
                finally:
                    ended, role = time.perf_counter(), trace.role(service, params)
                    call = Call(started, ended, role, operation, service, params, response)
                    with trace._lock:
                        trace.calls.append(call)
            return original(client, operation, params)

        BaseClient._make_api_call = traced
        try:
            yield self
        finally:
            BaseClient._make_api_call = original

    def take(self) -> TurnCalls:
        """The calls and marks since the last `take`."""
        with self._lock:
            calls, marks = self.calls, self.marks
            self.calls, self.marks = [], {}
        return TurnCalls(calls, marks)

    def marking(self, app: Any) -> Any:
        """`app`, marking when it sends its first event and its `confirm_resolved`."""

        async def marked(scope: dict[str, Any], receive: Any, send: Any) -> None:
            async def sending(message: dict[str, Any]) -> None:
                body = message.get("body", b"")
                if message["type"] == "http.response.body" and body:
                    now = time.perf_counter()
                    self.marks.setdefault(FIRST_EVENT, now)
                    if b'"confirm_resolved"' in body:
                        self.marks.setdefault(CONFIRM_RESOLVED, now)
                await send(message)

            await app(scope, receive, sending)

        return marked


@dataclass(frozen=True)
class TurnCalls:
    calls: list[Call]
    marks: dict[str, float]

    def before(self, mark: str, *, polls: bool = True) -> Counter[str]:
        """The calls started before `mark` (without the cancel poll's, unless `polls`: it runs
        in the background every half second, so how many fall before depends on the load)."""
        at = self.marks[mark]
        return Counter(
            call.name
            for call in self.calls
            if call.started < at and (polls or call.role != "cancel-poll")
        )

    def round_trips(self, mark: str) -> int:
        """How many calls the user waited for one after another before `mark`: the longest
        chain of calls that ended before it, each started after the one before it ended (calls
        side by side are one round trip; the cancel poll's are left out). A call still running
        at the mark was not waited for. A chain of background calls counts too: never fewer
        than the user waited for."""
        at = self.marks[mark]
        waited = [c for c in self.calls if c.ended <= at and c.role != "cancel-poll"]
        chain, free_at = 0, float("-inf")
        for call in sorted(waited, key=lambda c: c.ended):  # the longest chain, greedily
            if call.started >= free_at:
                chain, free_at = chain + 1, call.ended
        return chain

    def after(self, mark: str) -> Counter[str]:
        at = self.marks[mark]
        return Counter(call.name for call in self.calls if call.started >= at)
