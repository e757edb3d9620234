"""Uploaded files in their private bucket (template.yaml `AttachmentBucket`, docs/attachments.md).

The browser uploads with a presigned POST whose policy this adapter writes (the key, the type, the
name's metadata and the length are fixed); the chat reads what a message attaches and writes the
bytes it checked under `attachments/` (never over an object there), then removes the upload; the
owner downloads through a presigned GET that serves an attachment, stored by no cache.
boto3 is synchronous; every call runs in a worker thread so the event loop keeps streaming.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import anyio
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.domain.attachments import (
    NAME_META,
    PresignedUpload,
    StoredFile,
    name_from_metadata,
    name_metadata,
)
from sstools_agent.domain.ports import BlobStoreError
from sstools_agent.domain.private_responses import NO_STORE

_MISSING_KEY_CODES = frozenset({"NoSuchKey", "404", "NotFound"})
_META_FIELD = f"x-amz-meta-{NAME_META}"


def _missing(error: ClientError) -> bool:
    return error.response.get("Error", {}).get("Code") in _MISSING_KEY_CODES


class S3AttachmentStore:
    """`domain.ports.AttachmentStore` on one S3 bucket."""

    def __init__(self, bucket: str, *, region: str, endpoint_url: str | None = None) -> None:
        self.bucket = bucket
        # Signature v4, and in AWS the regional virtual-host URL (`<bucket>.s3.<region>...`):
        # the page's CSP allows that host, and a new bucket answers it without redirects. An
        # endpoint (moto) keeps its own host, path-style.
        addressing = {} if endpoint_url else {"s3": {"addressing_style": "virtual"}}
        config = Config(signature_version="s3v4", **addressing)
        session = aws_session(region)
        self._s3 = session.client("s3", endpoint_url=endpoint_url, config=config)

    async def _run[T](self, key: str, call: Callable[[], T]) -> T:
        try:
            return await anyio.to_thread.run_sync(call)
        except (ClientError, BotoCoreError) as error:
            raise BlobStoreError(f"s3://{self.bucket}/{key}: {error}") from error

    async def presigned_upload(
        self, key: str, content_type: str, max_bytes: int, name: str, expires_s: int
    ) -> PresignedUpload:
        fields = {"Content-Type": content_type, _META_FIELD: name_metadata(name)}
        conditions: list[Any] = [
            {"bucket": self.bucket},
            ["eq", "$key", key],
            ["eq", "$Content-Type", content_type],
            ["eq", f"${_META_FIELD}", fields[_META_FIELD]],
            ["content-length-range", 1, max_bytes],
        ]

        def sign() -> dict[str, Any]:
            answer: dict[str, Any] = self._s3.generate_presigned_post(
                self.bucket, key, Fields=fields, Conditions=conditions, ExpiresIn=expires_s
            )
            return answer

        answer = await self._run(key, sign)
        return PresignedUpload(str(answer["url"]), {k: str(v) for k, v in answer["fields"].items()})

    async def stat(self, key: str) -> StoredFile | None:
        def head() -> StoredFile | None:
            try:
                answer = self._s3.head_object(Bucket=self.bucket, Key=key)
            except ClientError as error:
                if _missing(error):
                    return None
                raise
            name = name_from_metadata(answer.get("Metadata", {}).get(NAME_META, ""))
            return StoredFile(
                int(answer["ContentLength"]), str(answer.get("ContentType", "")), name
            )

        return await self._run(key, head)

    async def read(self, key: str) -> bytes | None:
        def get() -> bytes | None:
            try:
                answer = self._s3.get_object(Bucket=self.bucket, Key=key)
            except ClientError as error:
                if _missing(error):
                    return None
                raise
            body: bytes = answer["Body"].read()
            return body

        return await self._run(key, get)

    async def keep(self, key: str, data: bytes, content_type: str, name: str) -> None:
        def put() -> None:
            try:
                self._s3.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=data,
                    ContentType=content_type,
                    Metadata={NAME_META: name_metadata(name)},
                    IfNoneMatch="*",
                )
            except ClientError as error:
                if error.response.get("Error", {}).get("Code") != "PreconditionFailed":
                    raise  # else it is kept already, as it was checked then

        await self._run(key, put)

    async def remove(self, key: str) -> None:
        await self._run(key, lambda: self._s3.delete_object(Bucket=self.bucket, Key=key))

    async def download_url(self, key: str, name: str, content_type: str, expires_s: int) -> str:
        disposition = f"attachment; filename*=UTF-8''{quote(name, safe='')}"
        params = {
            "Bucket": self.bucket,
            "Key": key,
            "ResponseContentDisposition": disposition,
            "ResponseContentType": content_type,
            # One user's file: no cache on the way keeps it (S3 has no override for nosniff)
            "ResponseCacheControl": NO_STORE,
        }

        def sign() -> str:
            url: str = self._s3.generate_presigned_url(
                "get_object", Params=params, ExpiresIn=expires_s
            )
            return url

        return await self._run(key, sign)
