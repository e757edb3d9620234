"""History and listings, page by page: each page ends with the store's own opaque token."""

from __future__ import annotations

from typing import Any, Final

from sstools_agent.adapters.dynamodb.items import (
    conversation_from,
    conversation_pk,
    owner_key,
    page_token,
    position_of,
    stored_message_from,
)
from sstools_agent.adapters.dynamodb.table import DynamoTable
from sstools_agent.domain.conversations import (
    Conversation,
    InvalidPageToken,
    Page,
    StoredMessage,
    search_words,
)

QUERY_BATCH: Final = 100
"""Items a listing query evaluates per call (filters apply after DynamoDB's limit)."""
LISTING_KEYS: Final = ("PK", "SK", "GSI1PK", "GSI1SK")
HISTORY_KEYS: Final = ("PK", "SK")


class ConversationQueries(DynamoTable):
    """The history of one conversation and the conversations of one owner."""

    async def messages(self, conversation_id: str) -> list[StoredMessage]:
        """The conversation's history, in order."""
        response = await self._run(
            self._table.query,
            KeyConditionExpression="PK = :pk AND begins_with(SK, :msg)",
            ExpressionAttributeValues={":pk": conversation_pk(conversation_id), ":msg": "MSG#"},
            ConsistentRead=True,
        )
        return [stored_message_from(item) for item in response.get("Items", [])]

    async def list_owned(
        self,
        owner: str,
        *,
        limit: int,
        after: str | None,
        search: str | None,
        include_archived: bool,
    ) -> Page[Conversation]:
        """The owner's conversations, most recently updated first, `limit` at a time."""
        filters: list[str] = []
        values: dict[str, Any] = {":owner": owner_key(owner)}
        if not include_archived:
            filters.append("is_archived = :false")
            values[":false"] = False
        for n, word in enumerate(search_words(search or "")):
            filters.append(f"contains(title_search, :q{n})")
            values[f":q{n}"] = word
        query: dict[str, Any] = {
            "IndexName": "ByOwner",
            "KeyConditionExpression": "GSI1PK = :owner",
            "ExpressionAttributeValues": values,
            "ScanIndexForward": False,
            "Limit": max(limit + 1, QUERY_BATCH),
        }
        if filters:
            query["FilterExpression"] = " AND ".join(filters)
        start: dict[str, Any] | None = None
        if after is not None:
            start = position_of(after, LISTING_KEYS)
            if start["GSI1PK"] != owner_key(owner):
                raise InvalidPageToken("a page token of another owner's listing")
        found: list[dict[str, Any]] = []
        while len(found) <= limit:
            if start is not None:
                query["ExclusiveStartKey"] = start
            response = await self._run(self._table.query, **query)
            found += response.get("Items", [])
            start = response.get("LastEvaluatedKey")
            if start is None:
                break
        items, more = found[:limit], len(found) > limit
        token = page_token(items[-1], LISTING_KEYS) if more else None
        return Page([conversation_from(item) for item in items], token)

    async def message_page(
        self, conversation_id: str, *, limit: int, after: str | None
    ) -> Page[StoredMessage]:
        """A page of the conversation's history, oldest first."""
        query: dict[str, Any] = {
            "KeyConditionExpression": "PK = :pk AND begins_with(SK, :msg)",
            "ExpressionAttributeValues": {":pk": conversation_pk(conversation_id), ":msg": "MSG#"},
            "ConsistentRead": True,
            "Limit": limit + 1,
        }
        if after is not None:
            start = position_of(after, HISTORY_KEYS)
            if start["PK"] != conversation_pk(conversation_id) or not start["SK"].startswith(
                "MSG#"
            ):
                raise InvalidPageToken("position outside this conversation's history")
            query["ExclusiveStartKey"] = start
        response = await self._run(self._table.query, **query)
        items = response.get("Items", [])
        page, more = items[:limit], len(items) > limit
        token = page_token(page[-1], HISTORY_KEYS) if more else None
        return Page([stored_message_from(item) for item in page], token)
