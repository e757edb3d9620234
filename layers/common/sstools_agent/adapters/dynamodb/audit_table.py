"""The audit table: the audit function writes each audit bus event once (append-only)."""

from __future__ import annotations

from typing import Any

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
