"""Conversations in DynamoDB: records, messages, stream events, and the per-conversation lock.

One table (template.yaml `ConversationsTable`), PK `CONV#<id>`:
- `META`: the record, the lock (`locked_by`, `locked_until`: a lease taken with a conditional
  write, so a second tab gets 409, never an interleaved turn) and a cancel request;
- `MSG#<seq>#<n>`: history messages, written at each turn;
- `EVT#<first seq>`: stream events in chunks, for replay after a reconnect.
- `IDEM#<key>`: a message appended through the REST API under a client's idempotency key.
Owners find their conversations through the `ByOwner` index (newest first by `updated_at`);
title search compares `title_search`, the case-folded title.

boto3 is synchronous; every call runs in a worker thread so the event loop keeps streaming.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any, Final, Generic, Protocol, TypeVar

import anyio
import boto3
from botocore.exceptions import ClientError

from sstools_agent.domain.conversations import (
    Conversation,
    StoredMessage,
    title_search_key,
)
from sstools_agent.domain.tool_outputs import MAX_ITEM_BYTES

T = TypeVar("T")
EVENTS_PER_CHUNK: Final = 50
"""Events per stored chunk at most (fewer when their bytes would pass `MAX_ITEM_BYTES`)."""
QUERY_BATCH: Final = 100
"""Items a listing query evaluates per call (filters apply after DynamoDB's limit)."""


class ConversationBusy(Exception):
    """Another run holds the conversation (409)."""


class ConversationNotFound(Exception):
    """No such conversation for this user (404: existence does not leak)."""


class ConversationArchived(Exception):
    """The conversation was deleted (archived); it takes no new turns."""


class IdempotencyKeyReused(Exception):
    """An idempotency key already used for a different message (409)."""


class StoredItemTooLarge(ValueError):
    """A message or a single event whose JSON alone passes the item limit (large tool outputs
    are kept by reference before they get here, so this names a defect, not a big answer)."""


@dataclass(frozen=True, slots=True)
class Page(Generic[T]):
    """One page of a listing and the storage key after its last item (None on the last page)."""

    items: list[T]
    next_position: dict[str, str] | None


class ConversationStore(Protocol):
    """What the chat needs from conversation storage."""

    async def get(self, conversation_id: str) -> Conversation | None: ...

    async def get_owned(self, conversation_id: str, owner: str) -> Conversation: ...

    async def start_turn(
        self, conversation: Conversation, run_id: str, lease_s: float, *, new: bool
    ) -> Conversation: ...

    async def renew(self, conversation_id: str, run_id: str, lease_s: float) -> None: ...

    async def append_events(
        self, conversation_id: str, run_id: str, events: Sequence[tuple[int, dict[str, Any]]]
    ) -> bool: ...

    async def add_messages(
        self, conversation_id: str, messages: Sequence[StoredMessage]
    ) -> None: ...

    async def finish_turn(
        self, conversation_id: str, run_id: str, last_seq: int, updated_at: str
    ) -> None: ...

    async def events_after(
        self, conversation_id: str, seq: int
    ) -> list[tuple[int, dict[str, Any]]]: ...

    async def messages(self, conversation_id: str) -> list[StoredMessage]: ...

    async def request_cancel(self, conversation_id: str, owner: str) -> bool: ...

    async def cancel_requested(self, conversation_id: str, run_id: str) -> bool: ...

    async def set_pending_confirmation(
        self, conversation_id: str, confirmation_id: str
    ) -> None: ...

    async def clear_pending_confirmation(
        self, conversation_id: str, confirmation_id: str
    ) -> None: ...


def _pk(conversation_id: str) -> str:
    return f"CONV#{conversation_id}"


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _size(text: str) -> int:
    """Bytes of `text` in UTF-8: what DynamoDB counts against its item limit."""
    return len(text.encode("utf-8", errors="surrogatepass"))


def _bounded_json(value: Any) -> str:
    """JSON for one item's attribute; StoredItemTooLarge above the item limit (in bytes)."""
    text = _json(value)
    if _size(text) > MAX_ITEM_BYTES:
        raise StoredItemTooLarge(f"{_size(text)} bytes; at most {MAX_ITEM_BYTES} fit an item")
    return text


def _event_chunks(
    events: Sequence[tuple[int, dict[str, Any]]],
) -> list[list[tuple[int, dict[str, Any]]]]:
    """Consecutive events in chunks of at most EVENTS_PER_CHUNK and MAX_ITEM_BYTES each."""
    chunks: list[list[tuple[int, dict[str, Any]]]] = []
    current: list[tuple[int, dict[str, Any]]] = []
    used = 2  # the list's brackets
    for seq, wire in events:
        size = _size(_json([seq, wire])) + 2  # and a separator
        if size + 2 > MAX_ITEM_BYTES:
            raise StoredItemTooLarge(f"event {seq} alone is {size} bytes")
        if current and (len(current) >= EVENTS_PER_CHUNK or used + size > MAX_ITEM_BYTES):
            chunks.append(current)
            current, used = [], 2
        current.append((seq, wire))
        used += size
    if current:
        chunks.append(current)
    return chunks


def _stored_events(text: str) -> list[tuple[int, dict[str, Any]]]:
    """A chunk's events; a chunk an earlier version stored as a summary yields what it kept."""
    data = json.loads(text)
    if isinstance(data, dict):  # {"stored_summary": true, "value": [...] or {"items": [...]}}
        data = data.get("value")
        if isinstance(data, dict):
            data = data.get("items")
    pairs = data if isinstance(data, list) else []
    return [
        (int(pair[0]), pair[1])
        for pair in pairs
        if isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], dict)
    ]


