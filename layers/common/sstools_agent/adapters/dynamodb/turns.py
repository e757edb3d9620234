"""The turn lock (a lease on the META item), cancel requests, stream events and a turn's history."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, replace
from typing import Any

import anyio
from botocore.exceptions import ClientError

from sstools_agent.adapters.dynamodb.items import (
    LOCK_CONDITION,
    bounded_json,
    conversation_from,
    conversation_pk,
    event_chunks,
    meta_key,
    record_item,
    stored_events,
    to_json,
)
from sstools_agent.adapters.dynamodb.table import DynamoTable, condition_failed, old_item
from sstools_agent.domain.conversations import (
    Conversation,
    ConversationNotFound,
    StoredMessage,
    turn_refusal,
)
from sstools_agent.domain.ports import StoredEvent


def _now_ms() -> int:
    return int(time.time() * 1000)


class TurnLock(DynamoTable):
    """Takes, renews and releases the per-conversation lease; stores what a turn streams."""

    async def start_turn(
        self, conversation: Conversation, run_id: str, lease_s: float, *, new: bool
    ) -> Conversation:
        """Takes the conversation's lock for this run (creating the record when new)."""
        now_ms = _now_ms()
        until = now_ms + int(lease_s * 1000)
        try:
            if new:
                lock = {"locked_by": run_id, "locked_until": until, "locked_at": now_ms}
                item = record_item(conversation) | lock
                await self._run(
                    self._table.put_item,
                    Item=item,
                    ConditionExpression="attribute_not_exists(PK)",
                    ReturnValuesOnConditionCheckFailure="ALL_OLD",
                )
                return conversation_from(item)
            return await self._take(conversation, run_id, until, now_ms)
        except ClientError as error:
            if not condition_failed(error):
                raise
            old = old_item(error)
            current = conversation_from(old) if old else None
            owner = conversation.owner
            raise turn_refusal(conversation.conversation_id, owner, current) from None

    async def _take(
        self, conversation: Conversation, run_id: str, until: int, now_ms: int
    ) -> Conversation:
        values: dict[str, Any] = {
            ":run": run_id,
            ":until": until,
            ":now": now_ms,
            ":owner": conversation.owner,
            ":false": False,
            ":free": "",
        }
        context = ""
        if conversation.ui_context is not None:
            context = ", ui_context = :ctx"
            values[":ctx"] = json.dumps(conversation.ui_context, ensure_ascii=False)
        response = await self._run(
            self._table.update_item,
            Key=meta_key(conversation.conversation_id),
            # `lapsed_run`: the run that held the lock before, if its lease lapsed unreleased
            UpdateExpression="SET lapsed_run = if_not_exists(locked_by, :free), "
            f"locked_by = :run, locked_until = :until, locked_at = :now{context} "
            "REMOVE cancel_run",
            ReturnValues="ALL_NEW",
            ConditionExpression=LOCK_CONDITION,
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues=values,
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
        taken = conversation_from(response["Attributes"])
        if not response["Attributes"].get("lapsed_run"):
            return taken
        # That run never ended: its events may go past the record's last_seq
        stored = await self._last_stored_seq(conversation.conversation_id)
        return replace(taken, last_seq=max(taken.last_seq, stored))

    async def _last_stored_seq(self, conversation_id: str) -> int:
        """The sequence number of the conversation's last stored event (0 without any)."""
        response = await self._run(
            self._table.query,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :events)",
            ExpressionAttributeValues={":pk": conversation_pk(conversation_id), ":events": "EVT#"},
            ProjectionExpression="last_seq",
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        return max((int(item["last_seq"]) for item in response.get("Items", [])), default=0)

    async def _update_if(self, conversation_id: str, **update: Any) -> bool:
        """A conditional update of the META item; False when its condition was refused."""
        try:
            await self._run(self._table.update_item, Key=meta_key(conversation_id), **update)
        except ClientError as error:
            if not condition_failed(error):
                raise
            return False
        return True

    async def renew(self, conversation_id: str, run_id: str, lease_s: float) -> None:
        """Extends this run's lease (a no-op if the lock was lost)."""
        await self._update_if(
            conversation_id,
            UpdateExpression="SET locked_until = :until",
            ConditionExpression="locked_by = :run",
            ExpressionAttributeValues={
                ":until": int((time.time() + lease_s) * 1000),
                ":run": run_id,
            },
        )

    async def finish_turn(
        self, conversation_id: str, run_id: str, last_seq: int, updated_at: str
    ) -> None:
        """Records the turn's end and releases this run's lock."""
        await self._update_if(
            conversation_id,
            UpdateExpression="SET last_seq = :last, updated_at = :at, GSI1SK = :at "
            "REMOVE locked_by, locked_until, locked_at, cancel_run",
            ConditionExpression="locked_by = :run",
            ExpressionAttributeValues={":last": last_seq, ":at": updated_at, ":run": run_id},
        )

    async def request_cancel(self, conversation_id: str, owner: str) -> bool:
        """Asks the run holding the conversation to stop; False when no run holds it."""
        return await self._update_if(
            conversation_id,
            UpdateExpression="SET cancel_run = locked_by",
            ConditionExpression="#owner = :owner AND attribute_exists(locked_by) "
            "AND locked_until > :now",
            ExpressionAttributeNames={"#owner": "owner"},
            ExpressionAttributeValues={":owner": owner, ":now": _now_ms()},
        )

    async def cancel_requested(self, conversation_id: str, run_id: str) -> bool:
        """Whether a cancel of this run was asked for (polled while a run has nothing to store)."""
        response = await self._run(
            self._table.get_item,
            Key=meta_key(conversation_id),
            ProjectionExpression="cancel_run",
            ConsistentRead=True,
        )
        return bool(response.get("Item", {}).get("cancel_run") == run_id)

    async def archive(self, conversation_id: str, owner: str) -> Conversation:
        """Soft delete: marks the conversation archived (nothing is removed) and asks a running
        answer to stop."""
        try:
            response = await self._run(
                self._table.update_item,
                Key=meta_key(conversation_id),
                UpdateExpression="SET is_archived = :true",
                ConditionExpression="attribute_exists(PK) AND #owner = :owner",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":true": True, ":owner": owner},
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if condition_failed(error):
                raise ConversationNotFound(conversation_id) from None
            raise
        await self.request_cancel(conversation_id, owner)
        return conversation_from(response["Attributes"])

    async def set_pending_confirmation(self, conversation_id: str, confirmation_id: str) -> None:
        """Remembers the card this conversation has open: undecided, or decided and not yet
        closed in the checkpoint (the next access settles it)."""
        await self._run(
            self._table.update_item,
            Key=meta_key(conversation_id),
            UpdateExpression="SET pending_confirmation_id = :id",
            ExpressionAttributeValues={":id": confirmation_id},
        )

    async def clear_pending_confirmation(self, conversation_id: str, confirmation_id: str) -> None:
        """Forgets the open card, if it is still this one (a newer card stays)."""
        await self._update_if(
            conversation_id,
            UpdateExpression="REMOVE pending_confirmation_id",
            ConditionExpression="pending_confirmation_id = :id",
            ExpressionAttributeValues={":id": confirmation_id},
        )

    async def append_events(
        self, conversation_id: str, run_id: str, events: Sequence[StoredEvent]
    ) -> None:
        """Stores events, one PutItem per item their bytes need (usually one). The META item is
        not written: its `last_seq` moves when the turn ends (`finish_turn`), and the lock
        finds the events of a run that never got there (`_take`)."""
        for chunk in event_chunks(events):
            await self._run(
                self._table.put_item,
                Item={
                    "PK": conversation_pk(conversation_id),
                    "SK": f"EVT#{chunk[0][0]:012d}",
                    "last_seq": chunk[-1][0],
                    "events": to_json([[seq, wire] for seq, wire in chunk]),
                },
            )

    async def events_after(self, conversation_id: str, seq: int) -> list[StoredEvent]:
        """Stored events with a sequence number above `seq`, in order.

        Chunks are keyed by their first sequence number and may hold any number of events, so
        the chunk holding `seq + 1` is the last one starting at or before it: found with one
        backwards query, then read forwards page by page (a query page stops at 1 MB).
        """
        pk = conversation_pk(conversation_id)
        holding = await self._run(
            self._table.query,
            KeyConditionExpression="PK = :pk AND SK BETWEEN :first AND :next",
            ExpressionAttributeValues={
                ":pk": pk,
                ":first": "EVT#",
                ":next": f"EVT#{seq + 1:012d}",
            },
            ProjectionExpression="SK",
            ScanIndexForward=False,
            Limit=1,
            ConsistentRead=True,
        )
        start = next((item["SK"] for item in holding.get("Items", [])), "EVT#")
        found: list[StoredEvent] = []
        page: dict[str, Any] = {}
        while True:
            response = await self._run(
                self._table.query,
                KeyConditionExpression="PK = :pk AND SK BETWEEN :from AND :to",
                ExpressionAttributeValues={":pk": pk, ":from": start, ":to": "EVT#~"},
                ConsistentRead=True,
                **page,
            )
            for item in response.get("Items", []):
                found += [(s, wire) for s, wire in stored_events(item["events"]) if s > seq]
            if "LastEvaluatedKey" not in response:
                return sorted(found, key=lambda pair: pair[0])
            page = {"ExclusiveStartKey": response["LastEvaluatedKey"]}

    async def add_messages(self, conversation_id: str, messages: Sequence[StoredMessage]) -> None:
        """Writes history messages (each keyed by its sequence number); StoredItemTooLarge, with
        nothing written, when one would not fit an item."""
        items = [
            {
                "PK": conversation_pk(conversation_id),
                "SK": f"MSG#{message.seq:012d}#{index:03d}",
                "message": bounded_json(asdict(message)),
            }
            for index, message in enumerate(messages)
        ]

        def write() -> None:
            with self._table.batch_writer() as batch:
                for item in items:
                    batch.put_item(Item=item)

        await anyio.to_thread.run_sync(write)
