"""Conversations as the chat stores them: records, messages, and the stream's event ids."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Final

from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmRequired,
    ConfirmResolved,
    PermissionDenied,
    StreamToken,
    Text,
    ToolEnd,
    ToolError,
    ToolStart,
)
from sstools_agent.domain.ui_context import OBJECT_TYPE_LABELS

TITLE_CHARS: Final = 80
CONVERSATION_ID_PATTERN: Final = r"^[A-Za-z0-9-]{1,64}$"
"""What a conversation id may be, wherever a request names one (chat, cancel, REST)."""
_EVENT_ID: Final = re.compile(
    rf"^(?P<conversation>{CONVERSATION_ID_PATTERN[1:-1]}):(?P<seq>\d{{1,12}})$"
)


class ConversationBusy(Exception):
    """Another run holds the conversation (409)."""


class ConversationNotFound(Exception):
    """No such conversation for this user (404: existence does not leak)."""


class ConversationArchived(Exception):
    """The conversation was deleted (archived); it takes no new turns."""


class IdempotencyKeyReused(Exception):
    """An idempotency key already used for a different message (409)."""


class StoredItemTooLarge(ValueError):
    """A message or a single event whose JSON alone passes the item limit (large tool outputs
    are kept by reference before they get here, so this names a defect, not a big answer)."""


class InvalidPageToken(ValueError):
    """A page token this store did not issue for this listing (the REST API answers 400)."""


@dataclass(frozen=True, slots=True)
class Page[T]:
    """One page of a listing, and the store's opaque token for the next one (None on the last
    page). Only the store that issued a token reads it; callers pass it back unchanged."""

    items: list[T]
    next_token: str | None


@dataclass(frozen=True, slots=True)
class ConversationSubject:
    """What a conversation is about: the object and environment of the page it started on. It is
    kept as it was at the start (a later turn from another page moves `ui_context`, not this),
    so the conversation list can say what each conversation was about."""

    object_type: str | None = None
    object_id: str | None = None
    object_name: str | None = None
    env_id: str | None = None

    @classmethod
    def of(cls, ui_context: Mapping[str, Any] | None) -> ConversationSubject | None:
        """The subject of a (validated) page context; None when it names neither an object nor
        an environment."""
        if not ui_context:
            return None
        subject = cls(*(_text(ui_context.get(key)) for key in _SUBJECT_CONTEXT_KEYS))
        return subject if subject.object_type or subject.env_id else None

    @classmethod
    def from_record(cls, data: object) -> ConversationSubject | None:
        """The subject as a store kept it (`to_record`); None for anything else."""
        if not isinstance(data, Mapping):
            return None
        return cls.of({key: data.get(field) for key, field in _SUBJECT_RECORD_KEYS.items()})

    def to_record(self) -> dict[str, str | None]:
        """The subject as stores keep it and the REST API answers it."""
        return {field: getattr(self, field) for field in _SUBJECT_RECORD_KEYS.values()}

    def search_text(self) -> str:
        """The words a search may find it by: the object's type as the page names it, its name,
        its id and the environment."""
        label = OBJECT_TYPE_LABELS.get(self.object_type or "", self.object_type or "")
        parts = (label, self.object_name, f"#{self.object_id}" if self.object_id else None)
        return " ".join(part for part in (*parts, self.env_id) if part)


_SUBJECT_CONTEXT_KEYS: Final = ("objectType", "objectId", "objectName", "envId")
_SUBJECT_RECORD_KEYS: Final = dict(
    zip(_SUBJECT_CONTEXT_KEYS, ("object_type", "object_id", "object_name", "env_id"), strict=True)
)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class MessageRole(StrEnum):
    USER = "user"
    ASSISTANT = "assistant"


@dataclass(frozen=True, slots=True)
class Conversation:
    """A conversation's record (not its messages)."""

    conversation_id: str
    owner: str
    title: str
    created_at: str
    updated_at: str
    is_archived: bool = False
    ui_context: dict[str, Any] | None = None
    last_seq: int = 0
    locked_by: str | None = None
    locked_until: float | None = None
    locked_at: float | None = None
    """When the run holding the lock took it (epoch seconds): the multi-tab gate's "since"."""
    pending_confirmation_id: str | None = None
    subject: ConversationSubject | None = None
    """What the conversation is about (the page it started on); None before it was kept."""

    @classmethod
    def started(
        cls, conversation_id: str, owner: str, title: str, ui_context: dict[str, Any] | None
    ) -> Conversation:
        """A new conversation, now, about the page it starts on."""
        at = now_iso()
        subject = ConversationSubject.of(ui_context)
        return cls(conversation_id, owner, title, at, at, ui_context=ui_context, subject=subject)

    def search_key(self) -> str:
        """What a search of the list looks in: its title and its subject, case-folded."""
        subject = self.subject.search_text() if self.subject else ""
        return title_search_key(f"{self.title} {subject}".strip())

    def is_running(self, now: float) -> bool:
        """Whether a run holds the conversation (its lease not yet lapsed)."""
        return self.locked_by is not None and (self.locked_until or 0) > now

    @classmethod
    def asked_for(
        cls, conversation_id: str, owner: str, ui_context: dict[str, Any] | None
    ) -> Conversation:
        """An existing conversation as a turn asks the lock for it, unread: by id and owner
        (and the page the turn comes from). The lock's conditional write checks the rest and
        answers the stored record, so the turn needs no read before it."""
        return cls(conversation_id, owner, "", "", "", ui_context=ui_context)


