"""`GradioQueue` contract: a joined turn is claimed once, by a stream of its own subject, before
its expiry; another subject sees, claims and cancels nothing of it, whatever session hash it
sends; a cancel finds the conversation the turn opened."""

from __future__ import annotations

import time
import uuid

import pytest

from sstools_agent.domain.gradio_queue import QUEUED_FOR_S, QueuedTurn
from sstools_agent.domain.ports import GradioQueue

pytestmark = pytest.mark.anyio
OWNER = "egor.engineer"
OTHER = "olga.engineer"


def joined(session: str, *, subject: str = OWNER, at: float | None = None) -> QueuedTurn:
    at = time.time() if at is None else at
    return QueuedTurn(
        session=session,
        event_id=uuid.uuid4().hex,
        subject=subject,
        request={"message": "привет"},
        request_id="req-1",
        queued_at=at,
        expires_at=at + QUEUED_FOR_S,
    )


def a_session() -> str:
    return uuid.uuid4().hex[:12]


async def test_a_turn_is_claimed_once_oldest_first(gradio_queue: GradioQueue):
    session, now = a_session(), time.time()
    first, second = joined(session, at=now - 2), joined(session, at=now - 1)
    await gradio_queue.enqueue(second)
    await gradio_queue.enqueue(first)
    claimed = await gradio_queue.claim(session, OWNER, now)
    assert [turn.event_id for turn in claimed] == [first.event_id, second.event_id]
    assert claimed[0].request == {"message": "привет"}
    assert await gradio_queue.claim(session, OWNER, now) == []


async def test_another_subject_claims_and_cancels_nothing(gradio_queue: GradioQueue):
    session, now = a_session(), time.time()
    turn = joined(session)
    await gradio_queue.enqueue(turn)
    assert await gradio_queue.claim(session, OTHER, now) == []
    assert await gradio_queue.request_cancel(session, OTHER, turn.event_id, now) is None
    [claimed] = await gradio_queue.claim(session, OWNER, now)
    assert not claimed.cancel_requested


async def test_an_expired_turn_is_not_claimed_or_cancelled(gradio_queue: GradioQueue):
    session = a_session()
    turn = joined(session, at=time.time() - QUEUED_FOR_S - 5)
    await gradio_queue.enqueue(turn)
    now = time.time()
    assert await gradio_queue.claim(session, OWNER, now) == []
    assert await gradio_queue.request_cancel(session, OWNER, turn.event_id, now) is None


async def test_a_cancel_finds_the_conversation_the_turn_opened(gradio_queue: GradioQueue):
    session, now = a_session(), time.time()
    turn = joined(session)
    await gradio_queue.enqueue(turn)
    await gradio_queue.claim(session, OWNER, now)
    assert await gradio_queue.opened(session, OWNER, turn.event_id, "c" * 32) is False
    cancelled = await gradio_queue.request_cancel(session, OWNER, turn.event_id, now)
    assert cancelled is not None
    assert (cancelled.conversation_id, cancelled.cancel_requested) == ("c" * 32, True)


async def test_a_cancel_before_the_run_opens_is_told_when_it_opens(gradio_queue: GradioQueue):
    session, now = a_session(), time.time()
    turn = joined(session)
    await gradio_queue.enqueue(turn)
    await gradio_queue.claim(session, OWNER, now)
    assert await gradio_queue.request_cancel(session, OWNER, turn.event_id, now) is not None
    assert await gradio_queue.opened(session, OWNER, turn.event_id, "c" * 32) is True


async def test_a_finished_turn_is_gone(gradio_queue: GradioQueue):
    session, now = a_session(), time.time()
    turn = joined(session)
    await gradio_queue.enqueue(turn)
    await gradio_queue.claim(session, OWNER, now)
    await gradio_queue.finish(session, OWNER, turn.event_id)
    assert await gradio_queue.request_cancel(session, OWNER, turn.event_id, now) is None
