"""Request and response bodies of the REST API (they are its OpenAPI schema too)."""

from __future__ import annotations

from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints

from sstools_agent.domain.attachments import (
    ALLOWED_TYPES,
    MAX_NAME_CHARS,
    AttachmentInfo,
    AttachmentLimits,
)
from sstools_agent.domain.conversations import (
    CONVERSATION_ID_PATTERN,
    Conversation,
    StoredMessage,
)
from sstools_agent.domain.cursors import MAX_CURSOR_CHARS
from sstools_agent.domain.environments import EnvironmentTier
from sstools_agent.rest.files import GrantedUpload

IDEMPOTENCY_KEY_PATTERN: Final = r"^[A-Za-z0-9_.:-]{8,128}$"
TOOL_CALL_ID_PATTERN: Final = r"^[A-Za-z0-9_.:-]{1,128}$"
"""Tool call ids as models write them (`call_…`, `tooluse_…`, uuids)."""
MAX_APPENDED_CHARS: Final = 16_000
"""An appended message (either role) may be longer than what a user types into the chat."""
MAX_TITLE_CHARS: Final = 200

Title = Annotated[
    str, StringConstraints(strip_whitespace=True, min_length=1, max_length=MAX_TITLE_CHARS)
]


MAX_PAGE: Final = 100
Cursor = Annotated[
    str | None,
    Field(min_length=1, max_length=MAX_CURSOR_CHARS, description="`next_cursor` of the last page"),
]


class ConversationsQuery(BaseModel):
    """Query of the conversation list (unknown parameters are refused)."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(default=20, ge=1, le=MAX_PAGE)
    cursor: Cursor = None
    q: str | None = Field(
        default=None,
        max_length=200,
        description="Words the title or the subject (object type, name, id, environment) "
        "contains, every one, in any order and any case",
    )
    include_archived: bool = False


class HistoryQuery(BaseModel):
    """Query of a conversation's history (unknown parameters are refused)."""

    model_config = ConfigDict(extra="forbid")

    conversation_id: str = Field(pattern=CONVERSATION_ID_PATTERN)
    limit: int = Field(default=50, ge=1, le=MAX_PAGE)
    cursor: Cursor = None


class ErrorBody(BaseModel):
    """Every error: a code from the taxonomy and what went wrong."""

    code: str
    detail: str


class CreateConversationBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    title: Title | None = None
    """Defaults to «Новый разговор»."""
    ui_context: Any = None
    """Validated on its own, as the chat validates it (INVALID_CONTEXT with its problems)."""
    """The page the conversation starts from (validated like the chat's)."""


class SubjectView(BaseModel):
    """What a conversation is about: the object and environment of the page it started on (a
    later turn from another page does not change it). The page composes the list's row from it;
    the object type is an id (`dashboard`, `dataset`, `migration`), not words."""

    object_type: str | None
    object_id: str | None
    object_name: str | None
    env_id: str | None

    @classmethod
    def of(cls, conversation: Conversation) -> SubjectView | None:
        subject = conversation.subject
        return cls(**subject.to_record()) if subject is not None else None


class ConversationCreated(BaseModel):
    id: str
    title: str
    created_at: str
    subject: SubjectView | None = None
    """Null when the conversation started on no page (or before subjects were kept)."""


class ConversationSummary(BaseModel):
    id: str
    title: str
    """The first request, on one line (or the title given at creation)."""
    created_at: str
    updated_at: str
    """The last activity (the list's order), ISO 8601 UTC: the page formats it in the reader's
    time zone."""
    is_archived: bool
    subject: SubjectView | None = None
    """Null when the conversation started on no page (or before subjects were kept)."""

    @classmethod
    def of(cls, conversation: Conversation) -> ConversationSummary:
        return cls(
            id=conversation.conversation_id,
            title=conversation.title,
            created_at=conversation.created_at,
            updated_at=conversation.updated_at,
            is_archived=conversation.is_archived,
            subject=SubjectView.of(conversation),
        )


class ConversationPage(BaseModel):
    items: list[ConversationSummary]
    next_cursor: str | None
    """Pass as `cursor` for the next page; null on the last page."""


class AttachmentView(BaseModel):
    file_id: str
    name: str
    content_type: str
    size: int


