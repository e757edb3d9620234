"""AWS list prices the cost bench multiplies by (`bench/cost.py`, `bench/cost_model.py`): one table.

us-east-1, on-demand, without free tiers or volume discounts, as published in 2026 on the page
named beside each group (written down without a network here: docs/deploy.md, "What it costs",
lists which figures the team should check against the page before quoting them). The template's
default region is eu-central-1, where some of these differ: price the region you deploy to.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

REGION: Final = "us-east-1"
TAKEN: Final = "as published, 2026"


@dataclass(frozen=True)
class Price:
    """`usd` for every `per` of `unit`, billed by `service`."""

    service: str
    usd: float
    per: float
    unit: str
    checked: bool = True
    """False: a figure remembered rather than read off the page; docs/deploy.md asks to check it."""


MILLION: Final = 1_000_000.0
THOUSAND: Final = 1_000.0
GB: Final = 1024.0**3

PRICES: Final[dict[str, Price]] = {
    # https://aws.amazon.com/lambda/pricing/ (duration per GB-second by architecture; SnapStart
    # for Python: the cache per GB-second a published version is kept, a restore per GB restored)
    "lambda.requests": Price("Lambda", 0.20, MILLION, "requests"),
    "lambda.x86_64.gb_s": Price("Lambda", 0.0000166667, 1.0, "GB-seconds (x86_64)"),
    "lambda.arm64.gb_s": Price("Lambda", 0.0000133334, 1.0, "GB-seconds (arm64)"),
    "lambda.snapstart.cache_gb_s": Price(
        "Lambda SnapStart", 0.0000015046, 1.0, "GB-seconds cached", checked=False
    ),
    "lambda.snapstart.restore_gb": Price(
        "Lambda SnapStart", 0.0001397998, 1.0, "GB restored", checked=False
    ),
    # https://aws.amazon.com/dynamodb/pricing/on-demand/ (after the November 2024 cut)
    "dynamodb.read_units": Price("DynamoDB", 0.125, MILLION, "read request units"),
    "dynamodb.write_units": Price("DynamoDB", 0.625, MILLION, "write request units"),
    # https://aws.amazon.com/s3/pricing/ (S3 Standard; transfer inside the region is free)
    "s3.put_requests": Price("S3", 0.005, THOUSAND, "PUT, COPY, POST, LIST requests"),
    "s3.get_requests": Price("S3", 0.0004, THOUSAND, "GET, SELECT and other requests"),
    # https://aws.amazon.com/step-functions/pricing/ (standard workflows)
    "stepfunctions.transitions": Price("Step Functions", 0.025, THOUSAND, "state transitions"),
    # https://aws.amazon.com/eventbridge/pricing/ (custom events, in 64 KB chunks; the archive)
    "eventbridge.events": Price("EventBridge", 1.00, MILLION, "custom events put"),
    "eventbridge.archive_bytes": Price(
        "EventBridge", 0.10, GB, "bytes of events archived", checked=False
    ),
    # https://aws.amazon.com/cloudfront/pricing/ (North America and Europe; function URLs cost
    # nothing of their own, the invocations are Lambda's)
    "cloudfront.requests": Price("CloudFront", 0.0100, 10_000.0, "HTTPS requests"),
    "cloudfront.bytes_out": Price("CloudFront", 0.085, GB, "bytes out to the internet"),
    # https://aws.amazon.com/cloudwatch/pricing/ (Logs, standard class, ingestion)
    "logs.bytes": Price("CloudWatch Logs", 0.50, GB, "bytes ingested"),
}

MODEL_PRICES: Final[dict[str, Price]] = {
    # https://aws.amazon.com/bedrock/pricing/ (Anthropic Claude 3.5 Haiku, the template's
    # BedrockModelId, on-demand): an assumption, kept apart from the infrastructure's sum
    "bedrock.input_tokens": Price("Bedrock", 0.0008, THOUSAND, "input tokens", checked=False),
    "bedrock.output_tokens": Price("Bedrock", 0.004, THOUSAND, "output tokens", checked=False),
}
