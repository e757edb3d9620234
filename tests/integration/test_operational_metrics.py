"""The metrics the template's alarms watch are emitted when their event happens, as CloudWatch
reads them: an EMF line on the function's stdout, in the project's namespace, with the
dimensions the alarm names (an alarm on other dimensions would never see a datapoint).

Through the chat function over HTTP (a tool the upstream fails) and the expiry function's
handler (a card the real state machine in moto expired).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import boto3
import pytest

from functions.expiry.app import create_handler
from local.agent_stack import AgentStack
from local.fault_injection import Fault, FaultKind
from local.sam_template import load_template
from sstools_agent.chat.expired_cards import ExpiryTold
from sstools_agent.domain.cedar_policy import shipped_policy_text
from sstools_agent.http.observability import METRICS_NAMESPACE, MetricName
from sstools_agent.wiring.chat import build_chat
from tests.support.chat_http import confirmation_item, wait_for
from tests.support.chat_server import ChatServer, ask, make_chat, post_stream
from tests.support.events import LambdaInvocation
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio

READS = ("GET", "/api/environments/ss-dev/dashboards")
QUESTION = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}


@dataclass(frozen=True)
class Datapoint:
    """One metric value of an EMF line, with what identifies its metric in CloudWatch."""

    namespace: str
    name: str
    dimensions: dict[str, str]
    value: float


def emitted(stdout: str) -> list[Datapoint]:
    """Every metric value the EMF lines in `stdout` carry (CloudWatch's reading of them)."""
    points = []
    for line in stdout.splitlines():
        if not line.startswith("{") or '"_aws"' not in line:
            continue
        document = json.loads(line)
        for directive in document["_aws"]["CloudWatchMetrics"]:
            (dimension_names,) = directive["Dimensions"]
            dimensions = {name: document[name] for name in dimension_names}
            for metric in directive["Metrics"]:
                values = document[metric["Name"]]
                for value in values if isinstance(values, list) else [values]:
                    points.append(
                        Datapoint(directive["Namespace"], metric["Name"], dimensions, value)
                    )
    return points


def values_of(points: list[Datapoint], name: MetricName) -> list[Datapoint]:
    return [p for p in points if p.name == name.value]


def watched(point: Datapoint) -> bool:
    """Whether template.yaml has an alarm on exactly this datapoint's metric."""
    return any(
        resource["Type"] == "AWS::CloudWatch::Alarm"
        and resource["Properties"]["Namespace"] == point.namespace
        and resource["Properties"]["MetricName"] == point.name
        and {d["Name"]: d["Value"] for d in resource["Properties"]["Dimensions"]}
        == point.dimensions
        for resource in load_template()["Resources"].values()
    )


async def test_a_failing_tool_counts_one_tool_failure(
    chat: ChatServer, capsys: pytest.CaptureFixture[str]
):
    # Given an upstream that fails every read
    chat.stack.upstream.plan.add(*READS, Fault(FaultKind.STATUS, status=503, times=None))
    capsys.readouterr()
    # When a question needs one
    status, events, _ = await post_stream(chat, QUESTION)
    assert status == 200
    assert [e.type for e in events].count("tool_error") == 1
    # Then the turn's EMF line counts one tool call and one failure, in the chat's service
    points = emitted(capsys.readouterr().out)
    (failures,) = values_of(points, MetricName.TOOL_FAILURES)
    assert failures == Datapoint(METRICS_NAMESPACE, "ToolFailures", {"service": "chat"}, 1)
    (calls,) = values_of(points, MetricName.TOOL_CALLS)
    assert calls.value == 1
    # And the alarms on failures and on the first event's delay watch exactly these metrics
    assert watched(failures)
    (first_event,) = values_of(points, MetricName.TIME_TO_FIRST_EVENT)
    assert watched(first_event)


async def test_a_turn_whose_tools_succeed_counts_no_failure(
    chat: ChatServer, capsys: pytest.CaptureFixture[str]
):
    capsys.readouterr()
    status, events, _ = await post_stream(chat, QUESTION)
    assert status == 200
    assert "tool_end" in [e.type for e in events]
    (failures,) = values_of(emitted(capsys.readouterr().out), MetricName.TOOL_FAILURES)
    assert failures.value == 0


async def test_a_reconnect_replaying_a_failure_does_not_count_it_again(
    chat: ChatServer, capsys: pytest.CaptureFixture[str]
):
    # Given a turn whose tool failed, counted once
    chat.stack.upstream.plan.add(*READS, Fault(FaultKind.STATUS, status=503, times=None))
    _, events, _ = await post_stream(chat, QUESTION)
    conversation = events[-1].data["metadata"]["conversation_id"]
    capsys.readouterr()
    # When a reconnect asks for the whole turn again
    status, replay, _ = await post_stream(
        chat,
        {"action": "resume", "conversation_id": conversation, "last_event_id": f"{conversation}:0"},
    )
    assert status == 200
    assert "tool_error" in [e.type for e in replay]
    # Then nothing new ran, and no tool call or failure is counted
    points = emitted(capsys.readouterr().out)
    assert values_of(points, MetricName.TOOL_FAILURES) == []
    assert values_of(points, MetricName.TOOL_CALLS) == []


@pytest.fixture
def quick_chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from make_chat(stack, confirmation_timeout_s=2)


def expiry_event(confirmation_id: str) -> dict[str, Any]:
    """The state machine's `confirmation_decided(expired)`, as EventBridge delivers it."""
    return {
        "version": "0",
        "id": uuid.uuid4().hex,
        "detail-type": "confirmation_decided",
        "source": "sstools.agent.confirmations",
        "account": "123456789012",
        "time": "2026-12-03T08:00:00Z",
        "region": "eu-central-1",
        "resources": [],
        "detail": {
            "kind": "confirmation_decided",
            "confirmation_id": confirmation_id,
            "decision": {"result": "expired"},
        },
    }


async def test_an_expired_card_counts_one_confirmation_expired(
    quick_chat: ChatServer, capsys: pytest.CaptureFixture[str]
):
    chat = quick_chat
    handler = create_handler(build_chat(chat.stack.settings).expiry_recorder())
    # Given a card nobody answers, expired by its timer
    _, card = await ask(chat)
    await wait_for(lambda: confirmation_item(chat, card["confirmation_id"])["status"] == "expired")
    capsys.readouterr()
    # When the expiry function gets the state machine's event
    answer = await asyncio.to_thread(
        handler, expiry_event(card["confirmation_id"]), LambdaInvocation()
    )
    assert answer["told"] != ExpiryTold.NOT_EXPIRED
    # Then one expiry is counted, in the expiry function's service
    (expired,) = values_of(emitted(capsys.readouterr().out), MetricName.CONFIRMATIONS_EXPIRED)
    assert expired == Datapoint(METRICS_NAMESPACE, "ConfirmationsExpired", {"service": "expiry"}, 1)
    assert watched(expired)  # the alarm on expiries sees it


async def test_an_expiry_event_about_a_card_not_expired_counts_nothing(
    chat: ChatServer, capsys: pytest.CaptureFixture[str]
):
    handler = create_handler(build_chat(chat.stack.settings).expiry_recorder())
    capsys.readouterr()
    # An event sent by hand about a card that does not exist
    answer = await asyncio.to_thread(handler, expiry_event("no-such-card"), LambdaInvocation())
    assert answer["told"] == ExpiryTold.NOT_EXPIRED
    assert values_of(emitted(capsys.readouterr().out), MetricName.CONFIRMATIONS_EXPIRED) == []


TRIAL_FORBID_EVERY_TOOL = """
@id("trial-nothing-at-all")
@mode("log_only")
forbid (principal, action in SsTools::Action::"tool", resource);
"""


@pytest.fixture
def policy_bucket(stack: AgentStack) -> Callable[[str], AgentStack]:
    """A stack whose functions read their policy set from an S3 object holding `text`."""
    settings = stack.settings
    s3 = boto3.client("s3", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region)
    bucket = f"policies-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": settings.aws_region}
    )

    def with_policy(text: str) -> AgentStack:
        s3.put_object(Bucket=bucket, Key="policy.cedar", Body=text.encode())
        update = {"policy_bucket": bucket, "policy_object_key": "policy.cedar"}
        return AgentStack(settings.model_copy(update=update), stack.upstream)

    return with_policy


