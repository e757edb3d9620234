"""LangGraph checkpoints in DynamoDB (langgraph-checkpoint-aws), large ones offloaded to S3.

The saver never creates its table: template.yaml declares it (PK and SK strings, numeric `ttl`) and
the bucket; the local stack creates both from those declarations.

A read is the library's, in two round trips instead of three (and one more, not one per write,
when writes are pending): the checkpoint's index item names its payload and its pending writes,
which are then read side by side. It leans on the
repository's layout of langgraph-checkpoint-aws 1.2 (pinned; `test_checkpoint_reads.py` reads
every kind of checkpoint both ways and compares).
"""

from __future__ import annotations

import copy
import logging
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Final

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    ChannelVersions,
    Checkpoint,
    CheckpointMetadata,
    CheckpointTuple,
)
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph_checkpoint_aws import DynamoDBSaver
from langgraph_checkpoint_aws.checkpoint.dynamodb.serialization import CompressionType

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.settings import CheckpointSettings

SECONDS_PER_DAY = 86_400
# The index item's attributes a read needs (the library's own projection)
INDEX_PROJECTION: Final = "id, ns, #t, ref_key, ref_loc, compression, parent_checkpoint_id"
# The project's own types a stored checkpoint may hold. New checkpoints hold plain data only; this
# is what earlier releases wrote (the capabilities result's role, a StrEnum), so that they still
# load once the serializer is strict, as langgraph's LANGGRAPH_STRICT_MSGPACK is to become.
STORED_PROJECT_TYPES: Final = (("sstools_agent.domain.roles", "Role"),)


def checkpoint_serde() -> JsonPlusSerializer:
    """The serializer in its strict mode (langgraph's safe types and ours, nothing else), so a type
    that would be refused after an upgrade is refused in the tests today."""
    return JsonPlusSerializer(allowed_msgpack_modules=STORED_PROJECT_TYPES)


ReadKey = tuple[str, str, str | None]
"""(thread, namespace, checkpoint id or None for the latest) of a read."""


@dataclass
class _HeldThread:
    until: float
    """When the hold lapses (monotonic): the lock's lease could have lapsed by then."""
    reads: dict[ReadKey, CheckpointTuple | None] = field(default_factory=dict)


