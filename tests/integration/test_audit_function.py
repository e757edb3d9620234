"""The audit function on the sample events: append-only items, by user and by conversation."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

import boto3
import pytest

from functions.audit import app as audit_function
from local.agent_stack import AgentStack
from sstools_agent.domain.audit import AuditKind, AuditRecord, EmissionClock
from sstools_agent.wiring.audit import build_audit
from tests.support.events import LambdaInvocation, load_event


@pytest.fixture
def table(stack: AgentStack, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(audit_function, "deps", build_audit(stack.settings))
    return boto3.resource(
        "dynamodb",
        endpoint_url=stack.settings.aws_endpoint_url,
        region_name=stack.settings.aws_region,
    ).Table("AuditTable")


def test_events_are_stored_once_and_found_by_user_and_by_conversation(table):
    tool = load_event("audit_tool_called")
    decided = load_event("audit_confirmation_decided")
    assert audit_function.handler(tool, LambdaInvocation())["stored"] is True
    assert audit_function.handler(decided, LambdaInvocation())["stored"] is True
    # A redelivered event is not stored twice (append-only, idempotent)
    assert audit_function.handler(tool, LambdaInvocation())["stored"] is False
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
        audit_function.handler({"detail": "not an EventBridge event"}, LambdaInvocation())


def test_records_of_one_second_keep_the_order_they_were_emitted_in(table):
    # Given 300 records emitted in order within one second, stamped as the audit sink stamps them
    clock = EmissionClock()
    conversation = uuid.uuid4().hex
    records = [
        AuditRecord(AuditKind.TOOL_CALLED, "order.user", "succeeded", conversation, {"n": n})
        for n in range(300)
    ]
    events = [
        {
            **load_event("audit_tool_called"),
            "id": str(uuid.uuid4()),  # random: the order cannot come from it
            "time": "2026-11-30T10:00:05Z",  # the bus's time has whole seconds only
            "detail": record.stamped(clock).to_payload(),
        }
        for record in records
    ]
    # When the audit function stores them, in a shuffled delivery order
    for event in random.Random(7).sample(events, len(events)):  # noqa: S311 (not security)
        assert audit_function.handler(event, LambdaInvocation())["stored"] is True
    # Then both listings return them in emission order
    by_conversation = query_all(
        table,
        IndexName="ByConversation",
        KeyConditionExpression="GSI1PK = :pk",
        ExpressionAttributeValues={":pk": f"CONV#{conversation}"},
    )
    by_user = query_all(
        table,
        KeyConditionExpression="PK = :pk",
        ExpressionAttributeValues={":pk": "USER#order.user"},
    )
    for items in (by_conversation, by_user):
        assert [json.loads(i["detail"])["detail"]["n"] for i in items] == list(range(300))


def test_emission_times_increase_strictly_even_when_the_clock_does_not():
    ticks = iter([5_000_000_000, 5_000_000_000, 4_999_000_000, 5_000_000_500, 5_000_002_000])
    clock = EmissionClock(lambda: next(ticks))
    stamps = [clock.now() for _ in range(5)]
    assert stamps == sorted(stamps)
    assert len(set(stamps)) == 5
    assert stamps[0] == "1970-01-01T00:00:05.000000Z"
    assert stamps[-1] == "1970-01-01T00:00:05.000004Z"  # never behind the last one


def query_all(table: Any, **query: Any) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    page: dict[str, Any] = {}
    while True:
        response = table.query(**query, **page)
        items += response["Items"]
        if "LastEvaluatedKey" not in response:
            return items
        page = {"ExclusiveStartKey": response["LastEvaluatedKey"]}
