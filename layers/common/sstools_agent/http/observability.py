"""Logs, metrics and traces of a function, built in one place: Powertools Logger (JSON lines with
the request id), Metrics (EMF lines in the `SsToolsAgent` namespace) and Tracer (X-Ray on Lambda,
a no-op elsewhere), and the request-log middleware of the REST API."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from fastapi import Request, Response

METRICS_NAMESPACE: Final = "SsToolsAgent"

Middleware = Callable[[Request, Callable[[Request], Awaitable[Response]]], Awaitable[Response]]


@dataclass(frozen=True)
class Observability:
    """One function's logger, metrics and tracer."""

    logger: Logger
    metrics: Metrics
    tracer: Tracer

    @classmethod
    def of(cls, function: str) -> Observability:
        """`function` is the short name (chat, api, audit); the service `sstools-agent-<name>`."""
        service = f"sstools-agent-{function}"
        return cls(
            Logger(service=service),
            Metrics(namespace=METRICS_NAMESPACE, service=function),
            Tracer(service=service),
        )

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
            self.metrics.add_metric("RequestLatency", MetricUnit.Milliseconds, elapsed_ms)
            return response

        return log_request
