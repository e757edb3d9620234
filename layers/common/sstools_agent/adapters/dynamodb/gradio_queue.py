"""`domain.ports.GradioQueue` on the conversations table (the chat function's own table).

A session's turns are one partition, keyed by the subject as well as the session hash
(`GRADIO#<sha256(subject, session)>`), so a query by another subject finds nothing, whatever
hash it sends. Items carry the table's `ttl`; every read checks `expires_at` too.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from boto3.dynamodb.conditions import Key
from botocore.exceptions import ClientError

from sstools_agent.adapters.dynamodb.table import DynamoTable, condition_failed
from sstools_agent.domain.gradio_queue import RUNNING_FOR_S, GradioTurnState, QueuedTurn

EVENT_PREFIX: Final = "EVENT#"


def session_pk(session: str, subject: str) -> str:
    """The partition of `subject`'s turns in `session`."""
    digest = hashlib.sha256(f"{subject}\x00{session}".encode()).hexdigest()
    return f"GRADIO#{digest}"


def _key(session: str, subject: str, event_id: str) -> dict[str, str]:
    return {"PK": session_pk(session, subject), "SK": f"{EVENT_PREFIX}{event_id}"}


def _turn(item: dict[str, Any]) -> QueuedTurn:
    return QueuedTurn(
        session=item["session"],
        event_id=item["event_id"],
        subject=item["subject"],
        request=json.loads(item["request"]),
        request_id=item["request_id"],
        queued_at=float(item["queued_at"]),
        expires_at=float(item["expires_at"]),
        state=item["state"],
        conversation_id=item.get("conversation_id"),
        cancel_requested=bool(item.get("cancel_requested", False)),
    )


class DynamoDBGradioQueue(DynamoTable):
    """`domain.ports.GradioQueue` on the conversations table."""

    async def enqueue(self, turn: QueuedTurn) -> None:
        item = {
            **_key(turn.session, turn.subject, turn.event_id),
            "session": turn.session,
            "event_id": turn.event_id,
            "subject": turn.subject,
            "request": json.dumps(turn.request, ensure_ascii=False),
            "request_id": turn.request_id,
            "queued_at": str(turn.queued_at),
            "expires_at": int(turn.expires_at),
            "state": turn.state,
            "ttl": int(turn.expires_at) + 1,
        }
        await self._run(self._table.put_item, Item=item)

    async def claim(self, session: str, subject: str, now: float) -> list[QueuedTurn]:
        response = await self._run(
            self._table.query,
            KeyConditionExpression=Key("PK").eq(session_pk(session, subject))
            & Key("SK").begins_with(EVENT_PREFIX),
            ConsistentRead=True,
        )
        waiting = [
            turn
            for turn in map(_turn, response.get("Items", []))
            if turn.state == GradioTurnState.QUEUED and turn.live(now) and turn.subject == subject
        ]
        claimed = []
        for turn in sorted(waiting, key=lambda each: each.queued_at):
            if await self._claim(turn, now):
                claimed.append(turn)
        return claimed

    async def _claim(self, turn: QueuedTurn, now: float) -> bool:
        keep_until = int(now) + RUNNING_FOR_S
        try:
            await self._run(
                self._table.update_item,
                Key=_key(turn.session, turn.subject, turn.event_id),
                UpdateExpression="SET #state = :claimed, expires_at = :keep, #ttl = :ttl",
                ConditionExpression="#state = :queued AND expires_at > :now AND subject = :subject",
                ExpressionAttributeNames={"#state": "state", "#ttl": "ttl"},
                ExpressionAttributeValues={
                    ":claimed": GradioTurnState.CLAIMED,
                    ":queued": GradioTurnState.QUEUED,
                    ":keep": keep_until,
                    ":ttl": keep_until + 1,
                    ":now": int(now),
                    ":subject": turn.subject,
                },
            )
        except ClientError as error:
            if condition_failed(error):
                return False
            raise
        return True

    async def opened(self, session: str, subject: str, event_id: str, conversation_id: str) -> bool:
        try:
            response = await self._run(
                self._table.update_item,
                Key=_key(session, subject, event_id),
                UpdateExpression="SET conversation_id = :conversation",
                ConditionExpression="attribute_exists(PK)",
                ExpressionAttributeValues={":conversation": conversation_id},
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if condition_failed(error):
                return False
            raise
        return bool(response["Attributes"].get("cancel_requested", False))

    async def request_cancel(
        self, session: str, subject: str, event_id: str, now: float
    ) -> QueuedTurn | None:
        try:
            response = await self._run(
                self._table.update_item,
                Key=_key(session, subject, event_id),
                UpdateExpression="SET cancel_requested = :true",
                ConditionExpression="attribute_exists(PK) AND subject = :subject AND "
                "expires_at > :now",
                ExpressionAttributeValues={":true": True, ":subject": subject, ":now": int(now)},
                ReturnValues="ALL_NEW",
            )
        except ClientError as error:
            if condition_failed(error):
                return None
            raise
        return _turn(response["Attributes"])

    async def finish(self, session: str, subject: str, event_id: str) -> None:
        await self._run(self._table.delete_item, Key=_key(session, subject, event_id))
