"""One async generator from an agent run to the protocol's events, independent of any transport.

It reads LangGraph's v2 stream (`messages` for tokens, `updates` for finished messages, tool results
and interrupts) and yields `ChatEvent`s: stream_token, tool_start, tool_end (full output),
tool_error, permission_denied, confirm_required, plain content, error.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final

from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, ToolMessage
from langgraph.types import Interrupt

from sstools_agent.agent.interrupts import ConfirmationInterrupt
from sstools_agent.agent.middleware import (
    CANCELLED,
    PERMISSION_DENIED,
    POLICY,
    ModelUnavailableError,
)
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmRequired,
    ErrorEvent,
    PermissionDenied,
    StreamToken,
    Text,
    ToolEnd,
    ToolError,
    ToolStart,
)
from sstools_agent.domain.confirmation_outcomes import cancellation_text
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.guardrails import policy_record

logger = logging.getLogger(__name__)
MODEL_NODE: Final = "model"
TOOLS_NODE: Final = "tools"
INTERRUPT_KEY: Final = "__interrupt__"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type", "text") == "text"
        )
    return ""


class EventMapper:
    """Turns the parts of one agent stream into protocol events; one instance per run."""

    def __init__(self, thread_id: str) -> None:
        self.thread_id = thread_id
        self._streamed_ids: set[str] = set()

    def on_message_chunk(self, chunk: BaseMessage, metadata: dict[str, Any]) -> list[ChatEvent]:
        if metadata.get("langgraph_node") != MODEL_NODE or not isinstance(chunk, AIMessageChunk):
            return []
        token = _text(chunk.content)
        if not token:
            return []
        if chunk.id:
            self._streamed_ids.add(chunk.id)
        return [StreamToken(token)]

    def on_model_message(self, message: AIMessage) -> list[ChatEvent]:
        events: list[ChatEvent] = [
            ToolStart(c["name"], c["args"], c["id"] or "") for c in message.tool_calls
        ]
        text = _text(message.content)
        if text and message.id not in self._streamed_ids:
            events.insert(0, Text(text))
        return events

    def on_tool_message(self, message: ToolMessage) -> list[ChatEvent]:
        tool, call_id = message.name or "", message.tool_call_id
        artifact = message.artifact if isinstance(message.artifact, dict) else {}
        event = artifact.get("event")
        if event == PERMISSION_DENIED:
            decision = artifact.get("decision") or {}
            policy = policy_record(decision)
            required = (decision.get("permission") or {}).get("required_role")
            return [PermissionDenied(tool, required, call_id, decision.get("prompt", ""), policy)]
        if event == CANCELLED:
            args = artifact.get("args")
            reason = str(artifact.get("reason", ""))
            return [Text(cancellation_text(tool, reason, args if isinstance(args, dict) else None))]
        ran = artifact.get(POLICY) or {}
        if message.status == "error":
            code = ErrorCode(artifact.get("code", ErrorCode.TOOL_FAILURE))
            return [ToolError(tool, _text(message.content), call_id, code, policy=ran)]
        output = artifact.get("output", _text(message.content))
        return [ToolEnd(tool, output, call_id, policy=ran)]

    def on_interrupt(self, pending: Interrupt) -> ConfirmRequired:
        """The card of a pending interrupt."""
        return self.card(pending.id, ConfirmationInterrupt.from_dict(pending.value))

    def card(self, interrupt_id: str, card: ConfirmationInterrupt) -> ConfirmRequired:
        """The `confirm_required` event of a call waiting behind `interrupt_id`."""
        return ConfirmRequired(
            prompt=card.decision.get("prompt", ""),
            thread_id=self.thread_id,
            tool_call_id=card.tool_call_id,
            interrupt_id=interrupt_id,
            decision=card.decision,
            tool_input=card.args,
        )

    def on_update(self, update: dict[str, Any]) -> list[ChatEvent]:
        events: list[ChatEvent] = []
        for node, change in update.items():
            if node == INTERRUPT_KEY:
                events += [self.on_interrupt(pending) for pending in change]
                continue
            messages = change.get("messages", []) if isinstance(change, dict) else []
            for message in messages:
                if node == MODEL_NODE and isinstance(message, AIMessage):
                    events += self.on_model_message(message)
                elif node == TOOLS_NODE and isinstance(message, ToolMessage):
                    events += self.on_tool_message(message)
        return events

    def on_part(self, part: Mapping[str, Any]) -> list[ChatEvent]:
        """Events for one part of a `version="v2"` stream."""
        kind, data = part.get("type"), part.get("data")
        if kind == "messages":
            chunk, metadata = data  # type: ignore[misc]
            return self.on_message_chunk(chunk, metadata)
        if kind == "updates" and isinstance(data, dict):
            return self.on_update(data)
        if kind == "custom" and isinstance(data, dict):
            return [ChatEvent.from_wire(data)]
        return []


async def map_agent_stream(
    parts: AsyncIterator[Mapping[str, Any]], mapper: EventMapper
) -> AsyncIterator[ChatEvent]:
    """Protocol events for an agent stream; a failure ends it with one `error` event."""
    try:
        async for part in parts:
            for event in mapper.on_part(part):
                yield event
    except ModelUnavailableError as error:
        logger.warning("model unavailable: %s", error)
        yield ErrorEvent(
            ErrorCode.LLM_UNAVAILABLE,
            "Модель недоступна, попробуйте ещё раз. / The model is unavailable.",
        )
    except Exception:
        logger.exception("agent run failed")
        yield ErrorEvent(ErrorCode.INTERNAL_ERROR, "Внутренняя ошибка агента.")
