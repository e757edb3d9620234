"""With metrics off (POWERTOOLS_METRICS_DISABLED, as `make run` and `make eval` run), nothing
reaches the console however many turns are served: Powertools printed a full set of 100 values
even then, and warned on every flush of nothing."""

from __future__ import annotations

import warnings

import pytest
from aws_lambda_powertools.metrics import MetricUnit

from sstools_agent.http.observability import MetricName, Observability


def test_a_long_run_with_metrics_off_prints_nothing(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    metrics = Observability.of("chat", tracing=False).metrics
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning on the console is a failure here
        for _ in range(250):
            metrics.add_metric(MetricName.TOOL_CALLS, MetricUnit.Count, 1)
            metrics.flush_metrics()
    assert capsys.readouterr().out == ""


def test_with_metrics_on_each_flush_prints_its_values(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    metrics = Observability.of("chat", tracing=False).metrics
    metrics.add_metric(MetricName.TOOL_CALLS, MetricUnit.Count, 2)
    metrics.flush_metrics()
    printed = capsys.readouterr().out
    assert '"ToolCalls":[2.0]' in printed
    assert '"service":"chat"' in printed
