"""What a turn costs, from what it used: pure arithmetic over `bench/aws_prices.py`.

A turn's usage is a count per price (`Usage`, keyed like `PRICES`: "lambda.requests",
"dynamodb.write_units", ...) in the unit the price names, so a price's `per` alone says whether a
figure is per request, per thousand or per million. `bench/cost.py` measures the counts on the
local stack; `monthly` turns them into a team's month.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from bench.aws_prices import PRICES, Price

Usage = dict[str, float]
"""Billable quantities, keyed by the price they are billed at."""

READ_UNIT_BYTES: Final = 4096
WRITE_UNIT_BYTES: Final = 1024
EVENT_CHUNK_BYTES: Final = 64 * 1024
SECONDS_IN_MONTH: Final = 30 * 24 * 3600
"""A month of a cached SnapStart version (30 days, as AWS's own examples count one)."""


def cost(usage: Mapping[str, float], prices: Mapping[str, Price] = PRICES) -> dict[str, float]:
    """USD per service for `usage`; a quantity without a price is an error, never free."""
    by_service: dict[str, float] = {}
    for item, quantity in usage.items():
        price = prices[item]
        by_service[price.service] = (
            by_service.get(price.service, 0.0) + quantity / price.per * price.usd
        )
    return by_service


def scaled(usage: Mapping[str, float], factor: float) -> Usage:
    """`usage` times `factor` (a sample's mean: its total scaled by 1 / its size)."""
    return {item: quantity * factor for item, quantity in usage.items()}


def added(*usages: Mapping[str, float]) -> Usage:
    """The sum of `usages`, item by item."""
    total: Usage = {}
    for usage in usages:
        for item, quantity in usage.items():
            total[item] = total.get(item, 0.0) + quantity
    return total


def lambda_usage(invocations: float, seconds: float, memory_mb: int, architecture: str) -> Usage:
    """Requests and GB-seconds of `invocations` lasting `seconds` in all, at `memory_mb`."""
    return {
        "lambda.requests": invocations,
        f"lambda.{architecture}.gb_s": seconds * memory_mb / 1024,
    }


def _number_size(data: Any) -> int:
    digits = str(data).lstrip("-").replace(".", "").strip("0") or "0"
    return math.ceil(len(digits) / 2) + 1  # a byte per two significant digits, and one


def _value_size(value: Mapping[str, Any]) -> int:
    (kind, data), *_ = value.items()
    if kind == "L":
        return 3 + sum(1 + _value_size(v) for v in data)
    if kind == "M":
        return 3 + sum(1 + len(k.encode()) + _value_size(v) for k, v in data.items())
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: member}) for member in data)
    sizes = {
        "S": lambda: len(str(data).encode()),
        "N": lambda: _number_size(data),
        "B": lambda: len(data),
    }
    return sizes.get(kind, lambda: 1)()  # BOOL and NULL: one byte


def item_size(item: Mapping[str, Mapping[str, Any]]) -> int:
    """A DynamoDB item's size as DynamoDB bills it: names and values, in bytes."""
    return sum(len(name.encode()) + _value_size(value) for name, value in item.items())


def read_units(size: int, *, consistent: bool) -> float:
    """On-demand read units of one read of `size` bytes (a missing item still costs one)."""
    units = max(1, math.ceil(size / READ_UNIT_BYTES))
    return float(units) if consistent else units / 2


def write_units(size: int) -> float:
    """On-demand write units of one write of an item of `size` bytes."""
    return float(max(1, math.ceil(size / WRITE_UNIT_BYTES)))


@dataclass(frozen=True)
class AwsCall:
    """One recorded call: what it sent and got back, and (for an UpdateItem, whose request
    holds only the change) the size of the item it left, which it is billed by."""

    service: str
    operation: str
    params: Mapping[str, Any]
    response: Mapping[str, Any]
    written_size: int | None = None


def _dynamodb_reads(call: AwsCall) -> float | None:
    params, response, op = call.params, call.response, call.operation
    consistent = bool(params.get("ConsistentRead"))
    if op == "GetItem":
        return read_units(item_size(response.get("Item", {})), consistent=consistent)
    if op in ("Query", "Scan"):  # billed on the items read together, not one by one
        size = sum(item_size(item) for item in response.get("Items", []))
        return read_units(size, consistent=consistent)
    if op == "BatchGetItem":
        items = [i for found in response.get("Responses", {}).values() for i in found]
        return sum(read_units(item_size(i), consistent=consistent) for i in items)
    return None


