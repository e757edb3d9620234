"""The Gradio endpoint's turns across instances: a join records its turn (`GradioQueue`), the
instance serving the session's stream claims and runs it through the one turn service, and a
cancel from any instance reaches the run through the conversation's cancel flag.

Nothing lives in a process between two requests: the join, the stream and the cancel may each
reach another Lambda execution environment, and share only the table.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import AsyncGenerator, Callable
from typing import Final

from fastapi.exceptions import RequestValidationError

from sstools_agent.chat.gradio import (
    CLOSE_STREAM,
    SESSION_NOT_FOUND,
    BareCardAnswer,
    GradioMessages,
    JoinBody,
    chat_request_of,
    refuse,
)
from sstools_agent.chat.pacing import Frame
from sstools_agent.chat.request import ChatRequestBody
from sstools_agent.chat.service import ChatService
from sstools_agent.domain.chat_events import EventType
from sstools_agent.domain.conversations import ConversationNotFound, NotRunning
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.gradio_queue import QUEUED_FOR_S, GradioTurnNotFound, QueuedTurn
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.ports import GradioQueue
from sstools_agent.domain.ui_context import ContextRejected
from sstools_agent.http.refusals import REFUSALS, refusal_of

logger = logging.getLogger(__name__)

Clock = Callable[[], float]
REFUSED_BEFORE_RUNNING: Final[tuple[type[Exception], ...]] = (
    *REFUSALS,
    ContextRejected,
    RequestValidationError,
)
"""What a turn may be refused with as it opens: the refusal table's, and the two with bodies of
their own. The chat endpoint answers them with an HTTP status; here the join was answered long
ago, so the turn's stream says them."""


class GradioTurns:
    """Join, stream and cancel Gradio turns of an authenticated user."""

    def __init__(
        self, service: ChatService, queue: GradioQueue, *, clock: Clock = time.time
    ) -> None:
        self.service, self.queue, self.clock = service, queue, clock

    async def join(self, principal: Principal, join: JoinBody, request_id: str) -> str:
        """Checks the inputs (RequestValidationError: 422) and queues the turn; its event id."""
        try:
            body = chat_request_of(join)
        except BareCardAnswer as bare:
            raise await self._bare_answer(principal, bare) from None
        now = self.clock()
        turn = QueuedTurn(
            session=join.session_hash,
            event_id=uuid.uuid4().hex,
            subject=principal.subject,
            request=body.model_dump(mode="json", exclude_none=True),
            request_id=request_id,
            queued_at=now,
            expires_at=now + QUEUED_FOR_S,
        )
        await self.queue.enqueue(turn)
        return turn.event_id

    async def _bare_answer(self, principal: Principal, bare: BareCardAnswer) -> Exception:
        """The refusal of `confirm` or `deny` without an id, naming the card that waits (the
        caller's conversation only), so the page can answer it as `confirm:<id>`."""
        waiting = None
        if bare.conversation_id:
            try:
                conversation = await self.service.turns.store.get_owned(
                    bare.conversation_id, principal.subject
                )
                waiting = conversation.pending_confirmation_id
            except ConversationNotFound:
                waiting = None
        if waiting is None:
            return refuse(
                "action",
                f"action {bare.action} needs the card's id, {bare.action}:<confirmation_id>; "
                "no card waits in this conversation",
            )
        return refuse(
            "action",
            f"action {bare.action} needs the card's id: {bare.action}:{waiting} answers the card "
            f"that waits (confirmation_id {waiting})",
            confirmation_id=waiting,
        )

    async def stream(self, principal: Principal, session: str) -> AsyncGenerator[Frame]:
        """The session's stream: the caller's queued turns, claimed and run one after another
        (and those joined meanwhile), then `close_stream`; `unexpected_error` with
        `session_not_found` when none of the caller's turns waits."""
        claimed = await self.queue.claim(session, principal.subject, self.clock())
        if not claimed:
            yield SESSION_NOT_FOUND, True
            return
        while claimed:
            for turn in claimed:
                async for frame in self._run(principal, turn):
                    yield frame
            claimed = await self.queue.claim(session, principal.subject, self.clock())
        yield CLOSE_STREAM, True

    async def _run(self, principal: Principal, turn: QueuedTurn) -> AsyncGenerator[Frame]:
        messages = GradioMessages(turn.event_id)
        yield messages.starts(), True
        try:
            body = ChatRequestBody.model_validate(turn.request)
            try:
                opened = await self.service.open(principal, body, request_id=turn.request_id)
            except REFUSED_BEFORE_RUNNING as refused:
                yield messages.failed(*_refusal(refused)), True
                return
            conversation_id = opened.conversation_id
            # Off the first event's path (one write less before it): where a cancel finds the run
            noted = asyncio.create_task(self._note_opened(principal, turn, conversation_id))
            logger.info(
                "turn",
                extra={
                    "request_id": turn.request_id,
                    "user": principal.subject,
                    "conversation_id": conversation_id,
                    "action": body.action,
                    "protocol": type(messages).__name__,
                },
            )
            try:
                async for event_id, event in self.service.events(opened):
                    if data := messages.frame(event_id, event):
                        yield data, event.type is not EventType.STREAM_TOKEN
            finally:
                await noted
            yield messages.close(), True
        finally:
            await self.queue.finish(turn.session, turn.subject, turn.event_id)

    async def _note_opened(
        self, principal: Principal, turn: QueuedTurn, conversation_id: str
    ) -> None:
        """Records the turn's conversation, and stops the run if a cancel came before it."""
        if await self.queue.opened(turn.session, turn.subject, turn.event_id, conversation_id):
            await self._stop(principal, conversation_id)

    async def cancel(self, principal: Principal, session: str, event_id: str) -> None:
        """Stops the caller's turn `event_id`, from any instance: before its run opens, the
        stream stops it as it opens; after, through the conversation's cancel flag.
        GradioTurnNotFound (404) when the caller has no such live turn."""
        turn = await self.queue.request_cancel(session, principal.subject, event_id, self.clock())
        if turn is None:
            raise GradioTurnNotFound(event_id)
        if turn.conversation_id is not None:
            await self._stop(principal, turn.conversation_id)

    async def _stop(self, principal: Principal, conversation_id: str) -> None:
        with contextlib.suppress(NotRunning):  # it ended on its own meanwhile
            await self.service.cancel(principal, conversation_id)


def _refusal(refused: Exception) -> tuple[ErrorCode, str]:
    """A refusal's code and text, as the chat endpoint answers it."""
    if isinstance(refused, ContextRejected):
        body = refused.rejection.to_error_body()
        return ErrorCode(body["code"]), str(body["detail"])
    if isinstance(refused, RequestValidationError):
        return ErrorCode.VALIDATION_ERROR, str(refused.errors())
    _, code, detail = refusal_of(refused)
    return code, detail
