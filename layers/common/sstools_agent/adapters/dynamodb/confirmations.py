"""Pending confirmations in the conversations table, held by a Step Functions execution.

The item (`CONF#<id>`) is written pending by the chat function; the state machine
(statemachines/confirmation.asl.json) stores its task token in it and waits. A confirm or deny
moves the item out of `pending` with one conditional write (so a double click runs nothing
twice), then hands the token back; the timer marks it `expired` only if still pending.
"""

from __future__ import annotations

import json
import time
from typing import Any, Final

from botocore.exceptions import ClientError

from sstools_agent.adapters.dynamodb.items import bounded_json
from sstools_agent.adapters.dynamodb.table import DynamoTable, condition_failed, old_item
from sstools_agent.domain.confirmations import (
    OUTCOMES_OF_A_START,
    Confirmation,
    ConfirmationEdit,
    ConfirmationStatus,
    ExecutionState,
    decide_refusal,
)

SK: Final = "CONFIRMATION"


def _key(confirmation_id: str) -> dict[str, str]:
    return {"PK": f"CONF#{confirmation_id}", "SK": SK}


def _edit(item: dict[str, Any]) -> ConfirmationEdit | None:
    if "edited_fingerprint" not in item:
        return None
    return ConfirmationEdit(
        edited_args=json.loads(item["edited_args"]),
        fingerprint=item["edited_fingerprint"],
        asks_again=bool(item.get("edit_asks_again", False)),
        edited_by=item["edited_by"],
    )


def _edit_values(edit: ConfirmationEdit | None) -> tuple[str, dict[str, Any]]:
    """The SET clauses and values that keep `edit` on the item (none without one)."""
    if edit is None:
        return "", {}
    values = {
        ":edited_args": bounded_json(edit.edited_args),
        ":edited_fingerprint": edit.fingerprint,
        ":edit_asks_again": edit.asks_again,
        ":edited_by": edit.edited_by,
    }
    return "".join(f", {name[1:]} = {name}" for name in values), values


def _confirmation(item: dict[str, Any]) -> Confirmation:
    return Confirmation(
        confirmation_id=item["confirmation_id"],
        conversation_id=item["conversation_id"],
        user=item["user"],
        tool_call_id=item["tool_call_id"],
        tool=item["tool"],
        fingerprint=item["fingerprint"],
        risk=item["risk"],
        status=ConfirmationStatus(item["status"]),
        expires_at=float(item["expires_at"]),
        task_token=item.get("task_token"),
        execution=ExecutionState(item["execution"]) if item.get("execution") else None,
        edit=_edit(item),
        plan=json.loads(item["plan"]) if item.get("plan") else None,
    )


class DynamoDBConfirmationStore(DynamoTable):
    """`domain.ports.ConfirmationStore` on the conversations table."""

    async def create(self, confirmation: Confirmation) -> None:
        item = {
            **_key(confirmation.confirmation_id),
            "confirmation_id": confirmation.confirmation_id,
            "conversation_id": confirmation.conversation_id,
            "user": confirmation.user,
            "tool_call_id": confirmation.tool_call_id,
            "tool": confirmation.tool,
            "fingerprint": confirmation.fingerprint,
            "risk": confirmation.risk,
            "status": confirmation.status.value,
            "expires_at": int(confirmation.expires_at),
        }
        if confirmation.plan is not None:
            item["plan"] = bounded_json(confirmation.plan)
        await self._run(
            self._table.put_item, Item=item, ConditionExpression="attribute_not_exists(PK)"
        )

    async def get(self, confirmation_id: str) -> Confirmation | None:
        response = await self._run(
            self._table.get_item, Key=_key(confirmation_id), ConsistentRead=True
        )
        item = response.get("Item")
        return _confirmation(item) if item else None

    async def decide(
        self,
        confirmation_id: str,
        user: str,
        status: ConfirmationStatus,
        edit: ConfirmationEdit | None = None,
    ) -> Confirmation:
        """Moves a pending, unexpired confirmation of `user` to `status`, exactly once, with
        the edit it was answered with in the same write; a refusal is explained from the item
        as the write found it."""
        now = time.time()
        edit_set, edit_values = _edit_values(edit)
        try:
            response = await self._run(
                self._table.update_item,
                Key=_key(confirmation_id),
                UpdateExpression=f"SET #status = :status, decided_at = :now{edit_set}",
                ConditionExpression="#status = :pending AND #user = :user AND expires_at > :now",
                ExpressionAttributeNames={"#status": "status", "#user": "user"},
                ExpressionAttributeValues={
                    ":status": status.value,
                    ":pending": ConfirmationStatus.PENDING.value,
                    ":user": user,
                    ":now": int(now),
                }
                | edit_values,
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
            item = old_item(error)
            current = _confirmation(item) if item else None
            return decide_refusal(confirmation_id, user, current, now)
        return _confirmation(response["Attributes"])

    async def record_execution(self, confirmation_id: str, state: ExecutionState) -> bool:
        """Moves a confirmed call's execution to `state` if that state may follow the current
        one (`OUTCOMES_OF_A_START`); False when it may not (started twice, or given up)."""
        condition: dict[str, Any]
        if state in OUTCOMES_OF_A_START:
            condition = {
                "ConditionExpression": "execution = :started",
                "ExpressionAttributeValues": {":started": ExecutionState.STARTED.value},
            }
        else:
            condition = {
                "ConditionExpression": "#status = :confirmed AND attribute_not_exists(execution)",
                "ExpressionAttributeNames": {"#status": "status"},
                "ExpressionAttributeValues": {":confirmed": ConfirmationStatus.CONFIRMED.value},
            }
        condition["ExpressionAttributeValues"] |= {":state": state.value, ":now": int(time.time())}
        try:
            await self._run(
                self._table.update_item,
                Key=_key(confirmation_id),
                UpdateExpression="SET execution = :state, execution_at = :now",
                **condition,
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
            return False
        return True
