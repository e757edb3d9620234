"""LangGraph checkpoints in DynamoDB (langgraph-checkpoint-aws), large ones offloaded to S3.

The saver never creates its table: template.yaml declares it (PK and SK strings, numeric `ttl`) and
the bucket; the local stack creates both from those declarations.
"""

from __future__ import annotations

import logging

import boto3
from langgraph_checkpoint_aws import DynamoDBSaver

from sstools_agent.settings import CheckpointSettings

SECONDS_PER_DAY = 86_400


def checkpointer_from(settings: CheckpointSettings) -> DynamoDBSaver:
    """A DynamoDBSaver with compression, TTL and S3 offload, on the configured endpoints."""
    # The saver logs an INFO line per write; keep the function's logs for what matters.
    logging.getLogger("langgraph_checkpoint_aws").setLevel(logging.WARNING)
    session = boto3.session.Session(region_name=settings.aws_region)
    return DynamoDBSaver(
        table_name=settings.checkpoint_table,
        session=session,
        region_name=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
        ttl_seconds=settings.checkpoint_ttl_days * SECONDS_PER_DAY,
        enable_checkpoint_compression=True,
        s3_offload_config={
            "bucket_name": settings.checkpoint_bucket,
            "endpoint_url": settings.aws_endpoint_url,
        },
    )
