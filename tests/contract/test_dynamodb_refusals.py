"""DynamoDB on moto: a refused conditional write returns the item as it was
(`ReturnValuesOnConditionCheckFailure="ALL_OLD"`), which the adapters explain refusals from."""

from __future__ import annotations

import uuid
from collections.abc import Callable

import boto3
import pytest
from botocore.exceptions import ClientError

from sstools_agent.adapters.dynamodb.table import condition_failed, old_item
from sstools_agent.settings import Settings


@pytest.mark.parametrize("write", ["put_item", "update_item"])
def test_a_refused_write_returns_the_old_item(moto_settings: Settings, write: str):
    table = boto3.resource(
        "dynamodb",
        region_name=moto_settings.aws_region,
        endpoint_url=moto_settings.aws_endpoint_url,
    ).Table(moto_settings.conversations_table)
    key = {"PK": f"CONV#{uuid.uuid4().hex}", "SK": "META"}
    table.put_item(Item=key | {"owner": "egor", "last_seq": 3, "is_archived": True})
    refused: Callable[[], object] = {
        "put_item": lambda: table.put_item(
            Item=key,
            ConditionExpression="attribute_not_exists(PK)",
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
        "update_item": lambda: table.update_item(
            Key=key,
            UpdateExpression="SET last_seq = :n",
            ConditionExpression="is_archived = :false",
            ExpressionAttributeValues={":n": 4, ":false": False},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        ),
    }[write]
    with pytest.raises(ClientError) as refusal:
        refused()
    assert condition_failed(refusal.value)
    assert old_item(refusal.value) == key | {"owner": "egor", "last_seq": 3, "is_archived": True}


def test_a_refused_write_of_a_missing_item_returns_none(moto_settings: Settings):
    table = boto3.resource(
        "dynamodb",
        region_name=moto_settings.aws_region,
        endpoint_url=moto_settings.aws_endpoint_url,
    ).Table(moto_settings.conversations_table)
    with pytest.raises(ClientError) as refusal:
        table.update_item(
            Key={"PK": f"CONV#{uuid.uuid4().hex}", "SK": "META"},
            UpdateExpression="SET last_seq = :n",
            ConditionExpression="attribute_exists(PK)",
            ExpressionAttributeValues={":n": 1},
            ReturnValuesOnConditionCheckFailure="ALL_OLD",
        )
    assert condition_failed(refusal.value)
    assert old_item(refusal.value) is None