def _conversation(item: dict[str, Any]) -> Conversation:
    return Conversation(
        conversation_id=item["conversation_id"],
        owner=item["owner"],
        title=item["title"],
        created_at=item["created_at"],
        updated_at=item["updated_at"],
        is_archived=bool(item.get("is_archived", False)),
        ui_context=json.loads(item["ui_context"]) if item.get("ui_context") else None,
        last_seq=int(item.get("last_seq", 0)),
        locked_by=item.get("locked_by"),
        locked_until=float(item["locked_until"]) / 1000 if "locked_until" in item else None,
        locked_at=float(item["locked_at"]) / 1000 if "locked_at" in item else None,
        pending_confirmation_id=item.get("pending_confirmation_id"),
    )


def _record_item(conversation: Conversation) -> dict[str, Any]:
    """A new conversation's META item (unlocked)."""
    item: dict[str, Any] = {
        "PK": _pk(conversation.conversation_id),
        "SK": "META",
        "conversation_id": conversation.conversation_id,
        "owner": conversation.owner,
        "title": conversation.title,
        "title_search": title_search_key(conversation.title),
        "created_at": conversation.created_at,
        "updated_at": conversation.updated_at,
        "is_archived": False,
        "last_seq": 0,
        "GSI1PK": _owner_key(conversation.owner),
        "GSI1SK": conversation.updated_at,
    }
    if conversation.ui_context is not None:
        item["ui_context"] = json.dumps(conversation.ui_context, ensure_ascii=False)
    return item


def _owner_key(owner: str) -> str:
    return f"OWNER#{owner}"


def _stored_message(item: dict[str, Any]) -> StoredMessage:
    key = str(item["SK"])  # MSG#<seq>#<n> or IDEM#<key>
    seq = key.split("#")[1]
    return StoredMessage.from_record(
        json.loads(item["message"]), key=key, seq=int(seq) if seq.isdigit() else 0
    )


def _is_condition_failure(error: ClientError) -> bool:
    code: str = error.response.get("Error", {}).get("Code", "")
    return code == "ConditionalCheckFailedException"


