"""A turn's event log: its events stored in chunks for replay off the stream's path, its lease
renewed, and a stop asked from another connection noticed and carried out wherever the run waits."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from typing import Any, Final

from sstools_agent.domain.chat_events import ChatEvent
from sstools_agent.domain.ports import ConversationStore

logger = logging.getLogger(__name__)

FLUSH_EVERY_EVENTS: Final = 500
FLUSH_EVERY_S: Final = 0.5
"""Stored events are written every half second (or 500 events, whichever first): a replay
follows a live run within this plus `FOLLOW_POLL_S`, and a stop from another connection reaches
the run within it."""


class EventLogWriter:
    """Stores a turn's events in chunks from a background task, so the stream never waits on it.

    Also renews the run's lease, and notices a cancel requested from another connection within
    `FLUSH_EVERY_S` whatever the run is doing: each flush asks the store, beside its write.
    """

    def __init__(
        self, store: ConversationStore, conversation_id: str, run_id: str, lease_s: float
    ) -> None:
        self.store, self.conversation_id, self.run_id = store, conversation_id, run_id
        self.lease_s = lease_s
        self.buffer: list[tuple[int, ChatEvent]] = []
        self.cancel_requested = False
        self.on_cancel: Callable[[], None] | None = None
        self._wake = asyncio.Event()
        self._closing = False
        self._task = asyncio.create_task(self._run())

    def add(self, seq: int, event: ChatEvent) -> None:
        self.buffer.append((seq, event))  # its wire form is built when stored, off the stream
        if len(self.buffer) >= FLUSH_EVERY_EVENTS:
            self._wake.set()

    async def _flush(self) -> None:
        """One write of what the run streamed since the last flush, and beside it (unless the
        run is ending) one read of whether another connection asked to stop it."""
        chunk, self.buffer = self.buffer, []
        calls: list[Awaitable[Any]] = []
        if chunk:
            wires = [(seq, event.to_wire()) for seq, event in chunk]
            calls.append(self.store.append_events(self.conversation_id, self.run_id, wires))
        asking = not self._closing and not self.cancel_requested
        if asking:
            calls.append(self.store.cancel_requested(self.conversation_id, self.run_id))
        answers = await asyncio.gather(*calls)
        requested = asking and bool(answers[-1])
        if requested and not self.cancel_requested:
            self.cancel_requested = True
            if self.on_cancel is not None:
                self.on_cancel()

    async def _run(self) -> None:
        renewed = time.monotonic()
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), FLUSH_EVERY_S)
            self._wake.clear()
            try:
                await self._flush()
                if time.monotonic() - renewed > self.lease_s / 3:
                    await self.store.renew(self.conversation_id, self.run_id, self.lease_s)
                    renewed = time.monotonic()
            except Exception:
                logger.exception("storing stream events failed; the stream goes on")

    async def close(self) -> None:
        """Stops the background task and stores what is left."""
        self._closing = True
        self._wake.set()
        await self._task
        await self._flush()


class StoppableRun:
    """Iterates the agent's events in the stream's own task, and lets a cancel request stop it
    wherever it waits (on the model, on a tool): the waiting step is cancelled, which is how a
    read in flight is abandoned; a confirmed write records its outcome on the way out."""

    def __init__(self, events: AsyncGenerator[ChatEvent], writer: EventLogWriter) -> None:
        self.events, self.writer = events, writer
        self.stopped = False
        self._task = asyncio.current_task()
        self._waiting = False
        self._interrupting = False
        writer.on_cancel = self._interrupt

    def _interrupt(self) -> None:
        if self._waiting and self._task is not None:
            self._interrupting = True
            self._task.cancel()

    async def __aiter__(self) -> AsyncIterator[ChatEvent]:
        while not self.writer.cancel_requested:
            self._waiting = True
            try:
                event = await anext(self.events)
            except StopAsyncIteration:
                return
            except asyncio.CancelledError:
                if not self._interrupting or self._task is None:
                    raise
                self._task.uncancel()
                break
            finally:
                self._waiting = False
            yield event
        self.stopped = True
