"""The audit table: the audit function writes each audit bus event once (append-only)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from boto3.dynamodb.conditions import Attr
from botocore.exceptions import ClientError

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.adapters.dynamodb.table import condition_failed


class DynamoDBAuditRecordStore:
    """`domain.ports.AuditRecordStore` on the audit table (synchronous: the audit function is)."""

    def __init__(
        self, table_name: str, *, region: str | None = None, endpoint_url: str | None = None
    ) -> None:
        resource = aws_session(region).resource("dynamodb", endpoint_url=endpoint_url)
        self._table = resource.Table(table_name)

    def store_once(self, item: dict[str, Any]) -> bool:
        """Writes `item` with a condition, so a redelivered event is stored once."""
        try:
            self._table.put_item(Item=item, ConditionExpression="attribute_not_exists(PK)")
        except ClientError as error:
            if condition_failed(error):
                return False
            raise
        return True

    def since(self, start: str, kinds: tuple[str, ...]) -> Iterator[dict[str, Any]]:
        """Every item of `kinds` stored at or after `start` (the table's sort time, UTC),
        whoever it is about: a scan, page by page (`make policy-check`, not a request path)."""
        condition = Attr("SK").gte(start) & Attr("kind").is_in(list(kinds))
        arguments: dict[str, Any] = {"FilterExpression": condition}
        while True:
            page = self._table.scan(**arguments)
            yield from page.get("Items", [])
            if "LastEvaluatedKey" not in page:
                return
            arguments["ExclusiveStartKey"] = page["LastEvaluatedKey"]
