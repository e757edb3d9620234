"""The stream protocol's events, defined once (docs/chat-protocol.md describes them on the wire).

Every event goes on the wire as a ChatMessage-shaped object `{role, content, metadata: {type,
...}}`; a plain answer has no `type`. In code each type is its own small frozen dataclass, so a
caller reads `event.tool_call_id` rather than a dict key; `to_wire` gives the wire object and
`from_wire` reads a stored one back as the same type. How the wire object is framed (SSE today)
is the encoder's business (`chat.encoding`), and the stream's `id` is the chat function's.

Plain slotted dataclasses, not pydantic models: one is built per streamed token (see `make bench`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any, ClassVar, Final, Literal

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
    """How a pending confirmation ended: the `result` of `confirm_resolved`, the answer the
    agent resumes with, and the reason a call that did not run was cancelled."""

    CONFIRMED = "confirmed"
    DENIED = "denied"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"
    """Answered with edits that need a card of their own: nothing ran, a new card follows."""
    STALE = "stale"
    """Confirmed after the target changed from what the card's plan showed: nothing ran, a new
    card with the current plan follows."""
    AWAITING_APPROVAL = "awaiting_approval"
    """Confirmed by the person who asked, the first of two approvals: nothing runs yet, the
    card waits for a second person."""


class WireEventError(ValueError):
    """A stored or received wire event that is not one of the protocol's events (an unknown
    `metadata.type`, a missing field, a value outside its enum): replay must not guess."""


@dataclass(frozen=True, slots=True)
class ChatEvent:
    """One event of the stream; every type below is one of these.

    `type` is a class attribute, so `event.type is EventType.TOOL_START` costs no lookup; match on
    the class (`isinstance`, `case ToolEnd()`) to read the fields.
    """

    type: ClassVar[EventType | None] = None
    role: ClassVar[Literal["assistant"]] = "assistant"

    @property
    def content(self) -> str:
        """The ChatMessage's `content`: empty except for plain text and a permission card."""
        return ""

    @property
    def metadata(self) -> dict[str, Any]:
        """The wire's `metadata` object (a new dict on each read)."""
        return {}

    def to_wire(self) -> dict[str, Any]:
        """The wire form for the encoder (enum members serialise as their values)."""
        return {"role": "assistant", "content": self.content, "metadata": self.metadata}

    @staticmethod
    def from_wire(data: dict[str, Any]) -> ChatEvent:
        """The event from its wire form (replayed from storage), as its own type.

        Raises WireEventError for anything `to_wire` cannot have written.
        """
        metadata = data.get("metadata") or {}
        content = str(data.get("content", ""))
        kind = metadata.get("type")
        if not kind:
            return Text(content)
        reader = _READERS.get(kind)
        if reader is None:
            raise WireEventError(f"unknown stream event type {kind!r}")
        try:
            return reader(content, metadata)
        except (KeyError, ValueError, TypeError) as error:
            raise WireEventError(f"malformed {kind} event: {error!r}") from error


@dataclass(frozen=True, slots=True)
class StreamToken(ChatEvent):
    """A piece of the answer, to append to the last assistant message."""

    type: ClassVar[Literal[EventType.STREAM_TOKEN]] = EventType.STREAM_TOKEN
    token: str

    @property
    def metadata(self) -> dict[str, Any]:
        return {"type": EventType.STREAM_TOKEN, "token": self.token}

    def to_wire(self) -> dict[str, Any]:
        """As the base builds it, inlined: this one is built once per token."""
        return {
            "role": "assistant",
            "content": "",
            "metadata": {"type": EventType.STREAM_TOKEN, "token": self.token},
        }


@dataclass(frozen=True, slots=True)
class Text(ChatEvent):
    """A whole message of plain text (no `metadata.type`)."""

    text: str

    @property
    def content(self) -> str:
        return self.text


@dataclass(frozen=True, slots=True)
class ToolStart(ChatEvent):
    type: ClassVar[Literal[EventType.TOOL_START]] = EventType.TOOL_START
    tool: str
    tool_input: dict[str, Any]
    tool_call_id: str

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "type": EventType.TOOL_START,
            "tool": self.tool,
            "input": self.tool_input,
            "tool_call_id": self.tool_call_id,
        }


