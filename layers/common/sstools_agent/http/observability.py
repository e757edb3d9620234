"""Logs, metrics and traces of a function, built in one place: Powertools Logger (JSON lines with
the request id), Metrics (EMF lines in the `SsToolsAgent` namespace, named by `MetricName`) and,
when `TRACING` is on, Tracer (X-Ray); and the request-log middleware of the REST API.

Tracing is an explicit option (docs/deploy.md, "Tracing"). Off (the default), no Tracer is built
and the X-Ray SDK is never imported. On, the chat function needs `LambdaTraceHeader`: under
Lambda Web Adapter the app is a long-lived uvicorn process that never sees the invocation's
`_X_AMZN_TRACE_ID` (the adapter passes it as the `x-amzn-trace-id` request header,
aws/aws-lambda-web-adapter#312), and without it the SDK finds no segment and drops everything.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, cast

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricResolution, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled
from fastapi import Request, Response

from sstools_agent.settings import TracingSettings

METRICS_NAMESPACE: Final = "SsToolsAgent"


class MetricName(StrEnum):
    """Every metric the functions emit in `METRICS_NAMESPACE`, each with the dimension `service`
    (the short name given to `Observability.of`). The template's alarms and dashboard watch
    these names; tests/infrastructure/test_template.py checks them against the emitting calls."""

    CONVERSATIONS_CREATED = "ConversationsCreated"
    REQUEST_LATENCY = "RequestLatency"
    TIME_TO_FIRST_EVENT = "TimeToFirstEvent"
    TOOL_CALLS = "ToolCalls"
    TOOL_FAILURES = "ToolFailures"
    """Tool calls of a live turn that ended in `tool_error` (failed, not run, outcome unknown)."""
    CONFIRMATIONS_EXPIRED = "ConfirmationsExpired"
    """Confirmation cards whose timer ran out, one per expiry event about an expired card."""
    POLICY_SETS_REFUSED = "PolicySetsRefused"
    """Reads of the team's policy object refused (invalid, or unreadable): the last good set
    decides meanwhile (`domain.policy_loading`)."""
    LOG_ONLY_DECISIONS = "LogOnlyDecisions"
    """Calls of a live turn a log-only policy took part in (its would-be decision audited)."""


class QuietMetrics(Metrics):
    """Powertools' Metrics, keeping nothing while metrics are disabled (`make run`, `make eval`,
    the tests): a disabled flush leaves the set in place, and at 100 values Powertools prints it
    all the same (and a flush of nothing warns), so a long local run printed EMF blobs."""

    def add_metric(
        self,
        name: str,
        unit: MetricUnit | str,
        value: float,
        resolution: MetricResolution | int = 60,
    ) -> None:
        if not is_metrics_disabled():
            super().add_metric(name, unit, value, resolution)

    def flush_metrics(self, raise_on_empty_metrics: bool = False) -> None:
        if not is_metrics_disabled():
            super().flush_metrics(raise_on_empty_metrics)


def policy_set_refused(service: str) -> None:
    """One `PolicySetsRefused` of `service` (the function's short name), written at once: a
    refusal happens at init or on the reload's thread, outside any request whose metrics are
    flushed (a set of its own, so it never mixes with a request's)."""
    if is_metrics_disabled():
        return
    metrics = EphemeralMetrics(namespace=METRICS_NAMESPACE, service=service)
    metrics.add_metric(MetricName.POLICY_SETS_REFUSED, MetricUnit.Count, 1)
    metrics.flush_metrics()


Middleware = Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]


@dataclass(frozen=True)
class Observability:
    """One function's logger, metrics and tracer."""

    logger: Logger
    metrics: Metrics
    tracer: Tracer | None
    """None unless `TRACING` is on."""

    @classmethod
    def of(cls, function: str, *, tracing: bool | None = None) -> Observability:
        """`function` is the short name (chat, api, audit); the service `sstools-agent-<name>`.
        `tracing` defaults to the `TRACING` setting."""
        service = f"sstools-agent-{function}"
        if tracing is None:
            tracing = TracingSettings().tracing
        tracer = None
        if tracing:  # a Tracer imports the X-Ray SDK when it is built: only when asked
            tracer = Tracer(service=service)
        return cls(
            Logger(service=service),
            QuietMetrics(namespace=METRICS_NAMESPACE, service=function),
            tracer,
        )

    @contextlib.asynccontextmanager
    async def subsegment(self, name: str) -> AsyncIterator[None]:
        """An X-Ray subsegment around the block, when tracing."""
        if self.tracer is None:
            yield
            return
        async with self.tracer.provider.in_subsegment_async(name):
            yield

    def traced_handler[H: Callable[..., Any]](self, handler: H) -> H:
        """A Lambda handler traced as Powertools does it, when tracing; else `handler` itself."""
        if self.tracer is None:
            return handler
        return cast(H, self.tracer.capture_lambda_handler(handler))

    def request_log(self) -> Middleware:
        """One log line a request (with the Lambda's correlation id) and its latency as a metric."""

        async def log_request(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            started = time.perf_counter()
            response = await call_next(request)
            elapsed_ms = (time.perf_counter() - started) * 1000
            self.logger.info(
                "request",
                extra={
                    "method": request.method,
                    "path": request.url.path,
                    "status": response.status_code,
                    "elapsed_ms": round(elapsed_ms, 1),
                },
            )
            self.metrics.add_metric(MetricName.REQUEST_LATENCY, MetricUnit.Milliseconds, elapsed_ms)
            return response

        return log_request


TRACE_HEADER: Final = b"x-amzn-trace-id"
TRACE_ENVIRONMENT: Final = "_X_AMZN_TRACE_ID"


class LambdaTraceHeader:
    """ASGI middleware for the chat function when tracing: the invocation's trace id, which
    Lambda Web Adapter passes as the `x-amzn-trace-id` header, put where the X-Ray SDK reads
    it on Lambda (`_X_AMZN_TRACE_ID`). One invocation runs in an execution environment at a
    time, so the process's environment is the invocation's."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            traced = dict(scope.get("headers", [])).get(TRACE_HEADER)
            if traced is None:  # never another invocation's trace
                os.environ.pop(TRACE_ENVIRONMENT, None)
            else:
                os.environ[TRACE_ENVIRONMENT] = traced.decode("latin-1")
        await self.app(scope, receive, send)