def _dynamodb_writes(call: AwsCall) -> float | None:
    params, op = call.params, call.operation
    if op == "PutItem":
        return write_units(item_size(params["Item"]))
    if op in ("UpdateItem", "DeleteItem"):
        return write_units(call.written_size or 0)
    if op == "BatchWriteItem":
        requests = [r for rs in params["RequestItems"].values() for r in rs]
        sizes = [item_size(r["PutRequest"]["Item"]) if "PutRequest" in r else 0 for r in requests]
        return sum(write_units(s) for s in sizes)
    if op == "TransactWriteItems":  # a transaction's write costs two units per KB
        sizes = [item_size(t["Put"]["Item"]) if "Put" in t else 0 for t in params["TransactItems"]]
        return sum(2 * write_units(s) for s in sizes)
    return None


def _dynamodb(call: AwsCall) -> Usage:
    reads = _dynamodb_reads(call)
    if reads is not None:
        return {"dynamodb.read_units": reads}
    writes = _dynamodb_writes(call)
    if writes is not None:
        return {"dynamodb.write_units": writes}
    raise ValueError(f"no billing rule for dynamodb.{call.operation}")


_S3_PUT_CLASS: Final = {"PutObject", "CopyObject", "ListObjectsV2", "PutObjectTagging"}
_S3_FREE: Final = {"DeleteObject", "DeleteObjects"}


def _s3(call: AwsCall) -> Usage:
    if call.operation in _S3_FREE:
        return {}
    if call.operation in _S3_PUT_CLASS:
        return {"s3.put_requests": 1}
    return {"s3.get_requests": 1}


def event_size(entry: Mapping[str, Any]) -> int:
    """An event's size as EventBridge bills it: its fields' text, in bytes."""
    return sum(len(str(value).encode()) for value in entry.values())


def event_usage(entries: Iterable[Mapping[str, Any]]) -> Usage:
    """What putting these events costs, in 64 KB chunks, and archiving them (the audit bus
    keeps every event)."""
    sizes = [event_size(entry) for entry in entries]
    return {
        "eventbridge.events": sum(max(1, math.ceil(s / EVENT_CHUNK_BYTES)) for s in sizes),
        "eventbridge.archive_bytes": sum(sizes),
    }


def aws_call_usage(call: AwsCall) -> Usage:
    """What one call made by the chat function is billed (Step Functions' own work is priced by
    `decided_path`'s transitions: here its API calls cost nothing)."""
    if call.service == "dynamodb":
        return _dynamodb(call)
    if call.service == "s3":
        return _s3(call)
    if call.service == "events":
        return event_usage(call.params.get("Entries", []))
    if call.service in ("stepfunctions", "sts", "kms", "ssm", "secretsmanager"):
        return {}
    raise ValueError(f"no billing rule for {call.service}.{call.operation}")


def decided_path(definition: Mapping[str, Any]) -> list[str]:
    """A state machine's states from its start to its end along `Next` and a choice's `Default`
    (no error, no timeout, no second approver): the confirmation's path when the user decides."""
    states, name, path = definition["States"], definition["StartAt"], []
    while True:
        path.append(name)
        state = states[name]
        following = state.get("Default") if state["Type"] == "Choice" else state.get("Next")
        if state.get("End") or following is None:
            return path
        name = following


@dataclass(frozen=True)
class Month:
    """A team's month: how many of each kind of turn, and what is paid regardless of turns."""

    turns: Mapping[str, float]
    fixed: Mapping[str, float]


def team_month(
    people: int, questions_per_day: int, working_days: int, shares: Mapping[str, float]
) -> dict[str, float]:
    """Turns of each kind in a month: every person's questions, split by `shares` (a share of the
    questions; kinds that answer a question, like a confirm, may add to more than 1)."""
    questions = people * questions_per_day * working_days
    return {kind: questions * share for kind, share in shares.items()}


def snapstart_fixed(memory_mb: Iterable[int], versions_each: int = 1) -> Usage:
    """A month of SnapStart's cache: each function's published versions, kept all month."""
    gb = sum(memory_mb) / 1024
    return {"lambda.snapstart.cache_gb_s": gb * versions_each * SECONDS_IN_MONTH}


def monthly(
    per_turn: Mapping[str, Mapping[str, float]],
    month: Month,
    prices: Mapping[str, Price] = PRICES,
) -> dict[str, float]:
    """USD per service in `month`: each kind's per-turn usage times its turns, and the fixed."""
    kinds = [scaled(per_turn[kind], turns) for kind, turns in month.turns.items()]
    return cost(added(month.fixed, *kinds), prices)
