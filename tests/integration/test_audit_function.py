"""The audit function on the sample events: append-only items, by user and by conversation."""

from __future__ import annotations

from dataclasses import dataclass

import boto3
import pytest
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions.audit import app as audit_function
from tests.support.agent_stack import AgentStack
from tests.support.events import load_event


@dataclass
class Context(LambdaContext):
    function_name: str = "AuditFunction"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:eu-central-1:123456789012:function:AuditFunction"
    aws_request_id: str = "req-1"


@pytest.fixture
def table(stack: AgentStack, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", stack.settings.aws_endpoint_url or "")
    monkeypatch.setenv("AWS_DEFAULT_REGION", stack.settings.aws_region)
    monkeypatch.setenv("AUDIT_TABLE", "AuditTable")
    monkeypatch.setattr(audit_function, "_table", None)
    return boto3.resource(
        "dynamodb",
        endpoint_url=stack.settings.aws_endpoint_url,
        region_name=stack.settings.aws_region,
    ).Table("AuditTable")


def test_events_are_stored_once_and_found_by_user_and_by_conversation(table):
    tool = load_event("audit_tool_called")
    decided = load_event("audit_confirmation_decided")
    assert audit_function.handler(tool, Context())["stored"] is True
    assert audit_function.handler(decided, Context())["stored"] is True
    # A redelivered event is not stored twice (append-only, idempotent)
    assert audit_function.handler(tool, Context())["stored"] is False
    by_user = table.query(
        KeyConditionExpression="PK = :pk", ExpressionAttributeValues={":pk": "USER#egor.engineer"}
    )["Items"]
    assert [(i["kind"], i["service_actor"]) for i in by_user] == [("tool_called", "ss-tools-agent")]
    by_conversation = table.query(
        IndexName="ByConversation",
        KeyConditionExpression="GSI1PK = :pk",
        ExpressionAttributeValues={":pk": "CONV#9819e29814a945d1bbd5e4efcdbf7e43"},
    )["Items"]
    assert [i["kind"] for i in by_conversation] == ["tool_called", "confirmation_decided"]
    assert all(int(i["ttl"]) > 1_796_000_000 for i in by_conversation)


def test_a_malformed_event_is_refused():
    with pytest.raises(Exception, match="validation error"):
        audit_function.handler({"detail": "not an EventBridge event"}, Context())