def turn_refusal(
    conversation_id: str, owner: str, current: Conversation | None
) -> ConversationNotFound | ConversationArchived | ConversationBusy:
    """Why a conditional write that takes a conversation for a turn (or an append) was refused,
    told from the record as it was at that moment: missing or another user's (alike, so ids do
    not leak), archived, or held by another run."""
    if current is None or current.owner != owner:
        return ConversationNotFound(conversation_id)
    if current.is_archived:
        return ConversationArchived(conversation_id)
    return ConversationBusy(conversation_id)


@dataclass(frozen=True, slots=True)
class StoredMessage:
    """One message of the history: user text, or the assistant's turn with its tool activity."""

    message_id: str
    role: MessageRole
    content: str
    created_at: str
    seq: int
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    confirmations: list[dict[str, Any]] = field(default_factory=list)
    ui_context: dict[str, Any] | None = None
    status: str = "complete"
    """`interrupted` when the client went away or the run was cancelled mid-turn."""
    attachments: list[dict[str, Any]] = field(default_factory=list)
    """A user message's files: `{file_id, name, content_type, size}` (domain.attachments)."""

    @classmethod
    def from_record(cls, data: Mapping[str, Any], *, key: str, seq: int) -> StoredMessage:
        """The message from its stored JSON, whatever version wrote it: unknown fields are
        ignored, missing ones defaulted (`key` and `seq` come from the item's sort key), and an
        item an earlier version stored as a summary (`stored_summary`) is read as far as it goes,
        so one odd item never makes a whole history unreadable."""
        if data.get("stored_summary") and isinstance(data.get("value"), Mapping):
            data = data["value"]

        def listed(value: Any) -> list[dict[str, Any]]:
            if isinstance(value, Mapping) and "items" in value:  # a summarised list
                value = value["items"]
            return (
                [item for item in value if isinstance(item, dict)]
                if isinstance(value, list)
                else []
            )

        role = data.get("role")
        context = data.get("ui_context")
        return cls(
            message_id=str(data.get("message_id") or key),
            role=MessageRole(role) if role in set(MessageRole) else MessageRole.ASSISTANT,
            content=str(data.get("content") or ""),
            created_at=str(data.get("created_at") or ""),
            seq=int(data.get("seq") or seq),
            tool_calls=listed(data.get("tool_calls")),
            confirmations=listed(data.get("confirmations")),
            ui_context=dict(context) if isinstance(context, Mapping) else None,
            status=str(data.get("status") or "complete"),
            attachments=listed(data.get("attachments")),
        )


