"""The local stack's stand-in for EventBridge → Lambda rules: moto cannot run Lambda code.

For each function a rule targets (the audit function, the expiry function), a queue behind a
rule with the function's own pattern (from template.yaml), and a thread that hands each event to
the function's code, as the rule target would.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable
from typing import Any

import boto3

from functions.audit.app import AuditEvent, store
from functions.expiry.app import ExpiryEvent, tell
from local.sam_template import load_template
from sstools_agent.chat.expired_cards import ExpiryRecorder

logger = logging.getLogger(__name__)


def rule_pattern(function: str, event: str) -> dict[str, Any]:
    """The EventBridge pattern of `function`'s rule `event`, as the template declares it."""
    events = load_template()["Resources"][function]["Properties"]["Events"]
    pattern: dict[str, Any] = events[event]["Properties"]["Pattern"]
    return pattern


def start_rule_pump(
    endpoint_url: str,
    region: str,
    bus_name: str,
    *,
    name: str,
    pattern: dict[str, Any],
    handle: Callable[[dict[str, Any]], object],
) -> threading.Event:
    """Starts a pump that hands each event `pattern` matches to `handle` (the envelope as
    EventBridge delivers it); set the returned event to stop it."""
    session = boto3.session.Session(region_name=region)
    sqs = session.client("sqs", endpoint_url=endpoint_url)
    events = session.client("events", endpoint_url=endpoint_url)
    url = sqs.create_queue(QueueName=name)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    events.put_rule(Name=name, EventBusName=bus_name, EventPattern=json.dumps(pattern))
    events.put_targets(
        Rule=name, EventBusName=bus_name, Targets=[{"Id": name, "Arn": arn["QueueArn"]}]
    )
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            for message in received.get("Messages", []):
                envelope = json.loads(message["Body"])
                # moto leaves out envelope fields AWS always sends; the functions require them.
                envelope.setdefault("account", "123456789012")
                envelope.setdefault("resources", [])
                try:
                    handle(envelope)
                except Exception:
                    logger.exception("%s: event not handled", name)
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    threading.Thread(target=pump, name=name, daemon=True).start()
    return stop


def start_audit_pump(endpoint_url: str, region: str, bus_name: str) -> threading.Event:
    """The audit function's rule: every agent event into the audit table."""
    pattern = rule_pattern("AuditFunction", "AuditEvents")
    return start_rule_pump(
        endpoint_url,
        region,
        bus_name,
        name="local-audit",
        pattern=pattern,
        handle=lambda envelope: store(AuditEvent.model_validate(envelope)),
    )


def start_expiry_pump(
    endpoint_url: str, region: str, bus_name: str, recorder: ExpiryRecorder
) -> threading.Event:
    """The expiry function's rule: a card's expiry told in its conversation (`recorder` is the
    local chat function's)."""

    def told(envelope: dict[str, Any]) -> object:
        return tell(recorder, ExpiryEvent.model_validate(envelope))

    pattern = rule_pattern("ExpiryFunction", "ExpiredCards")
    return start_rule_pump(
        endpoint_url, region, bus_name, name="local-expiry", pattern=pattern, handle=told
    )
