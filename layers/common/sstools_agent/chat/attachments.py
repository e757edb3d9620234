"""The files a chat message attaches: checked before the turn opens, kept when it is stored.

`ChatAttachments.checked` refuses (AttachmentRejected, nothing written) any file that is not the
caller's, is gone (expired or deleted), passes the limits, is of a type not allowed, or whose
bytes do not match its type; it answers each file as the model gets it, with the bytes it
checked. `keep` writes those bytes under `attachments/` (kept with the conversation; an upload
re-posted after the check cannot change them) and removes the upload (expired after a day). A
file a message attached before may be attached again: it is read where it is kept, and its
verdict is remembered (a kept file never changes), so it is not checked again in this process.

Files are checked one at a time, and one check at a time in the whole process (`_CHECKER`): a
message's five files, or parallel requests, never hold more than one file's check in memory.
"""

from __future__ import annotations

import asyncio
import threading
from collections import OrderedDict
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Final

from sstools_agent.domain.attachment_content import ModelAttachment, model_attachment
from sstools_agent.domain.attachments import (
    BINARY_TYPES,
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

_CHECKER: Final = ThreadPoolExecutor(max_workers=1, thread_name_prefix="file-check")
"""One file check at a time in the process: its memory is never multiplied by parallel turns.
A check waiting for its turn waits in this queue, holding no thread of the event loop's default
executor (which the router and the service token use for every turn)."""
KEPT_VERDICTS: Final = 512
"""Kept files whose checked form a process remembers (each at most a block of a few KB)."""

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


class _Verdicts:
    """The checked form of kept files, by key (a kept file is never replaced): the most recent
    `KEPT_VERDICTS`, without the bytes of images and PDFs."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kept: OrderedDict[tuple[str, int], ModelAttachment] = OrderedDict()

    def get(self, key: str, size: int) -> ModelAttachment | None:
        with self._lock:
            found = self._kept.get((key, size))
            if found is not None:
                self._kept.move_to_end((key, size))
            return found

    def put(self, key: str, size: int, model: ModelAttachment) -> None:
        with self._lock:
            self._kept[(key, size)] = ModelAttachment(model.info, model.block)
            while len(self._kept) > KEPT_VERDICTS:
                self._kept.popitem(last=False)


@dataclass(frozen=True, slots=True)
class ChatAttachments:
    """Checks and keeps the files of chat messages."""

    store: AttachmentStore
    limits: AttachmentLimits
    model_takes_files: bool = False
    """Whether images and PDFs go to the model as content blocks (Bedrock Converse)."""
    verdicts: _Verdicts = field(default_factory=_Verdicts, compare=False)

    async def checked(self, owner: str, file_ids: Sequence[str]) -> list[CheckedFile]:
        """Each file, in the order sent; AttachmentRejected for the first file that may not be
        sent (or too many of them, or one sent twice)."""
        if not file_ids:
            return []
        self.limits.check_count(len(file_ids))
        if len(set(file_ids)) != len(file_ids):
            raise AttachmentRejected("Один и тот же файл приложен дважды.", reason="duplicate")
        # One after another: a message's files are never all in memory being checked at once
        return [await self._checked(owner, each) for each in file_ids]

    async def _found(self, owner: str, file_id: str) -> tuple[str, StoredFile, bool]:
        """Where the file is: kept by an earlier message (what was checked then; an upload
        posted again under the same grant does not replace it), else uploaded; or not_found."""
        for key, kept in file_places(owner, file_id):
            stored = await self.store.stat(key)
            if stored is not None:
                return key, stored, kept
        raise AttachmentRejected(NOT_FOUND_TEXT, file_id=file_id, reason="not_found")

    async def _checked(self, owner: str, file_id: str) -> CheckedFile:
        # Between a look and a read the upload may move where kept files are (another tab's
        # message kept it): then it is looked for once more, and read where it is kept.
        for _ in range(2):
            key, stored, kept = await self._found(owner, file_id)
            name = stored.name or file_id
            content_type = allowed_type(name, stored.content_type)
            self.limits.check_size(name, stored.size)
            known = self.verdicts.get(key, stored.size) if kept else None
            if known is not None and not self._needs_bytes(content_type):
                return CheckedFile(known, b"", kept)  # a kept file is never kept again: no bytes
            data = await self.store.read(key)
            if data is not None:
                break
        else:
            raise AttachmentRejected(NOT_FOUND_TEXT, file_id=file_id, reason="not_found")
        info = AttachmentInfo(file_id, name, content_type, len(data))
        self.limits.check_size(name, info.size)
        if known is not None:
            return CheckedFile(ModelAttachment(info, known.block, data), data, kept)
        # CPU work: off the event loop, which streams other turns
        loop = asyncio.get_running_loop()
        model = await loop.run_in_executor(_CHECKER, self._read, info, data, key if kept else None)
        return CheckedFile(model, data, kept)

    def _needs_bytes(self, content_type: str) -> bool:
        return self.model_takes_files and content_type in BINARY_TYPES

    def _read(self, info: AttachmentInfo, data: bytes, kept_key: str | None) -> ModelAttachment:
        known = self.verdicts.get(kept_key, info.size) if kept_key else None
        if known is not None:  # checked by a parallel request while this one waited
            return ModelAttachment(
                info, known.block, data if self._needs_bytes(info.content_type) else None
            )
        model = model_attachment(info, data, model_takes_files=self.model_takes_files)
        if kept_key is not None:
            self.verdicts.put(kept_key, info.size, model)
        return model

    async def keep(self, owner: str, files: Sequence[CheckedFile]) -> None:
        """Keeps the message's files where attached files are kept, as they were checked."""
        await asyncio.gather(*(self._keep(owner, each) for each in files if not each.kept))

    async def _keep(self, owner: str, file: CheckedFile) -> None:
        info = file.info
        await self.store.keep(
            attached_key(owner, info.file_id), file.data, info.content_type, info.name
        )
        await self.store.remove(upload_key(owner, info.file_id))
