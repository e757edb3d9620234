"""File attachments: limits, where a file is kept, and why one is refused (docs/attachments.md).

A file's place is built from its owner and a random id, never from its name: `uploads/<owner
digest>/<id>` until a message attaches it, `attachments/<owner digest>/<id>` after. Ownership is
the key itself: another user's file id is under another prefix, so for this caller it does not
exist (the same answer as a missing file: ids do not leak). The bytes are checked by the chat
function (`attachment_content`), which has the magic-byte library; this module is what the REST
API needs too.
"""

from __future__ import annotations

import base64
import hashlib
import re
import unicodedata
from dataclasses import dataclass
from email.header import decode_header
from typing import Any, Final
from urllib.parse import unquote

DEFAULT_MAX_BYTES: Final = 10 * 1024 * 1024
DEFAULT_MAX_FILES: Final = 5
SCAN_WINDOW_BYTES: Final = 256 * 1024
"""What a file check reads, decodes or walks at once (in C): another turn waits at most that."""
MAX_NAME_CHARS: Final = 200
"""A file name's length limit, in characters (Unicode code points) of the name as kept
(`checked_name`); the page counts the same way (`web/src/ui/attachments.ts`, a shared table of
cases holds the two equal). Any 200 characters fit S3's metadata (`name_metadata`)."""
UPLOAD_EXPIRES_S: Final = 600
"""How long a presigned upload may start after it was given."""
DOWNLOAD_EXPIRES_S: Final = 300
"""How long a download link works."""
FILE_ID_PATTERN: Final = r"^[0-9a-f]{32}$"

TEXT_TYPES: Final = frozenset(
    {"text/plain", "text/csv", "application/json", "application/sql", "text/markdown"}
)
BINARY_TYPES: Final = frozenset({"image/png", "image/jpeg", "application/pdf"})
ALLOWED_TYPES: Final = TEXT_TYPES | BINARY_TYPES
TYPE_ALIASES: Final = {"text/x-sql": "application/sql", "application/x-sql": "application/sql"}
"""Other names browsers give an allowed type; the allowed name is what is kept."""
NAME_META: Final = "name"
"""The object metadata key that holds the file's name (`name_metadata`: S3 metadata is ASCII),
the only user metadata an attachment has."""
S3_USER_METADATA_BYTES: Final = 2048
"""S3's limit on an object's user metadata: the UTF-8 bytes of every key and value together."""
_NAME_META_PREFIX: Final = "=?UTF-8?B?"
_NAME_HEAD_CHARS, _NAME_TAIL_CHARS = 24, 16
"""What a refusal shows of a name too long: its start and its end (the extension, what tells
several long exports apart)."""
_UNSAFE_NAME: Final = re.compile(r"[/\\]")
_INVISIBLE: Final = frozenset({"Cc", "Cf", "Zl", "Zp"})
"""Controls, format characters (a right-to-left override) and line breaks: never in a name."""
_JOINERS: Final = frozenset({"\u200c", "\u200d"})
"""The format characters a name keeps: the zero-width non-joiner of Persian and Indic words, and
the joiner of emoji sequences (👨‍👩‍👧); they move no text."""
TEXT_CHARSETS: Final = frozenset({"utf-8", "utf8", "us-ascii"})
ATTACHMENTS_OFF: Final = "Файлы к сообщениям здесь не прикладываются."
"""What a deployment that takes no files (`ATTACHMENT_MAX_FILES` 0) says (the page, in the same
words: `web/src/ui/attachments.ts`)."""


class AttachmentRejected(ValueError):
    """A file that cannot be uploaded or sent (422 INVALID_ATTACHMENT, `str()` says why in the
    user's words, naming the file when there is one)."""

    def __init__(self, detail: str, *, file_id: str | None = None, reason: str = "invalid") -> None:
        super().__init__(detail)
        self.file_id, self.reason = file_id, reason


class AttachmentNotFound(LookupError):
    """No such file of this user (404 for a download: another user's id is not found either)."""


@dataclass(frozen=True, slots=True)
class AttachmentLimits:
    """What one file and one message may hold."""

    max_bytes: int = DEFAULT_MAX_BYTES
    max_files: int = DEFAULT_MAX_FILES

    def check_count(self, count: int) -> None:
        if count > 0 and self.max_files == 0:
            raise AttachmentRejected(ATTACHMENTS_OFF, reason="attachments_off")
        if count > self.max_files:
            raise AttachmentRejected(
                f"Можно приложить не больше {self.max_files} файлов к сообщению, "
                f"а приложено {count}.",
                reason="too_many_files",
            )

    def check_size(self, name: str, size: int) -> None:
        if size <= 0:
            raise AttachmentRejected(f"Файл «{name}» пуст.", reason="empty")
        if size > self.max_bytes:
            raise AttachmentRejected(
                f"Файл «{name}» больше {megabytes(self.max_bytes)}: его размер {megabytes(size)}.",
                reason="too_large",
            )


def megabytes(size: int) -> str:
    """A size as the user reads it: «10 МБ», «1.5 МБ», «12 КБ»."""
    if size >= 1024 * 1024:
        value = size / (1024 * 1024)
        return f"{value:.1f}".rstrip("0").rstrip(".") + " МБ"
    return f"{max(1, round(size / 1024))} КБ"


