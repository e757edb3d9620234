"""The files a chat message attaches: checked before the turn opens, kept when it is stored.

`ChatAttachments.checked` refuses (AttachmentRejected, nothing written) any file that is not the
caller's, is gone (expired or deleted), passes the limits, is of a type not allowed, or whose
bytes do not match its type; it answers each file as the model gets it, with the bytes it
checked. `keep` writes those bytes under `attachments/` (kept with the conversation; an upload
re-posted after the check cannot change them) and removes the upload (expired after a day). A
file a message attached before may be attached again: it is read where it is kept.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from sstools_agent.domain.attachment_content import ModelAttachment, check_content, model_attachment
from sstools_agent.domain.attachments import (
    AttachmentInfo,
    AttachmentLimits,
    AttachmentRejected,
    StoredFile,
    allowed_type,
    attached_key,
    file_places,
    upload_key,
)
from sstools_agent.domain.ports import AttachmentStore

NOT_FOUND_TEXT = (
    "Файл не найден: он удалён, его срок хранения истёк или он загружен другим "
    "пользователем. Приложите его ещё раз."
)


@dataclass(frozen=True, slots=True)
class CheckedFile:
    """A file that may be sent: as the model gets it, the bytes checked, and whether a message
    attached it before (then it is kept already)."""

    model: ModelAttachment
    data: bytes
    kept: bool

    @property
    def info(self) -> AttachmentInfo:
        return self.model.info


@dataclass(frozen=True, slots=True)
class ChatAttachments:
    """Checks and keeps the files of chat messages."""

    store: AttachmentStore
    limits: AttachmentLimits
    model_takes_files: bool = False
    """Whether images and PDFs go to the model as content blocks (Bedrock Converse)."""

    async def checked(self, owner: str, file_ids: Sequence[str]) -> list[CheckedFile]:
        """Each file, in the order sent; AttachmentRejected for the first file that may not be
        sent (or too many of them, or one sent twice)."""
        if not file_ids:
            return []
        self.limits.check_count(len(file_ids))
        if len(set(file_ids)) != len(file_ids):
            raise AttachmentRejected("Один и тот же файл приложен дважды.", reason="duplicate")
        return list(await asyncio.gather(*(self._checked(owner, each) for each in file_ids)))

    async def _found(self, owner: str, file_id: str) -> tuple[str, StoredFile, bool]:
        """Where the file is: kept by an earlier message (what was checked then; an upload
        posted again under the same grant does not replace it), else uploaded; or not_found."""
        for key, kept in file_places(owner, file_id):
            stored = await self.store.stat(key)
            if stored is not None:
                return key, stored, kept
        raise AttachmentRejected(NOT_FOUND_TEXT, file_id=file_id, reason="not_found")

    async def _checked(self, owner: str, file_id: str) -> CheckedFile:
        key, stored, kept = await self._found(owner, file_id)
        name = stored.name or file_id
        content_type = allowed_type(name, stored.content_type)
        self.limits.check_size(name, stored.size)
        data = await self.store.read(key)
        if data is None:  # removed between the two reads
            raise AttachmentRejected(NOT_FOUND_TEXT, file_id=file_id, reason="not_found")
        info = AttachmentInfo(file_id, name, content_type, len(data))
        self.limits.check_size(name, info.size)
        # Up to seconds of CPU for a large file: off the event loop, which streams other turns
        model = await asyncio.to_thread(self._read, info, data)
        return CheckedFile(model, data, kept)

    def _read(self, info: AttachmentInfo, data: bytes) -> ModelAttachment:
        text = check_content(info, data)
        return model_attachment(info, data, text, model_takes_files=self.model_takes_files)

    async def keep(self, owner: str, files: Sequence[CheckedFile]) -> None:
        """Keeps the message's files where attached files are kept, as they were checked."""
        await asyncio.gather(*(self._keep(owner, each) for each in files if not each.kept))

    async def _keep(self, owner: str, file: CheckedFile) -> None:
        info = file.info
        await self.store.keep(
            attached_key(owner, info.file_id), file.data, info.content_type, info.name
        )
        await self.store.remove(upload_key(owner, info.file_id))
