"""Conversation records: create, read, and the REST API's idempotent append."""

from __future__ import annotations

import time
from dataclasses import asdict, replace
from typing import Any

from botocore.exceptions import ClientError

from sstools_agent.adapters.dynamodb.items import (
    LOCK_CONDITION,
    bounded_json,
    conversation_from,
    conversation_pk,
    meta_key,
    record_item,
    stored_message_from,
)
from sstools_agent.adapters.dynamodb.table import DynamoTable, condition_failed, old_item
from sstools_agent.domain.conversations import (
    Conversation,
    ConversationNotFound,
    IdempotencyKeyReused,
    StoredMessage,
    turn_refusal,
)


class ConversationRecords(DynamoTable):
    """The META item of each conversation, and appended messages."""

    async def get(self, conversation_id: str) -> Conversation | None:
        response = await self._run(
            self._table.get_item, Key=meta_key(conversation_id), ConsistentRead=True
        )
        item = response.get("Item")
        return conversation_from(item) if item else None

    async def get_owned(self, conversation_id: str, owner: str) -> Conversation:
        """The owner's conversation; ConversationNotFound when missing or another user's (the
        two answer alike, so ids do not leak)."""
        conversation = await self.get(conversation_id)
        if conversation is None or conversation.owner != owner:
            raise ConversationNotFound(conversation_id)
        return conversation

    async def create(self, conversation: Conversation) -> Conversation:
        """Stores a new, empty conversation (the REST API's create)."""
        item = record_item(conversation)
        await self._run(
            self._table.put_item, Item=item, ConditionExpression="attribute_not_exists(PK)"
        )
        return conversation_from(item)

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
        try:
            response = await self._run(
                self._table.update_item,
                Key=meta_key(conversation_id),
                UpdateExpression="SET last_seq = last_seq + :one, updated_at = :at, GSI1SK = :at",
                ConditionExpression=LOCK_CONDITION,
                ExpressionAttributeNames={"#owner": "owner"},
                ExpressionAttributeValues={
                    ":one": 1,
                    ":at": message.created_at,
                    ":owner": owner,
                    ":false": False,
                    ":now": int(time.time() * 1000),
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
            item = old_item(error)
            current = conversation_from(item) if item else None
            raise turn_refusal(conversation_id, owner, current) from None
        message = replace(message, seq=int(response["Attributes"]["last_seq"]))
        try:
            await self._put_once(conversation_id, idempotency_key, fingerprint, message)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "TransactionCanceledException":
                raise
            # A concurrent retry with the same key won: answer as that request did.
            replay = await self._idempotent_replay(conversation_id, idempotency_key, fingerprint)
            if replay is None:
                raise
            return replay, True
        return message, False

    async def _put_once(
        self, conversation_id: str, key: str, fingerprint: str, message: StoredMessage
    ) -> None:
        """Writes the message and its idempotency key together (refused when the key exists)."""
        stored = bounded_json(asdict(message))
        pk = conversation_pk(conversation_id)
        client = self._table.meta.client  # a resource's client: plain values, not {"S": ...}
        items: list[dict[str, Any]] = [
            {
                "Put": {
                    "TableName": self._table.name,
                    "Item": {
                        "PK": pk,
                        "SK": f"IDEM#{key}",
                        "fingerprint": fingerprint,
                        "message": stored,
                    },
                    "ConditionExpression": "attribute_not_exists(PK)",
                }
            },
            {
                "Put": {
                    "TableName": self._table.name,
                    "Item": {"PK": pk, "SK": f"MSG#{message.seq:012d}#000", "message": stored},
                }
            },
        ]
        await self._run(client.transact_write_items, TransactItems=items)

    async def _idempotent_replay(
        self, conversation_id: str, key: str, fingerprint: str
    ) -> StoredMessage | None:
        response = await self._run(
            self._table.get_item,
            Key={"PK": conversation_pk(conversation_id), "SK": f"IDEM#{key}"},
            ConsistentRead=True,
        )
        item = response.get("Item")
        if item is None:
            return None
        if item["fingerprint"] != fingerprint:
            raise IdempotencyKeyReused(key)
        return stored_message_from(item)
