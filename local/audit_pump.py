"""The local stack's stand-in for the EventBridge → Lambda rule: moto cannot run Lambda code.

A queue behind a rule with the audit function's own pattern (from template.yaml), and a thread that
hands each event to the audit function's code, as the rule target would.
"""

from __future__ import annotations

import json
import logging
import threading
from typing import Any

import boto3

from functions.audit.app import AuditEvent, store
from local.sam_template import load_template

logger = logging.getLogger(__name__)


def audit_rule_pattern() -> dict[str, Any]:
    """The audit function's EventBridge rule pattern, as the template declares it."""
    events = load_template()["Resources"]["AuditFunction"]["Properties"]["Events"]
    pattern: dict[str, Any] = events["AuditEvents"]["Properties"]["Pattern"]
    return pattern


def start_audit_pump(endpoint_url: str, region: str, bus_name: str) -> threading.Event:
    """Starts the pump; set the returned event to stop it."""
    session = boto3.session.Session(region_name=region)
    sqs = session.client("sqs", endpoint_url=endpoint_url)
    events = session.client("events", endpoint_url=endpoint_url)
    url = sqs.create_queue(QueueName="local-audit")["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]
    events.put_rule(
        Name="local-audit", EventBusName=bus_name, EventPattern=json.dumps(audit_rule_pattern())
    )
    events.put_targets(
        Rule="local-audit", EventBusName=bus_name, Targets=[{"Id": "audit", "Arn": arn["QueueArn"]}]
    )
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            received = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
            for message in received.get("Messages", []):
                envelope = json.loads(message["Body"])
                # moto leaves out envelope fields AWS always sends; the function requires them.
                envelope.setdefault("account", "123456789012")
                envelope.setdefault("resources", [])
                try:
                    store(AuditEvent.model_validate(envelope))
                except Exception:
                    logger.exception("audit event not stored")
                sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])

    threading.Thread(target=pump, name="audit-pump", daemon=True).start()
    return stop
