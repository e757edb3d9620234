"""TurnCheckpointer: a checkpoint read is the library's in two round trips (its payload and its
pending writes side by side); while a turn holds a thread, its checkpoint is read from DynamoDB
once, and never kept past a write, the turn's end, or for a thread not held
(adapters/checkpointer.py). Against moto; the reads counted with every botocore call traced."""

from __future__ import annotations

import time
import uuid
from collections import Counter
from typing import Any

import boto3
import pytest
from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint
from langgraph_checkpoint_aws import DynamoDBSaver

from local.aws_calls import TEST_LATENCY_S, AwsCallTrace
from sstools_agent.adapters.checkpointer import TurnCheckpointer, checkpointer_from
from sstools_agent.settings import Settings

LEASE_S = 120.0
HOLD_S = 3.0


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}


def write(saver: TurnCheckpointer, thread: str, step: int) -> str:
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"step": step}
    saved = saver.put(config(thread), checkpoint, {"step": step}, {})
    return str(saved["configurable"]["checkpoint_id"])


def read(saver: TurnCheckpointer, thread: str) -> CheckpointTuple:
    found = saver.get_tuple(config(thread))
    assert found is not None
    return found


def reads(trace: AwsCallTrace) -> int:
    return sum(1 for call in trace.take().calls if call.role == "checkpointer")


def library_read(saver: TurnCheckpointer, config: Any) -> CheckpointTuple | None:
    """The read as langgraph-checkpoint-aws makes it, one call after another."""
    found: CheckpointTuple | None = DynamoDBSaver.get_tuple(saver, config)
    return found


def with_pending_writes(saver: TurnCheckpointer, thread: str) -> Any:
    """A thread whose latest checkpoint has writes pending (a run stopped mid-step, a card)."""
    write(saver, thread, 1)
    latest = saver.get_tuple(config(thread))
    assert latest is not None
    saver.put_writes(latest.config, [("messages", {"text": "ы" * 10}), ("step", 2)], "task-1")
    saver.put_writes(latest.config, [("__interrupt__", ["card"])], "task-2")
    return latest.config


@pytest.mark.parametrize(
    "state", ["latest", "pending writes", "a named checkpoint", "no checkpoint", "lost payload"]
)
def test_a_read_is_what_the_library_reads(stack_settings: Settings, state: str):
    saver, thread = checkpointer_from(stack_settings), uuid.uuid4().hex
    asked = config(thread)
    if state in ("latest", "a named checkpoint", "lost payload"):
        first = write(saver, thread, 1)
        write(saver, thread, 2)
        if state == "a named checkpoint":
            asked = {"configurable": {**asked["configurable"], "checkpoint_id": first}}
        if state == "lost payload":  # the latest index item's payload is gone: an older one
            table = boto3.resource(
                "dynamodb",
                region_name=stack_settings.aws_region,
                endpoint_url=stack_settings.aws_endpoint_url,
            ).Table(stack_settings.checkpoint_table)
            index = table.query(
                KeyConditionExpression="PK = :pk",
                ExpressionAttributeValues={":pk": f"CHECKPOINT_{thread}"},
                ScanIndexForward=False,
                Limit=1,
            )["Items"][0]
            assert index["ref_loc"] == "DYNAMODB"
            stored = [k for k in table.scan()["Items"] if k.get("PK") == index["ref_key"]]
            assert stored, "the payload is where the index says"
            for item in stored:
                table.delete_item(Key={"PK": item["PK"], "SK": item["SK"]})
    elif state == "pending writes":
        asked = with_pending_writes(saver, thread)
    ours, theirs = saver.get_tuple(asked), library_read(saver, asked)
    assert ours == theirs
    if state == "no checkpoint":
        assert ours is None
        return
    assert ours is not None
    if state == "pending writes":
        assert len(ours.pending_writes or []) == 3
    elif state == "lost payload":
        assert ours.checkpoint["channel_values"] == {"step": 1}


