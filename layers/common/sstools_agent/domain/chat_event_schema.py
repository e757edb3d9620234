"""The stream's wire objects as a JSON Schema, for clients (the /agent page's TypeScript types).

`chat_events` builds each wire object in code (`to_wire`, one per streamed token, so no pydantic
on that path); here each wire object is declared as a TypedDict that pydantic turns into a schema.
The two cannot drift apart unnoticed: `tests/unit/test_chat_event_schema.py` validates every
event type's `to_wire()` against its declaration (unknown fields forbidden) and checks that the
exported file matches this module. `make schema` writes the file the page generates its types from.
"""

from __future__ import annotations

import json
from typing import Any, Final, Literal, NotRequired, TypedDict

from pydantic import ConfigDict, TypeAdapter, with_config

from sstools_agent.domain.chat_events import ConfirmationResult, EventType
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.guardrails import GuardrailDecision

SCHEMA_ID: Final = "https://ss-tools.local/schemas/chat-events.json"
_STRICT: Final = ConfigDict(extra="forbid")


@with_config(_STRICT)
class StreamTokenMetadata(TypedDict):
    type: Literal[EventType.STREAM_TOKEN]
    token: str


@with_config(_STRICT)
class ToolStartMetadata(TypedDict):
    type: Literal[EventType.TOOL_START]
    tool: str
    input: dict[str, Any]
    tool_call_id: str


@with_config(_STRICT)
class ToolEndMetadata(TypedDict):
    type: Literal[EventType.TOOL_END]
    tool: str
    output: Any
    """The full output, or (with `truncated: true`) its structured summary."""
    tool_call_id: str
    output_ref: NotRequired[str | None]
    """The REST path that returns the whole output; null when keeping it failed."""
    output_bytes: NotRequired[int]
    truncated: NotRequired[bool]


@with_config(_STRICT)
class ToolErrorMetadata(TypedDict):
    type: Literal[EventType.TOOL_ERROR]
    tool: str
    error: str
    code: ErrorCode
    tool_call_id: str


@with_config(_STRICT)
class ChangePlanPayload(TypedDict):
    """The plan of a change, read before its card (`domain.change_plans`)."""

    title: str
    """The action and its object in words: «Деплой дашборда #10 «Продажи»: ss-dev → prod»."""
    lines: list[str]
    """What will change and what is there now, one line per object."""
    unread: str | None
    """Why the plan could not be read; null when it was."""
    digest: str | None
    """The fingerprint of what the plan read, which the approval is bound to; null when unread."""
    statement: str | None
    """For SQL: the statement, formatted (shown as code); null otherwise."""


@with_config(_STRICT)
class ConfirmRequiredMetadata(TypedDict):
    type: Literal[EventType.CONFIRM_REQUIRED]
    prompt: str
    thread_id: str
    tool_call_id: str
    interrupt_id: str
    confirmation_id: str | None
    expires_at: str | None
    """ISO 8601, UTC: when the card stops accepting an answer."""
    decision: GuardrailDecision
    input: dict[str, Any]
    plan: ChangePlanPayload | None
    """Null for a call whose tool declares no plan."""


@with_config(_STRICT)
class ConfirmResolvedMetadata(TypedDict):
    type: Literal[EventType.CONFIRM_RESOLVED]
    result: ConfirmationResult


@with_config(_STRICT)
class PermissionDeniedMetadata(TypedDict):
    type: Literal[EventType.PERMISSION_DENIED]
    tool: str
    required_role: str | None
    tool_call_id: str


@with_config(_STRICT)
class ErrorMetadata(TypedDict):
    type: Literal[EventType.ERROR]
    code: ErrorCode
    detail: str


@with_config(_STRICT)
class StreamEndMetadata(TypedDict):
    type: Literal[EventType.STREAM_END]
    conversation_id: str
    user_message_id: str | None
    assistant_message_id: str | None
    """None when the stream wrote no answer (a reconnect's replay)."""


@with_config(_STRICT)
class TextMetadata(TypedDict):
    """A plain answer: no `type`."""


def _message(name: str, metadata: type, doc: str) -> type:
    """The ChatMessage wrapper `{role, content, metadata}` around one event's metadata; `doc`
    becomes its description in the schema."""
    fields = {"role": Literal["assistant"], "content": str, "metadata": metadata}
    message = TypedDict(name, fields)  # type: ignore[misc]  # a name known only at run time
    message.__doc__ = doc
    message.__pydantic_config__ = _STRICT  # type: ignore[attr-defined]
    return message


WIRE_MESSAGES: Final[dict[EventType | None, type]] = {
    EventType.STREAM_TOKEN: _message(
        "StreamToken", StreamTokenMetadata, "Append the token to the last assistant message."
    ),
    EventType.TOOL_START: _message("ToolStart", ToolStartMetadata, "A tool call began."),
    EventType.TOOL_END: _message("ToolEnd", ToolEndMetadata, "A tool call's result."),
    EventType.TOOL_ERROR: _message("ToolError", ToolErrorMetadata, "A tool call failed."),
    EventType.CONFIRM_REQUIRED: _message(
        "ConfirmRequired", ConfirmRequiredMetadata, "A confirmation card; the stream ends after it."
    ),
    EventType.CONFIRM_RESOLVED: _message(
        "ConfirmResolved", ConfirmResolvedMetadata, "How the pending card ended."
    ),
    EventType.PERMISSION_DENIED: _message(
        "PermissionDenied",
        PermissionDeniedMetadata,
        "A refused call: «Недостаточно прав», `content` is the card's text.",
    ),
    EventType.ERROR: _message("ErrorEvent", ErrorMetadata, "A failure the stream reports."),
    EventType.STREAM_END: _message("StreamEnd", StreamEndMetadata, "The last event of a stream."),
    None: _message("Text", TextMetadata, "A whole message of plain text in `content`."),
}
"""Each event type's wire object, keyed by `metadata.type` (None: plain text)."""


def chat_event_schema() -> dict[str, Any]:
    """The JSON Schema of a stream event: `ChatMessage` is one of the wire objects, and
    `GuardrailDecision` (the card's `decision`) is among the definitions."""
    definitions: dict[str, Any] = {}
    one_of = []
    for message in WIRE_MESSAGES.values():
        schema = TypeAdapter(message).json_schema(ref_template="#/$defs/{model}")
        definitions.update(schema.pop("$defs", {}))
        definitions[message.__name__] = schema
        one_of.append({"$ref": f"#/$defs/{message.__name__}"})
    for definition in definitions.values():
        for field in definition.get("properties", {}).values():
            # A field's title is its name again; typed clients would turn each into a type.
            field.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": SCHEMA_ID,
        "title": "ChatMessage",
        "description": "One event of the /api/agent/chat stream (docs/chat-protocol.md).",
        "oneOf": one_of,
        "$defs": dict(sorted(definitions.items())),
    }


def chat_event_schema_json() -> str:
    """The schema as the exported file holds it (stable key order, a final newline)."""
    return json.dumps(chat_event_schema(), ensure_ascii=False, indent=2) + "\n"
