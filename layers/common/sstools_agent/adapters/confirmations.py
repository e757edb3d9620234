"""Pending confirmations in DynamoDB, held by a Step Functions execution with a task token.

The item (`CONF#<id>` in the conversations table) is written pending by the chat function; the
state machine (statemachines/confirmation.asl.json) stores its task token in it and waits. A
confirm or deny moves the item out of `pending` with one conditional write (so a double click runs
nothing twice), then hands the token back; the timer marks it `expired` only if still pending.
"""

from __future__ import annotations

import json
import time
from typing import Any, Protocol

import anyio
import boto3
from botocore.exceptions import ClientError

from sstools_agent.domain.confirmations import (
    OUTCOMES_OF_A_START,
    Confirmation,
    ConfirmationStatus,
    ExecutionState,
)

SK = "CONFIRMATION"


class ConfirmationNotFound(Exception):
    """No such confirmation in this conversation (404)."""


class ConfirmationForbidden(Exception):
    """Another user's confirmation (403)."""


class ConfirmationDecided(Exception):
    """Already confirmed, denied or cancelled (409): nothing runs twice."""


class ConfirmationExpired(Exception):
    """Expired, and the conversation was already told so (409): the card cannot be answered."""


class ConfirmationStore(Protocol):
    async def create(self, confirmation: Confirmation) -> None: ...

    async def get(self, confirmation_id: str) -> Confirmation | None: ...

    async def decide(
        self, confirmation_id: str, user: str, status: ConfirmationStatus
    ) -> Confirmation: ...

    async def record_execution(self, confirmation_id: str, state: ExecutionState) -> bool: ...


class ConfirmationWorkflow(Protocol):
    async def start(self, confirmation: Confirmation, timeout_s: int) -> None: ...

    async def hand_back(self, task_token: str, result: str) -> bool: ...


def _pk(confirmation_id: str) -> str:
    return f"CONF#{confirmation_id}"


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
    )


class DynamoDBConfirmationStore:
    """`ConfirmationStore` on the conversations table."""

    def __init__(self, table_name: str, *, region: str, endpoint_url: str | None = None) -> None:
        resource = boto3.session.Session(region_name=region).resource(
            "dynamodb", endpoint_url=endpoint_url
        )
        self._table = resource.Table(table_name)

    async def create(self, confirmation: Confirmation) -> None:
        item = {
            "PK": _pk(confirmation.confirmation_id),
            "SK": SK,
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
        await anyio.to_thread.run_sync(
            lambda: self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(PK)")
        )

    async def get(self, confirmation_id: str) -> Confirmation | None:
        response = await anyio.to_thread.run_sync(
            lambda: self._table.get_item(
                Key={"PK": _pk(confirmation_id), "SK": SK}, ConsistentRead=True
            )
        )
        item = response.get("Item")
        return _confirmation(item) if item else None

    async def decide(
        self, confirmation_id: str, user: str, status: ConfirmationStatus
    ) -> Confirmation:
        """Moves a pending, unexpired confirmation of `user` to `status`, exactly once."""

        def update() -> dict[str, Any]:
            response: dict[str, Any] = self._table.update_item(
                Key={"PK": _pk(confirmation_id), "SK": SK},
                UpdateExpression="SET #status = :status, decided_at = :now",
                ConditionExpression="#status = :pending AND #user = :user AND expires_at > :now",
                ExpressionAttributeNames={"#status": "status", "#user": "user"},
                ExpressionAttributeValues={
                    ":status": status.value,
                    ":pending": "pending",
                    ":user": user,
                    ":now": int(time.time()),
                },
                ReturnValues="ALL_NEW",
            )
            return response

        try:
            response = await anyio.to_thread.run_sync(update)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            current = await self.get(confirmation_id)
            if current is None:
                raise ConfirmationNotFound(confirmation_id) from None
            if current.user != user:
                raise ConfirmationForbidden(confirmation_id) from None
            if current.expired(time.time()):
                return current
            raise ConfirmationDecided(confirmation_id) from None
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

        def update() -> None:
            self._table.update_item(
                Key={"PK": _pk(confirmation_id), "SK": SK},
                UpdateExpression="SET execution = :state, execution_at = :now",
                **condition,
            )

        try:
            await anyio.to_thread.run_sync(update)
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") != "ConditionalCheckFailedException":
                raise
            return False
        return True


class StepFunctionsConfirmationWorkflow:
    """Starts the confirmation state machine and hands task tokens back."""

    def __init__(
        self, state_machine_arn: str, *, region: str, endpoint_url: str | None = None
    ) -> None:
        self._arn = state_machine_arn
        self._client = boto3.session.Session(region_name=region).client(
            "stepfunctions", endpoint_url=endpoint_url
        )

    async def start(self, confirmation: Confirmation, timeout_s: int) -> None:
        """One Standard execution per confirmation, named by its id."""
        payload = {
            "confirmation_id": confirmation.confirmation_id,
            "conversation_id": confirmation.conversation_id,
            "user": confirmation.user,
            "tool": confirmation.tool,
            "risk": confirmation.risk,
            "fingerprint": confirmation.fingerprint,
            "timeout_seconds": timeout_s,
        }
        await anyio.to_thread.run_sync(
            lambda: self._client.start_execution(
                stateMachineArn=self._arn,
                name=confirmation.confirmation_id,
                input=json.dumps(payload),
            )
        )

    async def hand_back(self, task_token: str, result: str) -> bool:
        """Ends the wait with `result`; False when the token already timed out (or is unknown)."""
        try:
            await anyio.to_thread.run_sync(
                lambda: self._client.send_task_success(
                    taskToken=task_token, output=json.dumps({"result": result})
                )
            )
        except ClientError as error:
            if error.response.get("Error", {}).get("Code") in {
                "TaskTimedOut",
                "InvalidToken",
                "TaskDoesNotExist",
            }:
                return False
            raise
        return True
