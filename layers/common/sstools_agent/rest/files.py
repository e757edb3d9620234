"""The REST API's file use cases: an upload's presigned POST, and an owner's download link."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Final

from sstools_agent.domain.attachments import (
    DOWNLOAD_EXPIRES_S,
    UPLOAD_EXPIRES_S,
    AttachmentLimits,
    AttachmentNotFound,
    PresignedUpload,
    allowed_type,
    checked_name,
    file_places,
    upload_key,
)
from sstools_agent.domain.conversations import iso_time
from sstools_agent.domain.ports import AttachmentStore

UNCHECKED: Final = "application/octet-stream"


@dataclass(frozen=True, slots=True)
class GrantedUpload:
    """A file id and how to upload its bytes, until `expires_at`."""

    file_id: str
    upload: PresignedUpload
    expires_at: str
    max_bytes: int


@dataclass(frozen=True, slots=True)
class DownloadLink:
    url: str
    expires_at: str


@dataclass(frozen=True, slots=True)
class FilesApi:
    """Uploads and downloads of the files users attach (docs/attachments.md)."""

    store: AttachmentStore
    limits: AttachmentLimits

    async def request_upload(
        self, owner: str, name: str, content_type: str, size: int
    ) -> GrantedUpload:
        """A new file id under the owner's prefix and a POST that may upload at most `size`
        bytes of `content_type` to it; AttachmentRejected for a name, type or size refused."""
        self.limits.check_count(1)  # a deployment that takes no files grants no uploads
        shown = checked_name(name)
        kind = allowed_type(shown, content_type)
        self.limits.check_size(shown, size)
        file_id = uuid.uuid4().hex
        upload = await self.store.presigned_upload(
            upload_key(owner, file_id), kind, size, shown, UPLOAD_EXPIRES_S
        )
        return GrantedUpload(file_id, upload, iso_time(time.time() + UPLOAD_EXPIRES_S), size)

    async def download(self, owner: str, file_id: str) -> DownloadLink:
        """A short-lived link that serves the owner's file as an attachment; AttachmentNotFound
        for a file that is not the owner's or is gone."""
        # A kept file was checked and is served as its type; an upload no message took yet is
        # not checked, so it is served as bytes
        for key, checked in file_places(owner, file_id):
            stored = await self.store.stat(key)
            if stored is not None:
                served_as = stored.content_type if checked else UNCHECKED
                url = await self.store.download_url(
                    key, stored.name or file_id, served_as, DOWNLOAD_EXPIRES_S
                )
                return DownloadLink(url, iso_time(time.time() + DOWNLOAD_EXPIRES_S))
        raise AttachmentNotFound(file_id)