class UploadBody(BaseModel):
    """What the browser will upload: the file's name, its declared type and its size."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=1000)
    content_type: str = Field(max_length=200)
    size: int = Field(ge=0, strict=True)
    """Bytes, a JSON integer (not `"10"`, `10.0` or `true`)."""
    conversation_id: str | None = Field(default=None, pattern=CONVERSATION_ID_PATTERN)
    """The conversation the file is for, if the page has one (informational)."""


class PresignedPost(BaseModel):
    url: str
    fields: dict[str, str]
    """Every form field, in this order, before the file (the last field, `file`)."""


class UploadAnswer(BaseModel):
    file_id: str
    upload: PresignedPost
    expires_at: str
    """The upload must start before this."""
    max_bytes: int

    @classmethod
    def of(cls, granted: GrantedUpload) -> UploadAnswer:
        upload = PresignedPost(url=granted.upload.url, fields=granted.upload.fields)
        return cls(
            file_id=granted.file_id,
            upload=upload,
            expires_at=granted.expires_at,
            max_bytes=granted.max_bytes,
        )


class FileLimitsAnswer(BaseModel):
    """What this deployment lets a person attach: the page refuses what falls outside before
    asking for an upload, in the same words as the server."""

    max_bytes: int
    """One file at most (`ATTACHMENT_MAX_BYTES`)."""
    max_files: int
    """Files in one message at most (`ATTACHMENT_MAX_FILES`)."""
    max_name_chars: int
    """A name's characters at most, counted as `checked_name` keeps it (code points: an emoji is
    one); any script fits, the page counts the same way."""
    content_types: list[str]
    """The types a file may be declared as."""

    @classmethod
    def of(cls, limits: AttachmentLimits) -> FileLimitsAnswer:
        return cls(
            max_bytes=limits.max_bytes,
            max_files=limits.max_files,
            max_name_chars=MAX_NAME_CHARS,
            content_types=sorted(ALLOWED_TYPES),
        )


class DownloadAnswer(BaseModel):
    url: str
    """A presigned GET serving the file as an attachment."""
    expires_at: str


class HistoryMessage(BaseModel):
    id: str
    role: Literal["user", "assistant"]
    content: str
    created_at: str
    seq: int
    tool_calls: list[dict[str, Any]]
    """Each call as the chat streamed it: tool_call_id, tool, input, status, output or error."""
    confirmations: list[dict[str, Any]]
    """Cards shown (confirm_required) and their outcomes (confirm_resolved)."""
    ui_context: dict[str, Any] | None
    status: str
    """`complete`, or `interrupted` when the answer was cut off."""
    attachments: list[AttachmentView] = Field(default_factory=list)
    """A user message's files (download: `GET /api/assistant/files/{file_id}/download`)."""

    @classmethod
    def of(cls, message: StoredMessage) -> HistoryMessage:
        return cls(
            id=message.message_id,
            role=message.role.value,
            content=message.content,
            created_at=message.created_at,
            seq=message.seq,
            tool_calls=message.tool_calls,
            confirmations=message.confirmations,
            ui_context=message.ui_context,
            status=message.status,
            attachments=[
                AttachmentView(**info.to_record())
                for info in map(AttachmentInfo.from_record, message.attachments)
                if info is not None
            ],
        )


class HistoryPage(BaseModel):
    conversation_id: str
    is_archived: bool
    items: list[HistoryMessage]
    next_cursor: str | None


class AppendMessageBody(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant"]
    content: Annotated[str, StringConstraints(min_length=1, max_length=MAX_APPENDED_CHARS)]
    ui_context: Any = None
    """Validated on its own, as the chat validates it (INVALID_CONTEXT with its problems)."""


class ArchivedConversation(BaseModel):
    id: str
    is_archived: bool


class ConversationActivity(BaseModel):
    """The multi-tab gate: whether an answer is running, since when, and any waiting card."""

    conversation_id: str
    active: bool
    since: str | None
    lease_until: str | None
    pending_confirmation_id: str | None


class ServiceTokenRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    client_id: Annotated[str, StringConstraints(min_length=1, max_length=128)]
    client_secret: Annotated[str, StringConstraints(min_length=1, max_length=512)]


class ServiceTokenResponse(BaseModel):
    access_token: str
    token_type: Literal["Bearer"] = "Bearer"  # noqa: S105 (the OAuth token type)
    expires_in: int
    expires_at: int
    """Epoch seconds."""


class Jwks(BaseModel):
    keys: list[dict[str, Any]] = Field(description="RS256 public keys (RFC 7517)")


class EnvironmentItem(BaseModel):
    """One environment the page's selector offers: its id and how much is at stake in it."""

    id: str
    tier: EnvironmentTier


class EnvironmentList(BaseModel):
    """The deployment's environments (`KNOWN_ENVIRONMENTS`), in declaration order."""

    items: list[EnvironmentItem]


class StartersQuery(BaseModel):
    """The page a new conversation starts on (unknown parameters are refused)."""

    model_config = ConfigDict(extra="forbid")

    object_type: str | None = Field(
        default=None, max_length=32, description="`dashboard`, `dataset`, `migration` or none"
    )
    env_id: str | None = Field(default=None, max_length=64, description="A known environment")


class StarterItem(BaseModel):
    text: str
    """The question, in Russian, as a person would ask it (the page sends it as a message)."""
    tool: str
    """The catalog tool it leads to (for tests and tooltips; the page does not show it)."""


class StarterList(BaseModel):
    """Up to three questions, in the order the page shows them."""

    items: list[StarterItem]
