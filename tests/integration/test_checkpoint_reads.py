"""TurnCheckpointer: while a turn holds a thread, its checkpoint is read from DynamoDB once, and
never kept past a write, the turn's end, or for a thread not held (adapters/checkpointer.py).
Against moto; the reads counted with every botocore call traced."""

from __future__ import annotations

import uuid
from typing import Any

from langgraph.checkpoint.base import CheckpointTuple, empty_checkpoint

from sstools_agent.adapters.checkpointer import TurnCheckpointer, checkpointer_from
from sstools_agent.settings import Settings
from tests.support.aws_calls import AwsCallTrace


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


def test_a_held_thread_is_read_once_until_this_saver_writes_it(stack_settings: Settings):
    saver, thread = checkpointer_from(stack_settings), uuid.uuid4().hex
    first = write(saver, thread, 1)
    trace = AwsCallTrace(stack_settings)
    with trace.installed():
        saver.hold(thread)
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


def test_what_a_caller_changes_in_a_kept_read_is_not_kept(stack_settings: Settings):
    saver, thread = checkpointer_from(stack_settings), uuid.uuid4().hex
    write(saver, thread, 1)
    saver.hold(thread)
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
        saver.hold(thread)
        read(saver, thread)
        saver.release(thread)
    # The next turn runs in another container; this one's next turn must see what it wrote
    written = write(other_container, thread, 2)
    saver.hold(thread)
    assert read(saver, thread).config["configurable"]["checkpoint_id"] == written
