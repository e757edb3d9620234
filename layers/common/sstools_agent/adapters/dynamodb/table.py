"""One DynamoDB table, reached from worker threads (boto3 is synchronous; the event loop keeps
streaming), and the old item a refused conditional write returns."""

from __future__ import annotations

from typing import Any

import anyio
from boto3.dynamodb.types import TypeDeserializer
from botocore.exceptions import ClientError

from sstools_agent.adapters.aws_session import aws_session

_DESERIALIZER = TypeDeserializer()
CONDITION_FAILED = "ConditionalCheckFailedException"


def condition_failed(error: ClientError) -> bool:
    """Whether `error` is a refused conditional write."""
    code: str = error.response.get("Error", {}).get("Code", "")
    return code == CONDITION_FAILED


def old_item(error: ClientError) -> dict[str, Any] | None:
    """The item as it was when a conditional write asked with
    `ReturnValuesOnConditionCheckFailure="ALL_OLD"` was refused (None when there was none).

    The table resource deserialises answers, not errors: the error carries the item in the
    low-level attribute-value form, read here as the resource would."""
    raw = error.response.get("Item")
    if not raw:
        return None
    return {key: _DESERIALIZER.deserialize(value) for key, value in raw.items()}


class DynamoTable:
    """A table resource, and `_run` to call it off the event loop."""

    def __init__(self, table_name: str, *, region: str, endpoint_url: str | None = None) -> None:
        resource = aws_session(region).resource("dynamodb", endpoint_url=endpoint_url)
        self._table = resource.Table(table_name)

    async def _run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return await anyio.to_thread.run_sync(lambda: function(*args, **kwargs))