def test_a_read_waits_for_three_round_trips_whatever_writes_are_pending(stack_settings: Settings):
    saver, thread = checkpointer_from(stack_settings), uuid.uuid4().hex
    with_pending_writes(saver, thread)
    trace = AwsCallTrace(stack_settings, latency_s=TEST_LATENCY_S)
    with trace.installed():
        read(saver, thread)
        taken = trace.take()
    taken.marks["read"] = float("inf")
    # The index; then its payload beside its writes' Query; then the writes' payloads, together
    # (the library's read: 2 + one per write, here 5)
    assert taken.before("read") == Counter({"checkpointer.Query": 2, "checkpointer.GetItem": 4})
    assert taken.round_trips("read") == 3


def test_a_read_of_a_checkpoint_without_writes_waits_for_two_round_trips(stack_settings: Settings):
    saver, thread = checkpointer_from(stack_settings), uuid.uuid4().hex
    write(saver, thread, 1)
    trace = AwsCallTrace(stack_settings, latency_s=TEST_LATENCY_S)
    with trace.installed():
        read(saver, thread)
        taken = trace.take()
    taken.marks["read"] = float("inf")
    assert taken.round_trips("read") == 2  # the library's: 3


def test_a_held_thread_is_read_once_until_this_saver_writes_it(stack_settings: Settings):
    saver, thread = checkpointer_from(stack_settings), uuid.uuid4().hex
    first = write(saver, thread, 1)
    trace = AwsCallTrace(stack_settings)
    with trace.installed():
        saver.hold(thread, LEASE_S)
        assert read(saver, thread).config["configurable"]["checkpoint_id"] == first
        assert reads(trace) == 3  # its index, its payload, its pending writes
        again = read(saver, thread)
        assert again.checkpoint["channel_values"] == {"step": 1}
        assert reads(trace) == 0
        second = write(saver, thread, 2)
        trace.take()
        latest = read(saver, thread)
        assert latest.config["configurable"]["checkpoint_id"] == second
        assert reads(trace) == 3


def test_a_hold_past_its_lease_keeps_nothing(stack_settings: Settings):
    saver, thread = checkpointer_from(stack_settings), uuid.uuid4().hex
    write(saver, thread, 1)
    trace = AwsCallTrace(stack_settings)
    with trace.installed():
        # A hold nobody released ends with the lock's lease: after it another container may
        # have the conversation and write its thread (a lease of seconds: both reads fall
        # within it however slowly this machine makes them)
        lease_ends = time.monotonic() + HOLD_S
        saver.hold(thread, HOLD_S)
        read(saver, thread)
        read(saver, thread)
        assert reads(trace) == 3
        time.sleep(max(0.0, lease_ends - time.monotonic()) + 0.1)
        read(saver, thread)
        assert reads(trace) == 3


def test_what_a_caller_changes_in_a_kept_read_is_not_kept(stack_settings: Settings):
    saver, thread = checkpointer_from(stack_settings), uuid.uuid4().hex
    write(saver, thread, 1)
    saver.hold(thread, LEASE_S)
    read(saver, thread).checkpoint["channel_values"]["step"] = 99
    assert read(saver, thread).checkpoint["channel_values"] == {"step": 1}


def test_nothing_is_kept_for_a_thread_not_held_or_after_its_turn(stack_settings: Settings):
    saver, other_container = checkpointer_from(stack_settings), checkpointer_from(stack_settings)
    thread = uuid.uuid4().hex
    write(saver, thread, 1)
    trace = AwsCallTrace(stack_settings)
    with trace.installed():
        read(saver, thread)
        read(saver, thread)
        assert reads(trace) == 6
        saver.hold(thread, LEASE_S)
        read(saver, thread)
        saver.release(thread)
    # The next turn runs in another container; this one's next turn must see what it wrote
    written = write(other_container, thread, 2)
    saver.hold(thread, LEASE_S)
    assert read(saver, thread).config["configurable"]["checkpoint_id"] == written
