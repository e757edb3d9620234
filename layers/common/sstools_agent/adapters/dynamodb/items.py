"""Keys of the conversations table and the mappings between its items and the domain."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Sequence
from typing import Any, Final

from sstools_agent.domain.conversations import (
    Conversation,
    InvalidPageToken,
    StoredItemTooLarge,
    StoredMessage,
    title_search_key,
)
from sstools_agent.domain.ports import StoredEvent
from sstools_agent.domain.tool_outputs import MAX_ITEM_BYTES

META: Final = "META"
EVENTS_PER_CHUNK: Final = 500
"""Events per stored chunk at most (fewer when their bytes would pass `MAX_ITEM_BYTES`): as many
as the event writer flushes at once (`chat.event_log.FLUSH_EVERY_EVENTS`), so a flush is one PutItem
unless its bytes need more."""
LOCK_CONDITION: Final = (
    "attribute_exists(PK) AND #owner = :owner AND is_archived = :false AND "
    "(attribute_not_exists(locked_by) OR locked_until < :now)"
)
"""A write that takes the conversation: it exists, is the owner's, is live and is not held."""


def conversation_pk(conversation_id: str) -> str:
    return f"CONV#{conversation_id}"


def meta_key(conversation_id: str) -> dict[str, str]:
    return {"PK": conversation_pk(conversation_id), "SK": META}


def owner_key(owner: str) -> str:
    return f"OWNER#{owner}"


def to_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def utf8_size(text: str) -> int:
    """Bytes of `text` in UTF-8: what DynamoDB counts against its item limit."""
    return len(text.encode("utf-8", errors="surrogatepass"))


def bounded_json(value: Any) -> str:
    """JSON for one item's attribute; StoredItemTooLarge above the item limit (in bytes)."""
    text = to_json(value)
    if utf8_size(text) > MAX_ITEM_BYTES:
        raise StoredItemTooLarge(f"{utf8_size(text)} bytes; at most {MAX_ITEM_BYTES} fit an item")
    return text


def event_chunks(events: Sequence[StoredEvent]) -> list[list[StoredEvent]]:
    """Consecutive events in chunks of at most EVENTS_PER_CHUNK and MAX_ITEM_BYTES each."""
    chunks: list[list[StoredEvent]] = []
    current: list[StoredEvent] = []
    used = 2  # the list's brackets
    for seq, wire in events:
        size = utf8_size(to_json([seq, wire])) + 2  # and a separator
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


def stored_events(text: str) -> list[StoredEvent]:
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


def conversation_from(item: dict[str, Any]) -> Conversation:
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


def record_item(conversation: Conversation) -> dict[str, Any]:
    """A new conversation's META item (unlocked)."""
    item: dict[str, Any] = {
        **meta_key(conversation.conversation_id),
        "conversation_id": conversation.conversation_id,
        "owner": conversation.owner,
        "title": conversation.title,
        "title_search": title_search_key(conversation.title),
        "created_at": conversation.created_at,
        "updated_at": conversation.updated_at,
        "is_archived": False,
        "last_seq": 0,
        "GSI1PK": owner_key(conversation.owner),
        "GSI1SK": conversation.updated_at,
    }
    if conversation.ui_context is not None:
        item["ui_context"] = json.dumps(conversation.ui_context, ensure_ascii=False)
    return item


def stored_message_from(item: dict[str, Any]) -> StoredMessage:
    key = str(item["SK"])  # MSG#<seq>#<n> or IDEM#<key>
    seq = key.split("#")[1]
    return StoredMessage.from_record(
        json.loads(item["message"]), key=key, seq=int(seq) if seq.isdigit() else 0
    )


def page_token(item: dict[str, Any], keys: Sequence[str]) -> str:
    """The token of the position after `item`: its key attributes (the query's start key)."""
    position = {key: str(item[key]) for key in keys}
    text = json.dumps(position, separators=(",", ":"), sort_keys=True)
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def position_of(token: str, keys: Sequence[str]) -> dict[str, str]:
    """The start key in a token of `page_token`; InvalidPageToken for anything else."""
    try:
        text = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
        position = json.loads(text)
    except (binascii.Error, UnicodeDecodeError, ValueError):
        raise InvalidPageToken("not a page token of this store") from None
    if (
        not isinstance(position, dict)
        or sorted(position) != sorted(keys)
        or not all(isinstance(value, str) for value in position.values())
    ):
        raise InvalidPageToken("not a page token of this listing")
    return position
