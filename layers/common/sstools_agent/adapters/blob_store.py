"""Blobs by key: where tool outputs too large for a DynamoDB item are kept whole.

In AWS the bucket is the one the checkpointer offloads to (template.yaml `CheckpointBucket`), so
the stack gains no resource and its lifecycle rule applies to both (`adapters.memory` has the
in-memory one for tests).
boto3 is synchronous; every call runs in a worker thread so the event loop keeps streaming.
"""

from __future__ import annotations

import anyio
from botocore.exceptions import BotoCoreError, ClientError

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.domain.ports import BlobStoreError

_MISSING_KEY_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class S3BlobStore:
    """`domain.ports.BlobStore` on one S3 bucket."""

    def __init__(self, bucket: str, *, region: str, endpoint_url: str | None = None) -> None:
        self.bucket = bucket
        self._s3 = aws_session(region).client("s3", endpoint_url=endpoint_url)

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        def write() -> None:
            self._s3.put_object(Bucket=self.bucket, Key=key, Body=data, ContentType=content_type)

        try:
            await anyio.to_thread.run_sync(write)
        except (ClientError, BotoCoreError) as error:
            raise BlobStoreError(f"s3://{self.bucket}/{key}: {error}") from error

    async def get(self, key: str) -> bytes | None:
        def read() -> bytes | None:
            try:
                response = self._s3.get_object(Bucket=self.bucket, Key=key)
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") in _MISSING_KEY_CODES:
                    return None
                raise
            body: bytes = response["Body"].read()
            return body

        try:
            return await anyio.to_thread.run_sync(read)
        except (ClientError, BotoCoreError) as error:
            raise BlobStoreError(f"s3://{self.bucket}/{key}: {error}") from error