class DynamoDBConversationStore:
    """`ConversationStore` on one DynamoDB table."""

    def __init__(self, table_name: str, *, region: str, endpoint_url: str | None = None) -> None:
        resource = boto3.session.Session(region_name=region).resource(
            "dynamodb", endpoint_url=endpoint_url
        )
        self._table = resource.Table(table_name)

    async def _run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs))

    async def get(self, conversation_id: str) -> Conversation | None:
        response = await self._run(
            self._table.get_item,
            Key={"PK": _pk(conversation_id), "SK": "META"},
            ConsistentRead=True,
        )
        item = response.get("Item")
        return _conversation(item) if item else None

    async def get_owned(self, conversation_id: str, owner: str) -> Conversation:
        """The owner's conversation; ConversationNotFound when missing or another user's (the
        two answer alike, so ids do not leak)."""
        conversation = await self.get(conversation_id)
        if conversation is None or conversation.owner != owner:
            raise ConversationNotFound(conversation_id)
        return conversation

    async def start_turn(
        self, conversation: Conversation, run_id: str, lease_s: float, *, new: bool
    ) -> Conversation:
        """Takes the conversation's lock for this run (creating the record when new)."""
        now_ms = int(time.time() * 1000)
        until = now_ms + int(lease_s * 1000)
        try:
            if new:
                item = _record_item(conversation) | {
                    "locked_by": run_id,
                    "locked_until": until,
                    "locked_at": now_ms,
                }
                await self._run(
                    self._table.put_item, Item=item, ConditionExpression="attribute_not_exists(PK)"
                )
                return _conversation(item)
            else:
                names = {"#owner": "owner"}
                values: dict[str, Any] = {
                    ":run": run_id,
                    ":until": until,
                    ":now": now_ms,
                    ":owner": conversation.owner,
                    ":false": False,
                }
                update = (
                    "SET locked_by = :run, locked_until = :until, locked_at = :now "
                    "REMOVE cancel_run"
                )
                if conversation.ui_context is not None:
                    update = update.replace(" REMOVE", ", ui_context = :ctx REMOVE")
                    values[":ctx"] = json.dumps(conversation.ui_context, ensure_ascii=False)
                response = await self._run(
                    self._table.update_item,
                    Key={"PK": _pk(conversation.conversation_id), "SK": "META"},
                    UpdateExpression=update,
                    ReturnValues="ALL_NEW",
                    ConditionExpression="attribute_exists(PK) AND #owner = :owner AND "
                    "is_archived = :false AND (attribute_not_exists(locked_by) OR "
                    "locked_until < :now)",
                    ExpressionAttributeNames=names,
                    ExpressionAttributeValues=values,
                )
                return _conversation(response["Attributes"])
        except ClientError as error:
            if not _is_condition_failure(error):
                raise
            await self._explain_refusal(conversation.conversation_id, conversation.owner)
            raise  # _explain_refusal always raises

    async def _explain_refusal(self, conversation_id: str, owner: str) -> None:
        current = await self.get_owned(conversation_id, owner)
        if current.is_archived:
            raise ConversationArchived(conversation_id)
        raise ConversationBusy(conversation_id)

    async def renew(self, conversation_id: str, run_id: str, lease_s: float) -> None:
        """Extends this run's lease (a no-op if the lock was lost)."""
        until = int((time.time() + lease_s) * 1000)
        try:
            await self._run(
                self._table.update_item,
                Key={"PK": _pk(conversation_id), "SK": "META"},
                UpdateExpression="SET locked_until = :until",
                ConditionExpression="locked_by = :run",
                ExpressionAttributeValues={":until": until, ":run": run_id},
            )
        except ClientError as error:
            if not _is_condition_failure(error):
                raise

    async def append_events(
        self, conversation_id: str, run_id: str, events: Sequence[tuple[int, dict[str, Any]]]
    ) -> bool:
        """Stores events (in as many items as their bytes need); returns True when a cancel of
        this run was requested."""
        if not events:
            return False
        last = events[-1][0]
        for chunk in _event_chunks(events):
            await self._run(
                self._table.put_item,
                Item={
                    "PK": _pk(conversation_id),
                    "SK": f"EVT#{chunk[0][0]:012d}",
                    "last_seq": chunk[-1][0],
                    "events": _json([[seq, wire] for seq, wire in chunk]),
                },
            )
        response = await self._run(
            self._table.update_item,
            Key={"PK": _pk(conversation_id), "SK": "META"},
            UpdateExpression="SET last_seq = :last",
            ExpressionAttributeValues={":last": last},
            ReturnValues="ALL_NEW",
        )
        return bool(response.get("Attributes", {}).get("cancel_run") == run_id)

    async def add_messages(self, conversation_id: str, messages: Sequence[StoredMessage]) -> None:
        """Writes history messages (each keyed by its sequence number); StoredItemTooLarge, with
        nothing written, when one would not fit an item."""
        items = [
            {
                "PK": _pk(conversation_id),
                "SK": f"MSG#{message.seq:012d}#{index:03d}",
                "message": _bounded_json(asdict(message)),
            }
            for index, message in enumerate(messages)
        ]

        def write() -> None:
            with self._table.batch_writer() as batch:
                for item in items:
                    batch.put_item(Item=item)

        await anyio.to_thread.run_sync(write)

    async def finish_turn(
        self, conversation_id: str, run_id: str, last_seq: int, updated_at: str
    ) -> None:
        """Records the turn's end and releases this run's lock."""
        try:
            await self._run(
                self._table.update_item,
                Key={"PK": _pk(conversation_id), "SK": "META"},
                UpdateExpression="SET last_seq = :last, updated_at = :at, GSI1SK = :at "
                "REMOVE locked_by, locked_until, locked_at, cancel_run",
                ConditionExpression="locked_by = :run",
                ExpressionAttributeValues={":last": last_seq, ":at": updated_at, ":run": run_id},
            )
        except ClientError as error:
            if not _is_condition_failure(error):
                raise

    async def events_after(
        self, conversation_id: str, seq: int
    ) -> list[tuple[int, dict[str, Any]]]:
        """Stored events with a sequence number above `seq`, in order.

        Chunks are keyed by their first sequence number and may hold any number of events, so
        the chunk holding `seq + 1` is the last one starting at or before it: found with one
        backwards query, then read forwards page by page (a query page stops at 1 MB).
        """
        pk = _pk(conversation_id)
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
        found: list[tuple[int, dict[str, Any]]] = []
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
                found += [(s, wire) for s, wire in _stored_events(item["events"]) if s > seq]
            if "LastEvaluatedKey" not in response:
                return sorted(found, key=lambda pair: pair[0])
            page = {"ExclusiveStartKey": response["LastEvaluatedKey"]}

    async def messages(self, conversation_id: str) -> list[StoredMessage]:
        """The conversation's history, in order."""
        response = await self._run(
            self._table.query,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :msg)",
            ExpressionAttributeValues={":pk": _pk(conversation_id), ":msg": "MSG#"},
            ConsistentRead=True,
        )
        return [_stored_message(item) for item in response.get("Items", [])]

    async def request_cancel(self, conversation_id: str, owner: str) -> bool:
        """Asks the run holding the conversation to stop; False when no run holds it."""
        try:
            await self._run(
                self._table.update_item,
                Key={"PK": _pk(conversation_id), "SK": "META"},
                UpdateExpression="SET cancel_run = locked_by",
                ConditionExpression="#owner = :owner AND attribute_exists(locked_by) "
                "AND locked_until > :now",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":owner": owner, ":now": int(time.time() * 1000)},
            )
        except ClientError as error:
            if _is_condition_failure(error):
                return False
            raise
        return True

    async def cancel_requested(self, conversation_id: str, run_id: str) -> bool:
        """Whether a cancel of this run was asked for (polled while a run has nothing to store)."""
        response = await self._run(
            self._table.get_item,
            Key={"PK": _pk(conversation_id), "SK": "META"},
            ProjectionExpression="cancel_run",
            ConsistentRead=True,
        )
        return bool(response.get("Item", {}).get("cancel_run") == run_id)

    async def set_pending_confirmation(self, conversation_id: str, confirmation_id: str) -> None:
        """Remembers the card this conversation has open: undecided, or decided and not yet
        closed in the checkpoint (the next access settles it)."""
        await self._run(
            self._table.update_item,
            Key={"PK": _pk(conversation_id), "SK": "META"},
            UpdateExpression="SET pending_confirmation_id = :id",
            ExpressionAttributeValues={":id": confirmation_id},
        )

    async def clear_pending_confirmation(self, conversation_id: str, confirmation_id: str) -> None:
        """Forgets the open card, if it is still this one (a newer card stays)."""
        try:
            await self._run(
                self._table.update_item,
                Key={"PK": _pk(conversation_id), "SK": "META"},
                UpdateExpression="REMOVE pending_confirmation_id",
                ConditionExpression="pending_confirmation_id = :id",
                ExpressionAttributeValues={":id": confirmation_id},
            )
        except ClientError as error:
            if not _is_condition_failure(error):
                raise

    async def create(self, conversation: Conversation) -> Conversation:
        """Stores a new, empty conversation (the REST API's create)."""
        item = _record_item(conversation)
        await self._run(
            self._table.put_item, Item=item, ConditionExpression="attribute_not_exists(PK)"
        )
        return _conversation(item)

    async def list_owned(
        self,
        owner: str,
        *,
        limit: int,
        after: dict[str, str] | None,
        search: str | None,
        include_archived: bool,
    ) -> Page[Conversation]:
        """The owner's conversations, most recently updated first, `limit` at a time."""
        filters: list[str] = []
        values: dict[str, Any] = {":owner": _owner_key(owner)}
        if not include_archived:
            filters.append("is_archived = :false")
            values[":false"] = False
        if search:
            filters.append("contains(title_search, :q)")
            values[":q"] = title_search_key(search)
        query: dict[str, Any] = {
            "IndexName": "ByOwner",
            "KeyConditionExpression": "GSI1PK = :owner",
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": max(limit + 1, QUERY_BATCH),
        }
        if filters:
            query["FilterExpression"] = " AND ".join(filters)
        found: list[dict[str, Any]] = []
        start = after
        while len(found) <= limit:
            if start is not None:
                query["ExclusiveStartKey"] = start
            response = await self._run(self._table.query, **query)
            found += response.get("Items", [])
            start = response.get("LastEvaluatedKey")
            if start is None:
                break
        items, more = found[:limit], len(found) > limit
        position = None
        if more:
            last = items[-1]
            position = {key: str(last[key]) for key in ("PK", "SK", "GSI1PK", "GSI1SK")}
        return Page([_conversation(item) for item in items], position)

    async def message_page(
        self, conversation_id: str, *, limit: int, after: dict[str, str] | None
    ) -> Page[StoredMessage]:
        """A page of the conversation's history, oldest first."""
        query: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :msg)",
            "ExpressionAttributeValues": {":pk": _pk(conversation_id), ":msg": "MSG#"},
            "ConsistentRead": True,
            "Limit": limit + 1,
        }
        if after is not None:
            if after.get("PK") != _pk(conversation_id) or not after.get("SK", "").startswith(
                "MSG#"
            ):
                raise ValueError("position outside this conversation's history")
            query["ExclusiveStartKey"] = {"PK": after["PK"], "SK": after["SK"]}
        response = await self._run(self._table.query, **query)
        items = response.get("Items", [])
        page, more = items[:limit], len(items) > limit
        position = {"PK": page[-1]["PK"], "SK": page[-1]["SK"]} if more else None
        return Page([_stored_message(item) for item in page], position)

    async def append_message(
        self,
        conversation_id: str,
        owner: str,
        message: StoredMessage,
        *,
        idempotency_key: str,
        fingerprint: str,
    ) -> tuple[StoredMessage, bool]:
        """Appends `message` once per idempotency key, numbered after everything before it.

        Returns the message and whether it was appended earlier (a retried request). Refuses,
        writing nothing, while a run holds the conversation or after it was archived.
        """
        replay = await self._idempotent_replay(conversation_id, idempotency_key, fingerprint)
        if replay is not None:
            return replay, True
        now_ms = int(time.time() * 1000)
        try:
            response = await self._run(
                self._table.update_item,
                Key={"PK": _pk(conversation_id), "SK": "META"},
                UpdateExpression="SET last_seq = last_seq + :one, updated_at = :at, GSI1SK = :at",
                ConditionExpression="attribute_exists(PK) AND #owner = :owner AND "
                "is_archived = :false AND (attribute_not_exists(locked_by) OR "
                "locked_until < :now)",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={
                    ":one": 1,
                    ":at": message.created_at,
                    ":owner": owner,
                    ":false": False,
                    ":now": now_ms,
                },
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if not _is_condition_failure(error):
                raise
            await self._explain_refusal(conversation_id, owner)
            raise
        message = replace(message, seq=int(response["Attributes"]["last_seq"]))
        stored = _bounded_json(asdict(message))
        client = self._table.meta.client  # a resource's client: plain values, not {"S": ...}
        try:
            await self._run(
                client.transact_write_items,
                TransactItems=[
                    {
                        "Put": {
                            "TableName": self._table.name,
                            "Item": {
                                "PK": _pk(conversation_id),
                                "SK": f"IDEM#{idempotency_key}",
                                "fingerprint": fingerprint,
                                "message": stored,
                            },
                            "ConditionExpression": "attribute_not_exists(PK)",
                        }
                    },
                    {
                        "Put": {
                            "TableName": self._table.name,
                            "Item": {
                                "PK": _pk(conversation_id),
                                "SK": f"MSG#{message.seq:012d}#000",
                                "message": stored,
                            },
                        }
                    },
                ],
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            # A concurrent retry with the same key won: answer as that request did.
            replay = await self._idempotent_replay(conversation_id, idempotency_key, fingerprint)
            if replay is None:
                raise
            return replay, True
        return message, False

    async def _idempotent_replay(
        self, conversation_id: str, key: str, fingerprint: str
    ) -> StoredMessage | None:
        response = await self._run(
            self._table.get_item,
            Key={"PK": _pk(conversation_id), "SK": f"IDEM#{key}"},
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None:
            return None
        if item["fingerprint"] != fingerprint:
            raise IdempotencyKeyReused(key)
        return _stored_message(item)

    async def archive(self, conversation_id: str, owner: str) -> Conversation:
        """Soft delete: marks the conversation archived (nothing is removed) and asks a running
        answer to stop."""
        try:
            response = await self._run(
                self._table.update_item,
                Key={"PK": _pk(conversation_id), "SK": "META"},
                UpdateExpression="SET is_archived = :true",
                ConditionExpression="attribute_exists(PK) AND #owner = :owner",
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={":true": True, ":owner": owner},
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if _is_condition_failure(error):
                raise ConversationNotFound(conversation_id) from None
            raise
        await self.request_cancel(conversation_id, owner)
        return _conversation(response["Attributes"])
