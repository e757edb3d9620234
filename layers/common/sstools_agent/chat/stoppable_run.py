"""A turn's run that a stop asked from another connection interrupts wherever it waits: the
waiting step (the model, a tool) is cancelled, which is how a read in flight is abandoned; a
confirmed write records its outcome on the way out."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, AsyncIterator

from sstools_agent.chat.event_log import EventLogWriter
from sstools_agent.domain.chat_events import ChatEvent


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
