"""The chat request body (docs/chat-protocol.md), validated before anything runs."""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sstools_agent.domain.attachments import FILE_ID_PATTERN
from sstools_agent.domain.conversations import CONVERSATION_ID_PATTERN

MAX_MESSAGE_CHARS: Final = 8000
"""What a user may type into one chat message."""


MAX_LISTED_FILES: Final = 20
"""Bound of the request's list; the configured limit (5 by default) is checked with a reason."""


class FileRef(BaseModel):
    """A file uploaded through `POST /api/assistant/files`, by its id."""

    model_config = ConfigDict(extra="forbid")

    file_id: str = Field(pattern=FILE_ID_PATTERN)


class ChatRequestBody(BaseModel):
    """`{message, files, conversation_id, action, confirmation_id, ui_context}`; a message with
    files may have no text."""

    model_config = ConfigDict(extra="forbid")

    message: str | None = Field(default=None, max_length=MAX_MESSAGE_CHARS)
    files: list[FileRef] = Field(default_factory=list, max_length=MAX_LISTED_FILES)
    conversation_id: str | None = Field(default=None, pattern=CONVERSATION_ID_PATTERN)
    action: Literal["confirm", "deny", "edit", "resume", "retry", "check_status"] | None = None
    confirmation_id: str | None = Field(default=None, max_length=128)
    edited_args: dict[str, Any] | None = None
    """For `edit`: the card's arguments, replaced in full (the tool stays the card's)."""
    ui_context: Any = None
    """Validated on its own (typed rejection reasons and an audit record): see ui_context.py."""
    last_event_id: str | None = Field(default=None, max_length=200)
    """For `resume` when the client cannot send the Last-Event-ID header."""
    tool_call_id: str | None = Field(default=None, max_length=200)
    """For `retry`: the failed read of this conversation to run again; for `check_status`: the
    write whose answer never came, whose status check runs (domain.read_retries)."""

    @model_validator(mode="after")
    def _coherent(self) -> ChatRequestBody:
        if self.files and self.action is not None:
            raise ValueError(f"action {self.action!r} takes no files; send them with a message")
        if self.action is None and not (self.message and self.message.strip()) and not self.files:
            raise ValueError("message must not be empty")
        if self.action is not None and self.conversation_id is None:
            raise ValueError(f"action {self.action!r} needs a conversation_id")
        if self.action in ("confirm", "deny", "edit") and not self.confirmation_id:
            raise ValueError(f"action {self.action!r} needs the card's confirmation_id")
        if (self.action in ("retry", "check_status")) != (self.tool_call_id is not None):
            raise ValueError(
                "tool_call_id comes with action 'retry' or 'check_status', and only with them"
            )
        if (self.action == "edit") != (self.edited_args is not None):
            raise ValueError("edited_args comes with action 'edit', and only with it")
        if self.action is not None and (self.message or "").strip().lower() not in (
            "",
            self.action,
        ):
            # An answer to a card (or a replay) carries no text of its own: it would be dropped
            # unread. The seed's client sends the action's own name as the message; that is kept.
            raise ValueError(
                f"action {self.action!r} takes no message; send the message on its own after it"
            )
        return self


class CancelBody(BaseModel):
    """`{conversation_id}` of the run to stop."""

    model_config = ConfigDict(extra="forbid")

    conversation_id: str = Field(pattern=CONVERSATION_ID_PATTERN)
