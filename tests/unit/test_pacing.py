"""The chat's socket writes (chat/pacing.py): tokens coalesced within a window, anything else at
once and after them, a timer that never holds back a pausing model's last token, heartbeats in a
silence, and the producer's own cleanup when the response stops reading."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

import pytest

from sstools_agent.chat.pacing import HEARTBEAT, Frame, paced

pytestmark = pytest.mark.anyio
WIDE = 0.5
"""A window far longer than a burst takes, even on a loaded machine."""


def token(n: int) -> Frame:
    return f"t{n};".encode(), False


async def burst_then(pause: asyncio.Event, *after: Frame) -> AsyncGenerator[Frame]:
    for n in range(5):
        yield token(n)
    await pause.wait()
    for frame in after:
        yield frame


async def test_a_burst_of_tokens_is_one_write_and_an_urgent_frame_follows_at_once():
    """(After the stream's first frame, which is written at once.)"""

    async def source() -> AsyncGenerator[Frame]:
        for n in range(5):
            yield token(n)
        yield b"card;", True
        yield token(9)

    writes = [w async for w in paced(source(), window_s=WIDE, heartbeat_s=30)]
    assert writes == [b"t0;", b"t1;t2;t3;t4;card;", b"t9;"]  # the first at once


async def test_a_pausing_model_does_not_hold_back_its_last_tokens():
    pause = asyncio.Event()
    stream = paced(burst_then(pause, token(5)), window_s=0.05, heartbeat_s=30)
    assert await anext(stream) == b"t0;"
    held = await asyncio.wait_for(anext(stream), 5)  # the timer ends the window, not token 5
    assert held == b"t1;t2;t3;t4;"
    pause.set()
    assert [w async for w in stream] == [b"t5;"]


async def test_a_silence_gets_heartbeats_and_the_stream_goes_on():
    pause = asyncio.Event()
    stream = paced(burst_then(pause, (b"end;", True)), window_s=0.01, heartbeat_s=0.05)
    assert await anext(stream) == b"t0;"
    assert await anext(stream) == b"t1;t2;t3;t4;"
    assert await asyncio.wait_for(anext(stream), 5) == HEARTBEAT
    assert await asyncio.wait_for(anext(stream), 5) == HEARTBEAT
    pause.set()
    rest = [w async for w in stream]
    assert rest[-1] == b"end;"
    assert set(rest[:-1]) <= {HEARTBEAT}


async def test_a_response_that_stops_reading_closes_the_producer_before_it_returns():
    closed = asyncio.Event()

    async def source() -> AsyncGenerator[Frame]:
        try:
            yield b"first;", True
            await asyncio.sleep(30)
            yield b"never;", True
        finally:
            await asyncio.sleep(0)  # cleanup that awaits, as the turn's does
            closed.set()

    stream = paced(source(), heartbeat_s=30)
    assert await anext(stream) == b"first;"
    await stream.aclose()
    assert closed.is_set()


async def test_what_the_producer_raises_reaches_the_reader_after_what_it_sent():
    async def source() -> AsyncGenerator[Frame]:
        yield token(1)
        yield token(2)
        raise RuntimeError("boom")

    stream = paced(source(), window_s=WIDE, heartbeat_s=30)
    assert await anext(stream) == b"t1;"
    assert await anext(stream) == b"t2;"
    with pytest.raises(RuntimeError, match="boom"):
        await anext(stream)


async def test_a_model_that_never_pauses_still_gets_a_write_per_window():
    async def source() -> AsyncGenerator[Frame]:
        for n in range(3000):
            yield token(n)
            await asyncio.sleep(0)  # another token is always waiting: the timer never fires
        yield b"end;", True

    writes = [w async for w in paced(source(), window_s=0.001, heartbeat_s=30)]
    assert len(writes) > 3  # not all held until the end
    assert b"".join(writes) == b"".join(token(n)[0] for n in range(3000)) + b"end;"
