"""A turn's event log: its events stored in chunks for replay off the stream's path, its lease
renewed, and a stop asked from another connection noticed (`StoppableRun` carries it out)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, Final

from sstools_agent.domain.chat_events import ChatEvent
from sstools_agent.domain.ports import ConversationStore

logger = logging.getLogger(__name__)

FLUSH_EVERY_EVENTS: Final = 500
FLUSH_EVERY_S: Final = 0.5
"""Stored events are written every half second (or 500 events, whichever first): a replay
follows a live run within this plus `REPLAY_POLL_S`, and a stop from another connection reaches
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
