"""The local stack's stand-in for the confirmation machine's Lambda task: moto's Step Functions
runs `TellSecondDecision` against a function it cannot run (it answers without effect), so this
pump reads each execution's history for the task's scheduled invocation and hands its payload to
the chat app at the path Lambda Web Adapter would (`SECOND_DECISION_PATH`), over HTTP, once.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any, Final

import boto3
import httpx

logger = logging.getLogger(__name__)
POLL_S: Final = 0.3


def scheduled_invocations(history: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """The Lambda invocations an execution's history scheduled: (event id, payload)."""
    found = []
    for event in history:
        details = event.get("taskScheduledEventDetails") or {}
        if details.get("resourceType") == "lambda" and details.get("resource") == "invoke":
            parameters = json.loads(details.get("parameters") or "{}")
            found.append((int(event["id"]), dict(parameters.get("Payload") or {})))
    return found


def deliver_over_http(url: str, payload: dict[str, Any]) -> None:
    """What Lambda Web Adapter does with an invocation that is not an HTTP request: the
    payload POSTed to the app's pass-through path (`url`)."""
    httpx.post(url, json=payload, timeout=300).raise_for_status()


class LambdaTaskPump:
    """Hands each Lambda invocation one state machine's executions schedule to `deliver`, once."""

    def __init__(
        self, client: Any, state_machine_arn: str, deliver: Callable[[dict[str, Any]], object]
    ) -> None:
        self.client, self.arn, self.deliver = client, state_machine_arn, deliver
        self.delivered: set[tuple[str, int]] = set()
        self.finished: set[str] = set()

    def poll_once(self) -> None:
        pages = self.client.get_paginator("list_executions").paginate(stateMachineArn=self.arn)
        for page in pages:
            for execution in page["executions"]:
                arn = execution["executionArn"]
                if arn not in self.finished:
                    if execution["status"] != "RUNNING":
                        self.finished.add(arn)  # read once more now: its last task may be new
                    self._deliver_new(arn)

    def _deliver_new(self, execution_arn: str) -> None:
        history = self.client.get_execution_history(executionArn=execution_arn, maxResults=1000)
        for event_id, payload in scheduled_invocations(history["events"]):
            if (execution_arn, event_id) not in self.delivered:
                self.delivered.add((execution_arn, event_id))
                self.deliver(payload)


def start_lambda_task_pump(
    endpoint_url: str,
    region: str,
    state_machine_arn: str,
    deliver: Callable[[dict[str, Any]], object],
) -> threading.Event:
    """Starts a pump that hands every Lambda invocation `state_machine_arn`'s executions
    schedule to `deliver` (once each); set the returned event to stop it."""
    client = boto3.session.Session(region_name=region).client(
        "stepfunctions", endpoint_url=endpoint_url
    )
    tasks = LambdaTaskPump(client, state_machine_arn, deliver)
    stop = threading.Event()

    def pump() -> None:
        while not stop.wait(POLL_S):
            try:
                tasks.poll_once()
            except Exception:
                logger.exception("state machine tasks: not handed over")

    threading.Thread(target=pump, name="local-state-machine-tasks", daemon=True).start()
    return stop
