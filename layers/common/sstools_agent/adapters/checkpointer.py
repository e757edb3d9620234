"""LangGraph checkpoints in DynamoDB (langgraph-checkpoint-aws), large ones offloaded to S3.

The saver never creates its table: template.yaml declares it (PK and SK strings, numeric `ttl`) and
the bucket; the local stack creates both from those declarations.
"""

from __future__ import annotations

import copy
import logging
import threading
from collections.abc import Sequence
from typing import Any

import boto3
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph_checkpoint_aws import DynamoDBSaver

from sstools_agent.settings import CheckpointSettings

SECONDS_PER_DAY = 86_400
ReadKey = tuple[str, str, str | None]
"""(thread, namespace, checkpoint id or None for the latest) of a read."""


class TurnCheckpointer(DynamoDBSaver):  # type: ignore[misc]  # the package has no type hints
    """The DynamoDB saver, reading a held thread's checkpoint once: a turn reads it up to three
    times before its first token (the open card, the previous message for routing, the run's own
    load), three round trips each (the checkpoint's index, its payload, its pending writes).

    `hold(thread)` is called when the turn has taken the conversation's lock: from then on
    nothing but this process writes the thread, so what was read stays true until this saver
    writes it (any write forgets the thread's reads). `release(thread)` at the turn's end: the
    next turn may run in another container, so nothing read is kept across turns. Reads of a
    thread not held are never kept. A kept read is handed out as a copy (LangGraph may change
    what it loaded)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reads: dict[str, dict[ReadKey, CheckpointTuple | None]] = {}
        self._reads_lock = threading.Lock()

    def hold(self, thread_id: str) -> None:
        with self._reads_lock:
            self._reads[thread_id] = {}

    def release(self, thread_id: str) -> None:
        with self._reads_lock:
            self._reads.pop(thread_id, None)

    def _forget(self, config: RunnableConfig) -> None:
        thread_id = str(config["configurable"]["thread_id"])
        with self._reads_lock:
            if thread_id in self._reads:
                self._reads[thread_id] = {}

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        key: ReadKey = (
            thread_id,
            str(configurable.get("checkpoint_ns", "")),
            configurable.get("checkpoint_id"),
        )
        with self._reads_lock:
            reads = self._reads.get(thread_id)
            if reads is not None and key in reads:
                return copy.deepcopy(reads[key])
        found: CheckpointTuple | None = super().get_tuple(config)
        with self._reads_lock:
            reads = self._reads.get(thread_id)
            if reads is not None:
                reads[key] = copy.deepcopy(found)
        return found

    def put(
        self,
        config: RunnableConfig,
        checkpoint: Checkpoint,
        metadata: CheckpointMetadata,
        new_versions: ChannelVersions,
    ) -> RunnableConfig:
        self._forget(config)
        try:
            saved: RunnableConfig = super().put(config, checkpoint, metadata, new_versions)
        finally:
            self._forget(config)
        return saved

    def put_writes(
        self,
        config: RunnableConfig,
        writes: Sequence[tuple[str, Any]],
        task_id: str,
        task_path: str = "",
    ) -> None:
        self._forget(config)
        try:
            super().put_writes(config, writes, task_id, task_path)
        finally:
            self._forget(config)

    def delete_thread(self, thread_id: str) -> None:
        self._forget({"configurable": {"thread_id": thread_id}})
        super().delete_thread(thread_id)


def checkpointer_from(settings: CheckpointSettings) -> TurnCheckpointer:
    """A DynamoDBSaver with compression, TTL and S3 offload, on the configured endpoints, that
    reads a turn's checkpoint once."""
    # The saver logs an INFO line per write; keep the function's logs for what matters.
    logging.getLogger("langgraph_checkpoint_aws").setLevel(logging.WARNING)
    session = boto3.session.Session(region_name=settings.aws_region)
    return TurnCheckpointer(
        table_name=settings.checkpoint_table,
        session=session,
        region_name=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
        ttl_seconds=settings.checkpoint_ttl_days * SECONDS_PER_DAY,
        enable_checkpoint_compression=True,
        s3_offload_config={
            "bucket_name": settings.checkpoint_bucket,
            "endpoint_url": settings.aws_endpoint_url,
        },
    )
