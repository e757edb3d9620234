"""`domain.ports.PolicyObjectReader` on one versioned S3 object (template.yaml `PolicyObjectKey`
in `PolicyBucket`): the function may read that object and nothing else of the bucket."""

from __future__ import annotations

from typing import Final

from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.domain.policy_loading import PolicyObject, PolicyObjectUnreadable

READ_CONFIG: Final = Config(connect_timeout=2, read_timeout=3, retries={"max_attempts": 2})
"""A read runs at init and then on a thread of its own; a stuck one must still end, and the
set in force decides meanwhile (a few seconds late is harmless, a minute's TTL is the norm)."""


class S3PolicyReader:
    """Reads the policy object; its version is S3's VersionId (the ETag where unversioned)."""

    def __init__(
        self, bucket: str, key: str, *, region: str, endpoint_url: str | None = None
    ) -> None:
        self.bucket = bucket
        self.key = key
        self._s3 = aws_session(region).client("s3", endpoint_url=endpoint_url, config=READ_CONFIG)

    def read(self) -> PolicyObject:
        try:
            response = self._s3.get_object(Bucket=self.bucket, Key=self.key)
            text = response["Body"].read().decode("utf-8")
        except (ClientError, BotoCoreError, UnicodeDecodeError) as error:
            raise PolicyObjectUnreadable(f"s3://{self.bucket}/{self.key}: {error}") from error
        version = response.get("VersionId") or str(response.get("ETag", ""))
        return PolicyObject(text, version)
