"""Blobs by key: where tool outputs too large for a DynamoDB item are kept whole.

In AWS the bucket is the one the checkpointer offloads to (template.yaml `CheckpointBucket`), so
the stack gains no resource and its lifecycle rule applies to both. `MemoryBlobStore` is the
in-memory fake for tests; it can also be told to fail, like a missing bucket.
boto3 is synchronous; every call runs in a worker thread so the event loop keeps streaming.
"""

from __future__ import annotations

from typing import Protocol

import anyio
import boto3
from botocore.exceptions import BotoCoreError, ClientError

_MISSING_KEY_CODES = frozenset({"NoSuchKey", "404", "NotFound"})


class BlobStoreError(Exception):
    """The store could not keep or read a blob (the bucket is missing, access denied...)."""


class BlobStore(Protocol):
    """What the chat and the REST API need from blob storage."""

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        """Keeps `data` under `key` (replacing what was there); BlobStoreError on failure."""
        ...

    async def get(self, key: str) -> bytes | None:
        """The blob under `key`, or None when there is none; BlobStoreError on failure."""
        ...


class S3BlobStore:
    """`BlobStore` on one S3 bucket."""

    def __init__(self, bucket: str, *, region: str, endpoint_url: str | None = None) -> None:
        self.bucket = bucket
        self._s3 = boto3.session.Session(region_name=region).client("s3", endpoint_url=endpoint_url)

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


class MemoryBlobStore:
    """`BlobStore` in a dict; `failing=True` makes every call fail as a missing bucket does."""

    def __init__(self, *, failing: bool = False) -> None:
        self.blobs: dict[str, bytes] = {}
        self.failing = failing

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        if self.failing:
            raise BlobStoreError(f"memory://{key}: failing on purpose")
        self.blobs[key] = data

    async def get(self, key: str) -> bytes | None:
        if self.failing:
            raise BlobStoreError(f"memory://{key}: failing on purpose")
        return self.blobs.get(key)