class TurnCheckpointer(DynamoDBSaver):  # type: ignore[misc]  # the package has no type hints
    """The DynamoDB saver, reading a held thread's checkpoint once: a turn asks for it up to
    three times before its first token (the open card, the previous message for routing, the
    run's own load), and each read is three calls (the checkpoint's index, its payload, its
    pending writes; `_read` makes them in two round trips).

    `hold(thread, for_s)` is called when the turn has taken the conversation's lock: from then
    on nothing but this process writes the thread, so what was read stays true until this saver
    writes it (any write forgets the thread's reads), or until the lock's lease could have
    lapsed (`for_s`). `release(thread)`
    at the turn's end: the next turn may run in another container, so nothing read is kept
    across turns. Reads of a thread not held are never kept. A kept read is handed out as a
    copy (LangGraph may change what it loaded)."""

    # BaseCheckpointSaver falls back to this class attribute (DynamoDBSaver passes no serde)
    serde = checkpoint_serde()

    def __init__(
        self, *args: Any, offload_to: tuple[Any, str] | None = None, **kwargs: Any
    ) -> None:
        """`offload_to`: (S3 client, bucket) for checkpoints over DynamoDB's item limit. Given
        here rather than as the library's `s3_offload_config`, whose set-up reads and rewrites
        the bucket's lifecycle: two S3 calls in every cold start (and a permission), for a rule
        template.yaml declares on the bucket."""
        super().__init__(*args, **kwargs)
        if offload_to is not None:
            storage = self.storage  # the same object the repository writes through
            storage.s3_client, storage.s3_bucket = offload_to
            storage.s3_enabled = True
        self._held: dict[str, _HeldThread] = {}
        self._reads_lock = threading.Lock()
        # The second round trip's two reads, side by side (boto3 clients are thread-safe)
        self._side_reads = ThreadPoolExecutor(max_workers=4, thread_name_prefix="checkpoint-read")

    def hold(self, thread_id: str, for_s: float) -> None:
        with self._reads_lock:
            self._held[thread_id] = _HeldThread(time.monotonic() + for_s)

    def release(self, thread_id: str) -> None:
        with self._reads_lock:
            self._held.pop(thread_id, None)

    def _live(self, thread_id: str) -> _HeldThread | None:
        """The thread's hold, unless its time is up (called under the lock)."""
        held = self._held.get(thread_id)
        if held is not None and held.until <= time.monotonic():
            del self._held[thread_id]
            return None
        return held

    def _forget(self, config: RunnableConfig) -> None:
        thread_id = str(config["configurable"]["thread_id"])
        with self._reads_lock:
            held = self._live(thread_id)
            if held is not None:
                held.reads.clear()

    def get_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        configurable = config["configurable"]
        thread_id = str(configurable["thread_id"])
        key: ReadKey = (
            thread_id,
            str(configurable.get("checkpoint_ns", "")),
            configurable.get("checkpoint_id"),
        )
        with self._reads_lock:
            held = self._live(thread_id)
            if held is not None and key in held.reads:
                return copy.deepcopy(held.reads[key])
        found = self._read(config, *key)
        with self._reads_lock:
            held = self._live(thread_id)
            if held is not None:
                held.reads[key] = copy.deepcopy(found)
        return found

    def _read(
        self, config: RunnableConfig, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> CheckpointTuple | None:
        """The library's `get_tuple`, with the payload and the pending writes read together."""
        repo = self.repo
        index = self._index_item(thread_id, ns, checkpoint_id)
        if index is None:
            return None
        found_id, found_ns = index["id"]["S"], index["ns"]["S"]
        payload_read = self._side_reads.submit(
            repo.storage.retrieve_data, index["ref_key"]["S"], index["ref_loc"]["S"]
        )
        pending_writes = self._pending_writes(thread_id, found_ns, found_id)
        payload = payload_read.result()
        if not payload:
            # An index item whose payload is gone: the library looks further back for one
            fallback: CheckpointTuple | None = super().get_tuple(config)
            return fallback
        compression = index.get("compression", {}).get("S")
        value = repo.serializer.deserialize(
            index["type"]["S"], payload, CompressionType(compression) if compression else None
        )
        parent_id = index.get("parent_checkpoint_id", {}).get("S")

        def at(checkpoint: str) -> RunnableConfig:
            ids = {"thread_id": thread_id, "checkpoint_ns": found_ns, "checkpoint_id": checkpoint}
            return {"configurable": ids}

        return CheckpointTuple(
            config=at(found_id),
            checkpoint=value["checkpoint"],
            metadata=value["metadata"],
            parent_config=at(parent_id) if parent_id else None,
            pending_writes=pending_writes,
        )

    def _pending_writes(
        self, thread_id: str, ns: str, checkpoint_id: str
    ) -> list[tuple[str, str, Any]]:
        """The library's `get_pending_writes`, with the writes' payloads read side by side.

        Only leaf reads go to the pool (nothing there waits on the pool): concurrent turns
        cannot starve it."""
        repo = self.repo
        params: dict[str, Any] = {
            "TableName": repo.table_name,
            "KeyConditionExpression": "PK = :pk",
            "ExpressionAttributeValues": {":pk": {"S": f"WRITES_{thread_id}#{ns}#{checkpoint_id}"}},
            "ProjectionExpression": "task_id, channel, ref_key, ref_loc, #t, compression",
            "ExpressionAttributeNames": {"#t": "type"},
        }
        items: list[dict[str, Any]] = []
        while True:
            response = repo.dynamodb_client.query(**params)
            items += response["Items"]
            if "LastEvaluatedKey" not in response:
                break
            params["ExclusiveStartKey"] = response["LastEvaluatedKey"]
        payloads = self._side_reads.map(
            lambda item: repo.storage.retrieve_data(item["ref_key"]["S"], item["ref_loc"]["S"]),
            items,
        )
        writes: list[tuple[str, str, Any]] = []
        for item, payload in zip(items, payloads, strict=True):
            if payload is None:  # an orphaned write: the library skips it too
                continue
            compression = item.get("compression", {}).get("S")
            value = repo.serializer.deserialize(
                item["type"]["S"], payload, CompressionType(compression) if compression else None
            )
            writes.append((item["task_id"]["S"], item["channel"]["S"], value))
        return writes

    def _index_item(
        self, thread_id: str, ns: str, checkpoint_id: str | None
    ) -> dict[str, Any] | None:
        """The checkpoint's index item: the one named, or the thread's latest in `ns`."""
        repo, pk = self.repo, f"CHECKPOINT_{thread_id}"
        names = {"#t": "type"}
        if checkpoint_id:
            response = repo.dynamodb_client.get_item(
                TableName=repo.table_name,
                Key={"PK": {"S": pk}, "SK": {"S": f"{ns}#{checkpoint_id}"}},
                ProjectionExpression=INDEX_PROJECTION,
                ExpressionAttributeNames=names,
            )
            item: dict[str, Any] | None = response.get("Item")
            return item
        response = repo.dynamodb_client.query(
            TableName=repo.table_name,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :ns_prefix)",
            ExpressionAttributeValues={":pk": {"S": pk}, ":ns_prefix": {"S": f"{ns}#"}},
            ProjectionExpression=INDEX_PROJECTION,
            ExpressionAttributeNames=names,
            ScanIndexForward=False,
            Limit=1,
        )
        return next(iter(response.get("Items", [])), None)

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
    reads a turn's checkpoint once. Building it calls nothing: the bucket's expiry is
    template.yaml's (CheckpointBucket), as old as `checkpoint_ttl_days`' default."""
    # The saver logs an INFO line per write; keep the function's logs for what matters.
    logging.getLogger("langgraph_checkpoint_aws").setLevel(logging.WARNING)
    session = aws_session(settings.aws_region)
    s3 = session.client("s3", endpoint_url=settings.aws_endpoint_url)
    return TurnCheckpointer(
        table_name=settings.checkpoint_table,
        session=session,
        region_name=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
        ttl_seconds=settings.checkpoint_ttl_days * SECONDS_PER_DAY,
        enable_checkpoint_compression=True,
        offload_to=(s3, settings.checkpoint_bucket),
    )
