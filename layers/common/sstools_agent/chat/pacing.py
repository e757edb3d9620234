"""How a response's frames reach the socket: tokens coalesced, silences broken by heartbeats.

A model streams a token every few hundred microseconds; one socket write per token costs the
server more than the agent spends on it. So token frames are gathered for at most
`window_s` (10 ms) and written together; any other frame (a tool card, a confirmation, the end)
is written at once, after the tokens before it, and so is a stream's first frame. A timer, not
the next frame, ends a window: a model that pauses never holds back its last token.

A stream silent for `heartbeat_s` (15 s: a slow tool, a model thinking) gets an SSE comment line
(`: keepalive`), which every SSE client ignores and the page counts as life (docs/page.md):
CloudFront closes an origin response silent for 60 s.

The frames are produced by one task of their own (the turn's generators and what they enter, a
LangGraph run's context among them, stay in one task), and read here through a bounded queue.
When the response stops reading (the client went away), that task is cancelled and awaited: the
turn's own cleanup runs as it did when the response read the turn directly.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from typing import Final

import anyio

from sstools_agent.settings import DEFAULT_STREAM_COALESCE_S, DEFAULT_STREAM_HEARTBEAT_S

HEARTBEAT: Final = b": keepalive\n\n"
QUEUE_FRAMES: Final = 256
"""How far the turn may run ahead of the socket."""

Frame = tuple[bytes, bool]
"""A frame's bytes, and whether it is urgent (anything but a token)."""


class _End:
    """The producer finished (with `error` when it raised)."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error = error


async def _produce(frames: AsyncGenerator[Frame], queue: asyncio.Queue[Frame | _End]) -> None:
    try:
        async for frame in frames:
            await queue.put(frame)
    except Exception as error:  # handed to the reader, which raises it
        await queue.put(_End(error))
    else:
        await queue.put(_End())
    finally:
        # Stopped between two frames, the turn is closed here and now, not when collected
        with anyio.CancelScope(shield=True):
            await frames.aclose()


async def paced(
    frames: AsyncGenerator[Frame],
    *,
    window_s: float = DEFAULT_STREAM_COALESCE_S,
    heartbeat_s: float = DEFAULT_STREAM_HEARTBEAT_S,
    heartbeat: bytes = HEARTBEAT,
) -> AsyncGenerator[bytes]:
    """`frames` as socket writes: tokens within `window_s` together, urgent frames at once,
    `heartbeat` after `heartbeat_s` of silence."""
    loop = asyncio.get_running_loop()
    queue: asyncio.Queue[Frame | _End] = asyncio.Queue(QUEUE_FRAMES)
    producer = asyncio.create_task(_produce(frames, queue), name="stream-frames")
    held: list[bytes] = []
    due: float | None = None
    """When the held tokens must be written (None: none held)."""
    quiet_until = loop.time() + heartbeat_s
    """When silence on the socket calls for a heartbeat."""
    first = True
    try:
        while True:
            wait_s = max(0.0, (quiet_until if due is None else due) - loop.time())
            try:
                item = await asyncio.wait_for(queue.get(), wait_s)
            except TimeoutError:
                chunk, held, due = (b"".join(held) if held else heartbeat), [], None
                quiet_until = loop.time() + heartbeat_s
                yield chunk
                continue
            if isinstance(item, _End):
                if held:
                    yield b"".join(held)
                if item.error is not None:
                    raise item.error
                return
            data, urgent = item
            if not data:
                continue
            held.append(data)
            now = loop.time()
            if due is None:
                due = now + window_s
            # The stream's first frame goes at once (the time to first event is what a user
            # feels); a frame always waiting means the timer never fires: the window is checked
            # here too
            if urgent or first or now >= due:
                first = False
                chunk, held, due = b"".join(held), [], None
                quiet_until = now + heartbeat_s
                yield chunk
    finally:
        producer.cancel()  # a no-op when it is done
        with anyio.CancelScope(shield=True):
            await asyncio.wait({producer})  # its cleanup (the turn's) is over when this returns