@dataclass(frozen=True, slots=True)
class OutputReference:
    """Where the whole of a tool output kept by reference is (`domain.tool_outputs`)."""

    output_ref: str | None
    """The REST path that returns it whole; None when keeping it failed (the summary remains)."""
    output_bytes: int
    truncated: bool
    """The event carries the summary, not the whole output."""

    def to_fields(self) -> dict[str, Any]:
        """The three fields as they sit in `tool_end`'s metadata and in the history."""
        return {
            "output_ref": self.output_ref,
            "output_bytes": self.output_bytes,
            "truncated": self.truncated,
        }


@dataclass(frozen=True, slots=True)
class ToolEnd(ChatEvent):
    """A tool's result: the full output, whatever the model was given (or, kept by reference,
    its summary with `reference`)."""

    type: ClassVar[Literal[EventType.TOOL_END]] = EventType.TOOL_END
    tool: str
    output: Any
    tool_call_id: str
    reference: OutputReference | None = None
    policy: dict[str, Any] = field(default_factory=dict, compare=False)
    """For the audit record, not the wire: the policies that allowed a call run without a card
    (`policies`), and what log-only ones would have decided (`trial`)."""

    @property
    def metadata(self) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "type": EventType.TOOL_END,
            "tool": self.tool,
            "output": self.output,
            "tool_call_id": self.tool_call_id,
        }
        if self.reference is not None:
            metadata |= self.reference.to_fields()
        return metadata


@dataclass(frozen=True, slots=True)
class ToolError(ChatEvent):
    type: ClassVar[Literal[EventType.TOOL_ERROR]] = EventType.TOOL_ERROR
    tool: str
    error: str
    tool_call_id: str
    code: ErrorCode = ErrorCode.TOOL_FAILURE
    policy: dict[str, Any] = field(default_factory=dict, compare=False)
    """As `ToolEnd.policy`."""

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "type": EventType.TOOL_ERROR,
            "tool": self.tool,
            "error": self.error,
            "code": self.code,
            "tool_call_id": self.tool_call_id,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ConfirmRequired(ChatEvent):
    """A confirmation card; the stream ends after it. `decision` is the GuardrailDecision's
    payload; `confirmation_id` and `expires_at` are set once a confirmation holds the card."""

    type: ClassVar[Literal[EventType.CONFIRM_REQUIRED]] = EventType.CONFIRM_REQUIRED
    prompt: str
    thread_id: str
    tool_call_id: str
    interrupt_id: str
    decision: dict[str, Any]
    tool_input: dict[str, Any] = field(default_factory=dict)
    confirmation_id: str | None = None
    expires_at: str | None = None
    plan: dict[str, Any] | None = None
    """The plan of the change (`ChangePlan.to_payload`), read before the card; None for a call
    whose tool declares none."""

    @property
    def tool(self) -> str | None:
        """The tool the card asks about, as the decision names it."""
        tool = self.decision.get("tool")
        return None if tool is None else str(tool)

    def answerable_as(
        self, confirmation_id: str, expires_at: str, plan: dict[str, Any] | None = None
    ) -> ConfirmRequired:
        """This card as the user can answer it: with the id, expiry and plan of the confirmation
        that holds it."""
        return replace(self, confirmation_id=confirmation_id, expires_at=expires_at, plan=plan)

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "type": EventType.CONFIRM_REQUIRED,
            "prompt": self.prompt,
            "thread_id": self.thread_id,
            "tool_call_id": self.tool_call_id,
            "interrupt_id": self.interrupt_id,
            "confirmation_id": self.confirmation_id,
            "expires_at": self.expires_at,
            "decision": self.decision,
            "input": self.tool_input,
            "plan": self.plan,
        }


@dataclass(frozen=True, slots=True)
class ConfirmResolved(ChatEvent):
    type: ClassVar[Literal[EventType.CONFIRM_RESOLVED]] = EventType.CONFIRM_RESOLVED
    result: ConfirmationResult

    @property
    def metadata(self) -> dict[str, Any]:
        return {"type": EventType.CONFIRM_RESOLVED, "result": self.result}


