"""The cost bench's arithmetic (bench/cost_model.py over bench/aws_prices.py): what AWS bills a
call by, and a team's month from per-turn usage, checked against figures worked out by hand."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.aws_prices import MODEL_PRICES, PRICES
from bench.cost_model import (
    AwsCall,
    Month,
    aws_call_usage,
    cost,
    decided_path,
    item_size,
    lambda_usage,
    monthly,
    read_units,
    snapstart_fixed,
    team_month,
    write_units,
)

ROOT = Path(__file__).resolve().parents[2]


def test_a_month_is_priced_per_unit_each_price_names() -> None:
    # Given a read turn that takes one 10 GB-second arm64 invocation and writes 4 units
    per_turn = {
        "read": {"lambda.requests": 1, "lambda.arm64.gb_s": 10.0, "dynamodb.write_units": 4},
    }
    # When a month has 1,000 of them and a cache of 100 GB-seconds
    month = Month(turns={"read": 1000}, fixed={"lambda.snapstart.cache_gb_s": 100.0})
    # Then, by hand: 1,000 requests at $0.20 a million, 10,000 GB-s at $0.0000133334,
    # 4,000 write units at $0.625 a million, 100 GB-s cached at $0.0000015046
    assert monthly(per_turn, month) == pytest.approx(
        {
            "Lambda": 0.0002 + 0.133334,
            "DynamoDB": 0.0025,
            "Lambda SnapStart": 0.00015046,
        },
        rel=1e-9,
    )


def test_a_team_month_counts_every_persons_questions_by_share() -> None:
    turns = team_month(50, 40, 22, {"read": 0.85, "card": 0.15, "confirm": 0.15})
    assert turns == pytest.approx({"read": 37_400, "card": 6_600, "confirm": 6_600})


def test_snapstart_caches_each_functions_memory_all_month() -> None:
    # 1.5 GB for 30 days is 3,888,000 GB-seconds, at $0.0000015046 each
    usage = snapstart_fixed([1024, 512])
    assert usage == pytest.approx({"lambda.snapstart.cache_gb_s": 3_888_000})
    assert cost(usage) == pytest.approx({"Lambda SnapStart": 5.8498848})


def test_lambda_bills_memory_in_gigabytes_by_architecture() -> None:
    assert lambda_usage(2, 3.0, 1769, "x86_64") == pytest.approx(
        {"lambda.requests": 2, "lambda.x86_64.gb_s": 3.0 * 1769 / 1024}
    )


def test_model_tokens_are_priced_apart_per_thousand() -> None:
    tokens = {"bedrock.input_tokens": 3000, "bedrock.output_tokens": 200}
    assert cost(tokens, MODEL_PRICES) == pytest.approx({"Bedrock": 0.0024 + 0.0008})
    with pytest.raises(KeyError):
        cost(tokens)  # never inside the infrastructure's sum


def test_an_items_size_counts_names_and_values_as_dynamodb_does() -> None:
    item: dict[str, dict[str, Any]] = {
        "PK": {"S": "CONF#ab"},  # 2 + 7
        "n": {"N": "-12.30"},  # 1 + (3 significant digits: 2) + 1
        "ok": {"BOOL": True},  # 2 + 1
        "m": {"M": {"a": {"S": "xy"}}},  # 1 + 3 + (1 + 1 + 2)
        "l": {"L": [{"NULL": True}]},  # 1 + 3 + (1 + 1)
        "ss": {"SS": ["ab", "c"]},  # 2 + 3
        "ж": {"S": "ё"},  # 2 + 2: UTF-8 bytes
    }
    assert item_size(item) == 9 + 4 + 3 + 8 + 6 + 5 + 4


def test_request_units_round_up_by_four_kb_read_and_one_kb_written() -> None:
    assert read_units(4096, consistent=True) == 1
    assert read_units(4097, consistent=True) == 2
    assert read_units(4097, consistent=False) == 1
    assert read_units(0, consistent=False) == 0.5  # a miss still costs the minimum
    assert write_units(1024) == 1
    assert write_units(1025) == 2
    assert write_units(0) == 1


def test_dynamodb_calls_are_billed_by_what_they_read_and_wrote() -> None:
    big = {"PK": {"S": "x" * 1500}}
    small = {"PK": {"S": "y"}}
    batch = AwsCall(
        "dynamodb",
        "BatchWriteItem",
        {"RequestItems": {"t": [{"PutRequest": {"Item": big}}, {"PutRequest": {"Item": small}}]}},
        {},
    )
    assert aws_call_usage(batch) == {"dynamodb.write_units": 3}
    transaction = AwsCall(
        "dynamodb", "TransactWriteItems", {"TransactItems": [{"Put": {"Item": small}}]}, {}
    )
    assert aws_call_usage(transaction) == {"dynamodb.write_units": 2}
    update = AwsCall("dynamodb", "UpdateItem", {"Key": small}, {}, written_size=2100)
    assert aws_call_usage(update) == {"dynamodb.write_units": 3}
    query = AwsCall("dynamodb", "Query", {}, {"Items": [big, big, big]})
    assert aws_call_usage(query) == {"dynamodb.read_units": 1.0}  # 4.5 KB, eventually consistent
    get = AwsCall("dynamodb", "GetItem", {"ConsistentRead": True}, {})
    assert aws_call_usage(get) == {"dynamodb.read_units": 1.0}


def test_s3_requests_and_events_by_their_price_class() -> None:
    assert aws_call_usage(AwsCall("s3", "PutObject", {}, {})) == {"s3.put_requests": 1}
    assert aws_call_usage(AwsCall("s3", "GetObject", {}, {})) == {"s3.get_requests": 1}
    assert aws_call_usage(AwsCall("s3", "DeleteObject", {}, {})) == {}
    entries = [{"Detail": "x" * 70_000}, {"Detail": "y"}]
    assert aws_call_usage(AwsCall("events", "PutEvents", {"Entries": entries}, {})) == {
        "eventbridge.events": 3,  # 70,000 bytes are two 64 KB chunks
        "eventbridge.archive_bytes": 70_001,
    }


def test_a_call_without_a_billing_rule_is_an_error_not_free() -> None:
    with pytest.raises(ValueError, match=r"sqs\.SendMessage"):
        aws_call_usage(AwsCall("sqs", "SendMessage", {}, {}))
    with pytest.raises(ValueError, match=r"dynamodb\.Frobnicate"):
        aws_call_usage(AwsCall("dynamodb", "Frobnicate", {}, {}))


def test_the_confirmations_decided_path_in_the_state_machine() -> None:
    definition = json.loads((ROOT / "statemachines/confirmation.asl.json").read_text())
    assert decided_path(definition) == ["WaitForDecision", "AfterDecision", "PublishOutcome"]


def test_every_price_names_its_unit_and_a_positive_figure() -> None:
    for name, price in {**PRICES, **MODEL_PRICES}.items():
        assert price.usd > 0, name
        assert price.per >= 1, name
        assert price.unit, name
