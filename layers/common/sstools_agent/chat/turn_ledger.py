"""What a turn leaves as it streams: each event numbered (stored for replay, recorded for the
history, audited), the user's message written beside the first event, and once the turn ends,
its messages stored and the conversation's lock given back (even when the client went away)."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass

import anyio

from sstools_agent.chat.attachments import ChatAttachments
from sstools_agent.chat.event_log import EventLogWriter
from sstools_agent.chat.prepared_turn import PreparedTurn
from sstools_agent.domain.chat_events import ChatEvent, StreamEnd
from sstools_agent.domain.conversations import (
    MessageRole,
    StoredMessage,
    TurnRecorder,
    event_id,
    now_iso,
)
from sstools_agent.domain.ports import ConversationStore

logger = logging.getLogger(__name__)


@dataclass
class UserMessage:
    """The user's message of a turn: written into the history beside the turn's first event, not
    before it (the user does not wait for that write), and once."""

    store: ConversationStore
    conversation_id: str
    message: StoredMessage | None
    """Until written."""
    keep_files: Callable[[], Awaitable[None]] | None = None
    """Keeps the message's files, as they were checked, where attached files are kept."""
    message_id: str | None = None

    def __post_init__(self) -> None:
        self.message_id = self.message.message_id if self.message else None

    @classmethod
    def of(
        cls, turn: PreparedTurn, store: ConversationStore, seq: int, keeper: ChatAttachments
    ) -> UserMessage:
        """The message `turn` was sent with, to be written as its event `seq` (none for an
        answer to a card, which has no message of its own)."""
        conversation = turn.conversation
        if turn.message is None or turn.result is not None:  # an answer to a card has none
            return cls(store, conversation.conversation_id, None)
        files = turn.attachments
        infos = [file.info for file in files]
        message = StoredMessage(
            uuid.uuid4().hex,
            MessageRole.USER,
            turn.message,
            now_iso(),
            seq,
            ui_context=conversation.ui_context,
            attachments=[info.to_record() for info in infos],
        )
        keep = None
        if infos:
            owner = conversation.owner

            async def keep() -> None:
                await keeper.keep(owner, files)

        return cls(store, conversation.conversation_id, message, keep)

    def write(self) -> list[asyncio.Task[None]]:
        """The write, started (nothing when there is none or it was started before); the
        message's files are kept beside it (a failed keep is logged: the download serves the
        upload, as bytes, until it expires, and the next message that attaches it keeps it)."""
        if self.message is None:
            return []
        message, self.message = self.message, None
        tasks = [asyncio.create_task(self.store.add_messages(self.conversation_id, [message]))]
        if self.keep_files is not None:
            tasks.append(asyncio.create_task(_logged(self.keep_files(), "keeping attached files")))
        return tasks


async def _logged(call: Awaitable[None], what: str) -> None:
    try:
        await call
    except Exception:
        logger.exception("%s failed", what)


class TurnLedger:
    """What a turn leaves as it streams: its numbered events (stored for replay, recorded for
    the history, audited), and once it ends, its messages stored and the conversation released."""

    def __init__(
        self,
        turn: PreparedTurn,
        events: AsyncGenerator[ChatEvent],
        store: ConversationStore,
        *,
        lease_s: float,
        attachments: ChatAttachments,
        audit: Callable[[PreparedTurn, ChatEvent, TurnRecorder], None],
    ) -> None:
        self.turn, self.events, self.store, self.audit = turn, events, store, audit
        conversation_id = turn.conversation.conversation_id
        self.seq = turn.conversation.last_seq
        self.writer = EventLogWriter(store, conversation_id, turn.run_id, lease_s)
        self.recorder = TurnRecorder()
        self.user_message = UserMessage.of(turn, store, self.seq + 1, attachments)
        self.history: list[asyncio.Task[None]] = []
        self.assistant_message_id = uuid.uuid4().hex
        self.finished = False
        """The stream reached its `stream_end` (else the history says "interrupted")."""
        self._settled = False

    def number(self, event: ChatEvent, stored: ChatEvent | None = None) -> tuple[str, ChatEvent]:
        """The live event with its id; `stored` is what replay and history keep of it."""
        self.seq += 1
        kept = stored or event
        self.recorder.record(kept)
        self.audit(self.turn, kept, self.recorder)
        self.writer.add(self.seq, kept)
        self.history.extend(self.user_message.write())
        return event_id(self.turn.conversation.conversation_id, self.seq), event

    def end(self) -> StreamEnd:
        """The turn's `stream_end`: its conversation and the two messages it wrote."""
        conversation_id = self.turn.conversation.conversation_id
        return StreamEnd(conversation_id, self.user_message.message_id, self.assistant_message_id)

    async def settle(self) -> None:
        """Stores what the turn leaves (events, messages) and releases the lock, once; a
        cancel does not stop it."""
        if self._settled:
            return
        self._settled = True
        try:
            await self.events.aclose()
        finally:
            with anyio.CancelScope(shield=True):
                self.history.extend(self.user_message.write())  # ended before its first event
                await asyncio.gather(*self.history)
                await self._close()

    async def _close(self) -> None:
        conversation_id = self.turn.conversation.conversation_id
        # This runs before stream_end goes out (or after the client left): a failure here is
        # logged, never raised into the stream (the client would see it cut, not ended).
        try:
            await self.writer.close()
            recorder = self.recorder
            if recorder.answer or recorder.tool_calls or recorder.confirmations:
                message = StoredMessage(
                    self.assistant_message_id,
                    MessageRole.ASSISTANT,
                    recorder.answer,
                    now_iso(),
                    self.seq,
                    tool_calls=list(recorder.tool_calls.values()),
                    confirmations=recorder.confirmations,
                    status="complete" if self.finished else "interrupted",
                )
                await self.store.add_messages(conversation_id, [message])
        except Exception:
            logger.exception("storing the turn's events or history failed")
        finally:
            try:
                await self.store.finish_turn(conversation_id, self.turn.run_id, self.seq, now_iso())
            except Exception:
                logger.exception("releasing the conversation failed; its lease will lapse")