async def test_a_refused_policy_set_counts_one_and_its_alarm_watches_it(
    policy_bucket: Callable[[str], AgentStack], capsys: pytest.CaptureFixture[str]
):
    # Given a stage whose policy object fails validation (a tool name misspelt)
    stack = policy_bucket(
        '@id("typo")\npermit (principal, action == SsTools::Action::"nope", resource);'
    )
    capsys.readouterr()
    # When the chat function starts
    build_chat(stack.settings).agent()
    # Then one refusal is counted, in the chat's service (the shipped set decides meanwhile)
    (refused,) = values_of(emitted(capsys.readouterr().out), MetricName.POLICY_SETS_REFUSED)
    assert refused == Datapoint(METRICS_NAMESPACE, "PolicySetsRefused", {"service": "chat"}, 1)
    assert watched(refused)


async def test_a_log_only_decision_is_counted_with_the_turn(
    policy_bucket: Callable[[str], AgentStack], capsys: pytest.CaptureFixture[str]
):
    # Given a policy set with a log-only forbid of every tool
    stack = policy_bucket(shipped_policy_text() + TRIAL_FORBID_EVERY_TOOL)
    for chat in make_chat(stack):
        capsys.readouterr()
        # When a question needs one read
        status, events, _ = await post_stream(chat, QUESTION)
        # Then the read ran (the policy is log-only), and the turn counts one log-only decision
        assert status == 200
        assert [e.type for e in events].count("tool_end") == 1
        points = emitted(capsys.readouterr().out)
        (trials,) = values_of(points, MetricName.LOG_ONLY_DECISIONS)
        assert trials == Datapoint(METRICS_NAMESPACE, "LogOnlyDecisions", {"service": "chat"}, 1)
