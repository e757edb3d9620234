"""The files a chat message attaches: checked before the turn opens, kept when it is stored.

`ChatAttachments.checked` refuses (AttachmentRejected, nothing written) any file that is not the
caller's, is gone (expired or deleted), passes the limits, is of a type not allowed, or whose
bytes do not match its type; it answers each file as the model gets it. `keep` moves the
message's files from `uploads/` (expired after a day) to `attachments/` (kept).
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
    allowed_type,
    attached_key,
    upload_key,
)
from sstools_agent.domain.ports import AttachmentStore


@dataclass(frozen=True, slots=True)
class ChatAttachments:
    """Checks and keeps the files of chat messages."""

    store: AttachmentStore
    limits: AttachmentLimits
    model_takes_files: bool = False
    """Whether images and PDFs go to the model as content blocks (Bedrock Converse)."""

    async def checked(self, owner: str, file_ids: Sequence[str]) -> list[ModelAttachment]:
        """Each file as the model gets it, in the order sent; AttachmentRejected for the first
        file that may not be sent (or too many of them, or one sent twice)."""
        if not file_ids:
            return []
        self.limits.check_count(len(file_ids))
        if len(set(file_ids)) != len(file_ids):
            raise AttachmentRejected("Один и тот же файл приложен дважды.", reason="duplicate")
        return list(await asyncio.gather(*(self._checked(owner, each) for each in file_ids)))

    async def _checked(self, owner: str, file_id: str) -> ModelAttachment:
        key = upload_key(owner, file_id)
        stored = await self.store.stat(key)
        if stored is None:
            raise AttachmentRejected(
                "Файл не найден: он удалён, его срок хранения истёк или он загружен другим "
                "пользователем. Приложите его ещё раз.",
                file_id=file_id,
                reason="not_found",
            )
        name = stored.name or file_id
        content_type = allowed_type(name, stored.content_type)
        self.limits.check_size(name, stored.size)
        data = await self.store.read(key)
        if data is None:  # removed between the two reads
            raise AttachmentRejected(
                f"Файл «{name}» удалён. Приложите его ещё раз.", file_id=file_id, reason="not_found"
            )
        info = AttachmentInfo(file_id, name, content_type, len(data))
        self.limits.check_size(name, info.size)
        # Up to a second of CPU for a 10 MB CSV: off the event loop, which streams other turns
        return await asyncio.to_thread(self._read, info, data)

    def _read(self, info: AttachmentInfo, data: bytes) -> ModelAttachment:
        text = check_content(info, data)
        return model_attachment(info, data, text, model_takes_files=self.model_takes_files)

    async def keep(self, owner: str, attachments: Sequence[AttachmentInfo]) -> None:
        """Moves the message's files where attached files are kept."""
        await asyncio.gather(
            *(
                self.store.keep(upload_key(owner, each.file_id), attached_key(owner, each.file_id))
                for each in attachments
            )
        )
