"""The stream protocol's events, defined once (design.md, "Stream protocol").

Every event is a ChatMessage-shaped object `{role, content, metadata: {type, ...}}`; a plain answer
has no `type`. The chat function adds the SSE `id`; everything else is built here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal

from sstools_agent.domain.errors import ErrorCode


class EventType(StrEnum):
    """`metadata.type` of a stream event."""

    STREAM_TOKEN = "stream_token"  # noqa: S105 (an event name, not a secret)
    TOOL_START = "tool_start"
    TOOL_END = "tool_end"
    TOOL_ERROR = "tool_error"
    CONFIRM_REQUIRED = "confirm_required"
    CONFIRM_RESOLVED = "confirm_resolved"
    PERMISSION_DENIED = "permission_denied"
    ERROR = "error"
    STREAM_END = "stream_end"


class ConfirmationResult(StrEnum):
    """How a pending confirmation ended."""

    CONFIRMED = "confirmed"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


@dataclass(frozen=True, slots=True)
class ChatEvent:
    """One event of the stream, shaped like the seed's ChatMessage.

    A plain dataclass, not a pydantic model: one is built per streamed token (see `make bench`).
    """

    content: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    role: Literal["assistant"] = "assistant"

    @property
    def type(self) -> EventType | None:
        """The event's type; None for plain content."""
        value = self.metadata.get("type")
        return EventType(value) if value else None

    @classmethod
    def token(cls, token: str) -> ChatEvent:
        """A piece of the answer, to append to the last assistant message."""
        return cls(metadata={"type": EventType.STREAM_TOKEN, "token": token})

    @classmethod
    def text(cls, content: str) -> ChatEvent:
        """A whole message of plain text."""
        return cls(content=content)

    @classmethod
    def tool_start(cls, tool: str, tool_input: dict[str, Any], tool_call_id: str) -> ChatEvent:
        return cls(
            metadata={
                "type": EventType.TOOL_START,
                "tool": tool,
                "input": tool_input,
                "tool_call_id": tool_call_id,
            }
        )

    @classmethod
    def tool_end(cls, tool: str, output: Any, tool_call_id: str) -> ChatEvent:
        """A tool's result: the full output, whatever the model was given."""
        return cls(
            metadata={
                "type": EventType.TOOL_END,
                "tool": tool,
                "output": output,
                "tool_call_id": tool_call_id,
            }
        )

    @classmethod
    def tool_error(
        cls, tool: str, error: str, tool_call_id: str, code: ErrorCode = ErrorCode.TOOL_FAILURE
    ) -> ChatEvent:
        return cls(
            metadata={
                "type": EventType.TOOL_ERROR,
                "tool": tool,
                "error": error,
                "code": code,
                "tool_call_id": tool_call_id,
            }
        )

    @classmethod
    def confirm_required(
        cls,
        *,
        prompt: str,
        thread_id: str,
        tool_call_id: str,
        interrupt_id: str,
        decision: dict[str, Any],
        tool_input: dict[str, Any] | None = None,
        confirmation_id: str | None = None,
        expires_at: str | None = None,
    ) -> ChatEvent:
        """A confirmation card; the stream ends after it."""
        return cls(
            metadata={
                "type": EventType.CONFIRM_REQUIRED,
                "prompt": prompt,
                "thread_id": thread_id,
                "tool_call_id": tool_call_id,
                "interrupt_id": interrupt_id,
                "confirmation_id": confirmation_id,
                "expires_at": expires_at,
                "decision": decision,
                "input": tool_input or {},
            }
        )

    def held_as(self, confirmation_id: str, expires_at: str) -> ChatEvent:
        """This card with the id and expiry of the confirmation that holds it."""
        return ChatEvent(
            self.content,
            {**self.metadata, "confirmation_id": confirmation_id, "expires_at": expires_at},
        )

    @classmethod
    def confirm_resolved(cls, result: ConfirmationResult) -> ChatEvent:
        return cls(metadata={"type": EventType.CONFIRM_RESOLVED, "result": result})

    @classmethod
    def permission_denied(
        cls, tool: str, required_role: str | None, tool_call_id: str, prompt: str
    ) -> ChatEvent:
        """A refused call: a «Недостаточно прав» card with no confirm button."""
        return cls(
            content=prompt,
            metadata={
                "type": EventType.PERMISSION_DENIED,
                "tool": tool,
                "required_role": required_role,
                "tool_call_id": tool_call_id,
            },
        )

    @classmethod
    def error(cls, code: ErrorCode, detail: str) -> ChatEvent:
        return cls(metadata={"type": EventType.ERROR, "code": code, "detail": detail})

    @classmethod
    def stream_end(
        cls, conversation_id: str, user_message_id: str | None, assistant_message_id: str
    ) -> ChatEvent:
        """The last event of every stream: which conversation and messages it wrote."""
        return cls(
            metadata={
                "type": EventType.STREAM_END,
                "conversation_id": conversation_id,
                "user_message_id": user_message_id,
                "assistant_message_id": assistant_message_id,
            }
        )

    @classmethod
    def from_wire(cls, data: dict[str, Any]) -> ChatEvent:
        """The event from its wire form (e.g. replayed from storage)."""
        return cls(content=str(data.get("content", "")), metadata=dict(data.get("metadata") or {}))

    def to_wire(self) -> dict[str, Any]:
        """The wire form for the SSE `data:` line (enum members serialise as their values)."""
        return {"role": self.role, "content": self.content, "metadata": self.metadata}
