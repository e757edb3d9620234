"""Size limits of stored tool outputs, and the form of an output kept by reference.

Every size here is counted in bytes of UTF-8 JSON, the measure DynamoDB's 400 KB item limit
applies to (a Cyrillic character is two bytes, so characters undercount by half). An output over
the inline limit, or one that would take a turn's outputs over the turn's budget, is kept whole in
the blob store; the stream's stored events and the history carry its summary inline with
`output_ref` (the REST path that returns it whole), `output_bytes` and `truncated: true`. The live
stream carries the full output up to `MAX_LIVE_OUTPUT_BYTES`, the reference above that.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any, Final
from urllib.parse import quote

from sstools_agent.domain.chat_events import ChatEvent, OutputReference, ToolEnd
from sstools_agent.domain.tool_output_summary import summarise_tool_output

MAX_ITEM_BYTES: Final = 350 * 1024
"""A stored item's JSON at most (DynamoDB's limit is 400 KB with keys and attribute names)."""
MAX_INLINE_OUTPUT_BYTES: Final = 32 * 1024
"""A tool output larger than this is kept by reference, not inside events and history."""
TURN_INLINE_OUTPUT_BYTES: Final = 160 * 1024
"""All of a turn's inline outputs together at most: its history message must fit one item."""
MAX_LIVE_OUTPUT_BYTES: Final = 1024 * 1024
"""The live stream carries a full output up to this; a larger one goes by reference there too."""
STORED_SUMMARY_CHARS: Final = 4000
"""The summary kept inline for a referenced output (the model's budget: what it saw)."""
TOOL_OUTPUT_CONTENT_TYPE: Final = "application/json"


def json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON of a value, as kept and served (lone surrogates become escapes)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    try:
        return text.encode()
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), default=str).encode()


def tool_output_key(conversation_id: str, tool_call_id: str) -> str:
    """Where a conversation's tool output is kept in the blob store."""
    return f"tool-outputs/{conversation_id}/{quote(tool_call_id, safe='')}.json"


def tool_output_path(conversation_id: str, tool_call_id: str) -> str:
    """The REST path that returns a kept output to the conversation's owner (`output_ref`)."""
    return f"/api/assistant/conversations/{conversation_id}/tool-outputs/{tool_call_id}"


@dataclass(frozen=True, slots=True)
class OutputPlan:
    """What to do with one tool_end event's output."""

    full: bytes
    keep_by_reference: bool


class TurnOutputBudget:
    """Decides, per turn, which tool outputs stay inline and which are kept by reference."""

    def __init__(self) -> None:
        self.inline_left = TURN_INLINE_OUTPUT_BYTES

    def plan(self, event: ChatEvent) -> OutputPlan | None:
        """The plan for a tool_end event (None for every other event)."""
        if not isinstance(event, ToolEnd):
            return None
        full = json_bytes(event.output)
        if len(full) <= min(MAX_INLINE_OUTPUT_BYTES, self.inline_left):
            self.inline_left -= len(full)
            return OutputPlan(full, keep_by_reference=False)
        return OutputPlan(full, keep_by_reference=True)


def referenced(event: ToolEnd, conversation_id: str, size: int, *, kept: bool) -> ToolEnd:
    """A tool_end event with its output replaced by the summary and a reference to the whole
    (`output_ref` is None when keeping it failed: only the summary remains)."""
    summary = summarise_tool_output(event.output, STORED_SUMMARY_CHARS)
    path = tool_output_path(conversation_id, event.tool_call_id) if kept else None
    return replace(
        event,
        output=json.loads(summary.content),
        reference=OutputReference(path, size, truncated=True),
    )


def with_reference(event: ToolEnd, conversation_id: str, size: int) -> ToolEnd:
    """The live form of a kept output: the full output with its reference beside it."""
    path = tool_output_path(conversation_id, event.tool_call_id)
    return replace(event, reference=OutputReference(path, size, truncated=False))


class ToolOutputNotFound(Exception):
    """No kept output for this tool call (never kept, or expired with the bucket's rule): 404."""