def allowed_type(name: str, declared: str) -> str:
    """The declared type as kept (an alias resolved); AttachmentRejected when not allowed."""
    kind, _, parameters = declared.partition(";")
    kind = kind.strip().lower()
    kind = TYPE_ALIASES.get(kind, kind)
    charset = re.search(r"charset\s*=\s*\"?([\w-]+)", parameters, re.IGNORECASE)
    if charset and charset.group(1).lower() not in TEXT_CHARSETS:
        raise AttachmentRejected(
            f"Файл «{name}» в кодировке {charset.group(1)}: можно приложить только UTF-8.",
            reason="type_not_allowed",
        )
    if kind not in ALLOWED_TYPES:
        raise AttachmentRejected(
            f"Файлы типа «{declared or 'неизвестный'}» нельзя приложить («{name}»). Можно: "
            "текст, CSV, JSON, SQL, Markdown, PNG, JPEG, PDF.",
            reason="type_not_allowed",
        )
    return kind


def checked_name(name: str) -> str:
    """A file name as shown and kept: one line, no path; AttachmentRejected when unusable."""
    visible = "".join(
        " " if unicodedata.category(ch) in _INVISIBLE and ch not in _JOINERS else ch
        for ch in unicodedata.normalize("NFC", name)
    )
    cleaned = " ".join(_UNSAFE_NAME.sub("_", visible).split())
    if not cleaned:
        raise AttachmentRejected("У файла нет имени.", reason="no_name")
    if len(cleaned) > MAX_NAME_CHARS:
        raise AttachmentRejected(
            f"Имя файла «{cleaned[:_NAME_HEAD_CHARS]}…{cleaned[-_NAME_TAIL_CHARS:]}» длиннее "
            f"{MAX_NAME_CHARS} символов (в нём {len(cleaned)}): сократите его.",
            reason="name_too_long",
        )
    return cleaned


def name_metadata(name: str) -> str:
    """A name as S3 metadata: its UTF-8 in base64, as an RFC 2047 word (the form S3 documents
    for text that is not ASCII). At most 4 bytes a character, 4/3 for base64: 200 characters
    of any script are at most 1080 bytes, within `S3_USER_METADATA_BYTES` (percent-encoding
    took 6 bytes for a Cyrillic letter, 12 for an emoji)."""
    return f"{_NAME_META_PREFIX}{base64.b64encode(name.encode()).decode()}?="


def name_from_metadata(value: str) -> str:
    """The name `name_metadata` wrote, or S3 answers for it (RFC 2047 in any of its forms), or a
    name written before it, percent-encoded (which never starts with `=?`: `=` was encoded)."""
    if not value.startswith("=?"):
        return unquote(value)
    return "".join(_decoded(part, charset) for part, charset in decode_header(value))


def _decoded(part: bytes | str, charset: str | None) -> str:
    if isinstance(part, str):
        return part
    try:
        return part.decode(charset or "utf-8", "replace")
    except LookupError:  # a charset Python does not know: the name's UTF-8 is what was written
        return part.decode("utf-8", "replace")


def owner_digest(owner: str) -> str:
    """The owner's part of a key: a digest, so no subject's characters reach a key."""
    return hashlib.sha256(owner.encode()).hexdigest()[:32]


def upload_key(owner: str, file_id: str) -> str:
    """Where an upload lands before a message attaches it (expired after a day)."""
    return f"uploads/{owner_digest(owner)}/{file_id}"


def attached_key(owner: str, file_id: str) -> str:
    """Where a file is kept once a message attaches it (kept with the conversation)."""
    return f"attachments/{owner_digest(owner)}/{file_id}"


def file_places(owner: str, file_id: str) -> tuple[tuple[str, bool], tuple[str, bool]]:
    """Where a file of `owner` may be, in the order it is looked for, and whether that place
    holds it as checked: kept by a message (immutable), else uploaded (not checked yet)."""
    return (attached_key(owner, file_id), True), (upload_key(owner, file_id), False)


@dataclass(frozen=True, slots=True)
class AttachmentInfo:
    """What a message records of a file, and what history and the page show."""

    file_id: str
    name: str
    content_type: str
    size: int

    def to_record(self) -> dict[str, Any]:
        return {
            "file_id": self.file_id,
            "name": self.name,
            "content_type": self.content_type,
            "size": self.size,
        }

    @classmethod
    def from_record(cls, data: Any) -> AttachmentInfo | None:
        """The record as a message stored it, or None when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("file_id"), str):
            return None
        return cls(
            data["file_id"],
            str(data.get("name") or ""),
            str(data.get("content_type") or ""),
            int(data.get("size") or 0),
        )


@dataclass(frozen=True, slots=True)
class StoredFile:
    """An object as the store reports it (HEAD): its size, type and the name it was given."""

    size: int
    content_type: str
    name: str


@dataclass(frozen=True, slots=True)
class PresignedUpload:
    """Where and how the browser POSTs a file: the URL and every form field, policy included."""

    url: str
    fields: dict[str, str]
