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
    FirstApproval,
    decide_refusal,
    second_decision_refusal,
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


def _approval(item: dict[str, Any]) -> FirstApproval | None:
    if "approved_by" not in item:
        return None
    return FirstApproval(
        by=item["approved_by"],
        expires_at=float(item["approval_expires_at"]),
        role=item.get("requester_role"),
        token=item.get("requester_token", ""),
    )


def _approval_values(approval: FirstApproval | None) -> tuple[str, dict[str, Any]]:
    """The SET clauses and values that keep a first approval on the item (none without one)."""
    if approval is None:
        return "", {}
    values: dict[str, Any] = {
        ":approved_by": approval.by,
        ":approval_expires_at": int(approval.expires_at),
        ":requester_token": approval.token,
    }
    if approval.role is not None:
        values[":requester_role"] = approval.role
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
        approval_token=item.get("approval_token"),
        execution=ExecutionState(item["execution"]) if item.get("execution") else None,
        edit=_edit(item),
        plan=json.loads(item["plan"]) if item.get("plan") else None,
        approvers=int(item.get("approvers", 1)),
        card=json.loads(item["card"]) if item.get("card") else None,
        approval=_approval(item),
        second_approver=item.get("second_approver"),
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
        if confirmation.approvers > 1:
            item["approvers"] = confirmation.approvers
            item["card"] = bounded_json(confirmation.card or {})
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
        approval: FirstApproval | None = None,
    ) -> Confirmation:
        """Moves a pending, unexpired confirmation of `user` to `status`, exactly once, with
        the edit it was answered with in the same write; a refusal is explained from the item
        as the write found it. A card waiting for its second approver may still be denied or
        cancelled by its user (never confirmed: `approval` moves only a pending card)."""
        now = time.time()
        edit_set, edit_values = _edit_values(edit)
        approval_set, approval_values = _approval_values(approval)
        condition = "#status = :pending AND expires_at > :now"
        if approval is None and status is not ConfirmationStatus.CONFIRMED:
            condition = f"(({condition}) OR (#status = :awaiting AND approval_expires_at > :now))"
        try:
            response = await self._run(
                self._table.update_item,
                Key=_key(confirmation_id),
                UpdateExpression=(
                    f"SET #status = :status, decided_at = :now{edit_set}{approval_set}"
                ),
                ConditionExpression=f"{condition} AND #user = :user",
                ExpressionAttributeNames={"#status": "status", "#user": "user"},
                ExpressionAttributeValues={
                    ":status": status.value,
                    ":pending": ConfirmationStatus.PENDING.value,
                    ":user": user,
                    ":now": int(now),
                }
                | ({} if ":awaiting" not in condition else {":awaiting": "awaiting_approval"})
                | edit_values
                | approval_values,
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

    async def decide_second(
        self, confirmation_id: str, approver: str, status: ConfirmationStatus
    ) -> Confirmation:
        """Moves a card approved once to `status` by `approver` (not its requester), exactly
        once, while its second approval's timer holds the token (`second_decision_refusal`
        explains a refusal)."""
        now = time.time()
        try:
            response = await self._run(
                self._table.update_item,
                Key=_key(confirmation_id),
                UpdateExpression=(
                    "SET #status = :status, second_approver = :approver, decided_at = :now"
                ),
                ConditionExpression=(
                    "#status = :awaiting AND approval_expires_at > :now"
                    " AND approved_by <> :approver AND attribute_exists(approval_token)"
                ),
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={
                    ":status": status.value,
                    ":awaiting": ConfirmationStatus.AWAITING_APPROVAL.value,
                    ":approver": approver,
                    ":now": int(now),
                },
                ReturnValues="ALL_NEW",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
            )
        except ClientError as error:
            if not condition_failed(error):
                raise
            item = old_item(error)
            current = _confirmation(item) if item else None
            raise second_decision_refusal(confirmation_id, approver, current, now) from None
        return _confirmation(response["Attributes"])

    async def awaiting_approval(self) -> list[Confirmation]:
        """Every card approved once whose second approval's timer holds its token. A scan
        with a filter: cards waiting for a second person are few, the table is not (a sparse
        index is the next step when this shows in the bill)."""
        items = await self._scan_awaiting()
        return [_confirmation(item) for item in items]

    async def _scan_awaiting(self) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        start: dict[str, Any] | None = None
        while True:
            page = await self._run(
                self._table.scan,
                FilterExpression="#status = :awaiting AND attribute_exists(approval_token)",
                ExpressionAttributeNames={"#status": "status"},
                ExpressionAttributeValues={":awaiting": ConfirmationStatus.AWAITING_APPROVAL.value},
                **({"ExclusiveStartKey": start} if start else {}),
            )
            found += page.get("Items", [])
            start = page.get("LastEvaluatedKey")
            if not start:
                return found

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
