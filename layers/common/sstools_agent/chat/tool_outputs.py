"""Keeps a turn's large tool outputs whole in the blob store, before their events are stored.

Per event, `ToolOutputKeeper.keep` gives the form the client receives live and the form stored
for replay and history (`domain.tool_outputs` decides which outputs go by reference). The blob
is written before the event is streamed, so a storage failure is known while the stream can still
say so: the caller then ends the stream with an `error` event, and the stored form keeps the
summary, with no reference, so history stays readable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sstools_agent.domain.chat_events import ChatEvent, ErrorEvent, ToolEnd
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.ports import BlobStore, BlobStoreError
from sstools_agent.domain.tool_outputs import (
    MAX_LIVE_OUTPUT_BYTES,
    TOOL_OUTPUT_CONTENT_TYPE,
    TurnOutputBudget,
    referenced,
    tool_output_key,
    with_reference,
)

logger = logging.getLogger(__name__)

NOT_KEPT_TEXT = (
    "Не удалось сохранить полный результат инструмента; в истории остаётся только его сводка. "
    "/ The tool's full output could not be stored; the history keeps its summary only."
)


@dataclass(frozen=True, slots=True)
class KeptEvent:
    """An event as streamed live and as stored; `failed` when its output could not be kept."""

    live: ChatEvent
    stored: ChatEvent
    failed: bool = False

    def failure(self) -> ChatEvent:
        """The error event that ends a stream whose output could not be kept."""
        return ErrorEvent(ErrorCode.STORAGE_FAILURE, NOT_KEPT_TEXT)


class ToolOutputKeeper:
    """One turn's large tool outputs, kept by reference (one instance per turn)."""

    def __init__(self, blobs: BlobStore, conversation_id: str) -> None:
        self.blobs = blobs
        self.conversation_id = conversation_id
        self.budget = TurnOutputBudget()

    async def keep(self, event: ChatEvent) -> KeptEvent:
        """Writes a large output to the blob store; the event's live and stored forms."""
        if not isinstance(event, ToolEnd):
            return KeptEvent(event, event)
        plan = self.budget.plan(event)
        if plan is None or not plan.keep_by_reference:
            return KeptEvent(event, event)
        size = len(plan.full)
        try:
            await self.blobs.put(
                tool_output_key(self.conversation_id, event.tool_call_id),
                plan.full,
                TOOL_OUTPUT_CONTENT_TYPE,
            )
        except BlobStoreError:
            logger.exception("keeping a tool output failed", extra={"bytes": size})
            stored = referenced(event, self.conversation_id, size, kept=False)
            return KeptEvent(event if size <= MAX_LIVE_OUTPUT_BYTES else stored, stored, True)
        stored = referenced(event, self.conversation_id, size, kept=True)
        live = (
            with_reference(event, self.conversation_id, size)
            if size <= MAX_LIVE_OUTPUT_BYTES
            else stored
        )
        return KeptEvent(live, stored)