@dataclass(frozen=True, slots=True)
class PermissionDenied(ChatEvent):
    """A refused call: a «Недостаточно прав» card with no confirm button (`prompt` is its text)."""

    type: ClassVar[Literal[EventType.PERMISSION_DENIED]] = EventType.PERMISSION_DENIED
    tool: str
    required_role: str | None
    tool_call_id: str
    prompt: str
    policy: dict[str, Any] = field(default_factory=dict, compare=False)
    """For the audit record, not the wire: the policies that refused it (`policies`), and
    what log-only ones would have decided (`trial`)."""

    @property
    def content(self) -> str:
        return self.prompt

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "type": EventType.PERMISSION_DENIED,
            "tool": self.tool,
            "required_role": self.required_role,
            "tool_call_id": self.tool_call_id,
        }


@dataclass(frozen=True, slots=True)
class ErrorEvent(ChatEvent):
    """A failure the stream reports (and usually ends with)."""

    type: ClassVar[Literal[EventType.ERROR]] = EventType.ERROR
    code: ErrorCode
    detail: str

    @property
    def metadata(self) -> dict[str, Any]:
        return {"type": EventType.ERROR, "code": self.code, "detail": self.detail}


@dataclass(frozen=True, slots=True)
class StreamEnd(ChatEvent):
    """The last event of every stream: which conversation and messages it wrote."""

    type: ClassVar[Literal[EventType.STREAM_END]] = EventType.STREAM_END
    conversation_id: str
    user_message_id: str | None
    assistant_message_id: str | None
    """None when the stream wrote no answer (a reconnect's replay)."""

    @property
    def metadata(self) -> dict[str, Any]:
        return {
            "type": EventType.STREAM_END,
            "conversation_id": self.conversation_id,
            "user_message_id": self.user_message_id,
            "assistant_message_id": self.assistant_message_id,
        }


@dataclass(frozen=True, slots=True)
class Notice(ChatEvent):
    """Something a turn tells the client's encoder alone: never numbered, stored or replayed,
    and not part of the seed's ChatMessage stream (its encoder writes nothing for it)."""


@dataclass(frozen=True, slots=True)
class ToolsRouted(Notice):
    """The tools the turn offered the model and why the others were left out (AG-UI shows it
    as a CUSTOM event; the audit log keeps it as `tools_routed`)."""

    routing: dict[str, Any]


def _tool_end(_: str, meta: dict[str, Any]) -> ToolEnd:
    reference = None
    if "output_bytes" in meta:
        reference = OutputReference(meta["output_ref"], meta["output_bytes"], meta["truncated"])
    return ToolEnd(meta["tool"], meta["output"], meta["tool_call_id"], reference)


def _confirm_required(_: str, meta: dict[str, Any]) -> ConfirmRequired:
    return ConfirmRequired(
        prompt=meta["prompt"],
        thread_id=meta["thread_id"],
        tool_call_id=meta["tool_call_id"],
        interrupt_id=meta["interrupt_id"],
        decision=meta["decision"],
        tool_input=meta["input"],
        confirmation_id=meta["confirmation_id"],
        expires_at=meta["expires_at"],
        plan=meta.get("plan"),  # stored before cards had plans: none
    )


_READERS: Final[dict[str, Callable[[str, dict[str, Any]], ChatEvent]]] = {
    EventType.STREAM_TOKEN: lambda _, m: StreamToken(m["token"]),
    EventType.TOOL_START: lambda _, m: ToolStart(m["tool"], m["input"], m["tool_call_id"]),
    EventType.TOOL_END: _tool_end,
    EventType.TOOL_ERROR: lambda _, m: ToolError(
        m["tool"], m["error"], m["tool_call_id"], ErrorCode(m["code"])
    ),
    EventType.CONFIRM_REQUIRED: _confirm_required,
    EventType.CONFIRM_RESOLVED: lambda _, m: ConfirmResolved(ConfirmationResult(m["result"])),
    EventType.PERMISSION_DENIED: lambda content, m: PermissionDenied(
        m["tool"], m["required_role"], m["tool_call_id"], content
    ),
    EventType.ERROR: lambda _, m: ErrorEvent(ErrorCode(m["code"]), m["detail"]),
    EventType.STREAM_END: lambda _, m: StreamEnd(
        m["conversation_id"], m["user_message_id"], m["assistant_message_id"]
    ),
}
"""How each type reads its wire form back: the inverse of its `metadata`."""