def iso_time(epoch_s: float) -> str:
    """A time as the conversation records write it: ISO 8601, UTC, milliseconds, `Z`."""
    moment = datetime.fromtimestamp(epoch_s, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_iso() -> str:
    """Now, as `iso_time` writes it."""
    return iso_time(datetime.now(UTC).timestamp())


def title_search_key(title: str) -> str:
    """What title search compares: the title case-folded (so «Отчёт» finds «ОТЧЁТ»)."""
    return title.casefold()


MAX_SEARCH_WORDS: Final = 8
"""A search's words beyond these are ignored (each is one more filter on every item read)."""


def search_words(search: str) -> list[str]:
    """A search's words as `Conversation.search_key` is compared: a conversation is found when
    its key contains every one of them, in any order."""
    return list(dict.fromkeys(title_search_key(search).split()))[:MAX_SEARCH_WORDS]


def title_from(message: str) -> str:
    """A conversation's title: its first message on one line, cut at a word."""
    line = " ".join(message.split())
    if len(line) <= TITLE_CHARS:
        return line or "Новый разговор"
    cut = line[: TITLE_CHARS - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut) + "…"


def event_id(conversation_id: str, seq: int) -> str:
    """The SSE id of an event: the conversation and an increasing sequence number."""
    return f"{conversation_id}:{seq}"


def parse_event_id(value: str, conversation_id: str) -> int | None:
    """The sequence number in a Last-Event-ID of this conversation, or None if it is not one."""
    match = _EVENT_ID.match(value.strip())
    if match is None or match.group("conversation") != conversation_id:
        return None
    return int(match.group("seq"))


class TurnRecorder:
    """Collects what a turn must leave in the history from the events it streamed (as stored:
    a large tool output is its summary and its reference, see `domain.tool_outputs`)."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.tool_calls: dict[str, dict[str, Any]] = {}
        self.confirmations: list[dict[str, Any]] = []
        self._last_was_text = False

    def record(self, event: ChatEvent) -> None:
        """Takes note of one event."""
        match event:
            case StreamToken():
                # The model's words after a plain message (an outcome, a cancellation) start a
                # line of their own, as the page shows them apart
                after_text = self.text and self._last_was_text
                self.text.append(("\n" if after_text else "") + event.token)
                self._last_was_text = False
            case Text():
                self.text.append(("\n" if self.text else "") + event.text)
                self._last_was_text = True
            case ToolStart():
                self.tool_calls[event.tool_call_id] = {
                    "tool_call_id": event.tool_call_id,
                    "tool": event.tool,
                    "input": event.tool_input,
                    "status": "started",
                }
            case ToolEnd() | ToolError() | PermissionDenied():
                self._closed(event)
            case ConfirmRequired() | ConfirmResolved():
                self.confirmations.append(event.metadata)

    def _closed(self, event: ToolEnd | ToolError | PermissionDenied) -> None:
        call = self.tool_calls.setdefault(
            event.tool_call_id, {"tool_call_id": event.tool_call_id, "tool": event.tool}
        )
        call["status"] = str(event.type)
        match event:
            case ToolEnd():
                call["output"] = event.output
                # A large output is kept by reference: the summary above, the whole elsewhere.
                if event.reference is not None:
                    call |= event.reference.to_fields()
            case ToolError():
                call["error"] = event.error
                call["code"] = event.code
            case PermissionDenied():
                call["required_role"] = event.required_role

    @property
    def answer(self) -> str:
        return "".join(self.text)


class NotRunning(Exception):
    """A cancel for a conversation in which no answer runs (409)."""
