"""The confirmation state machine (Step Functions): one Standard execution per pending card.

Its wait state stores the task token in the confirmation item and times out into `expired`;
a decision hands the token back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import anyio
from botocore.exceptions import ClientError

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.domain.approvals import DEFAULT_APPROVAL_TIMEOUT_S
from sstools_agent.domain.confirmations import Confirmation


class StepFunctionsConfirmationWorkflow:
    """Starts the confirmation state machine and hands task tokens back."""

    def __init__(
        self,
        state_machine_arn: str,
        *,
        region: str,
        endpoint_url: str | None = None,
        approval_timeout_s: int = DEFAULT_APPROVAL_TIMEOUT_S,
        chat_function: str = "ChatFunction",
    ) -> None:
        """`chat_function`: what the machine invokes with a second approver's decision."""
        self._arn = state_machine_arn
        self._approval_timeout_s, self._chat_function = approval_timeout_s, chat_function
        self._client = aws_session(region).client("stepfunctions", endpoint_url=endpoint_url)

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
            "approval_timeout_seconds": self._approval_timeout_s,
            "chat_function": self._chat_function,
        }
        await anyio.to_thread.run_sync(
            lambda: self._client.start_execution(
                stateMachineArn=self._arn,
                name=confirmation.confirmation_id,
                input=json.dumps(payload),
            )
        )

    async def hand_back(
        self, task_token: str, result: str, details: Mapping[str, Any] | None = None
    ) -> bool:
        """Ends the wait with `result` (and `details` beside it: a first approval's deadline);
        False when the token already timed out (or is unknown)."""
        output = json.dumps({**(details or {}), "result": result})
        try:
            await anyio.to_thread.run_sync(
                lambda: self._client.send_task_success(taskToken=task_token, output=output)
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
