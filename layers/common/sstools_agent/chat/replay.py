"""Replay for a reconnecting client: the events it missed after its last id, following a run
still in progress; then the card still waiting that it has not seen, or what became of a call
whose run was interrupted; and `stream_end`, as every stream ends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from typing import Final

from sstools_agent.agent.runtime import ChatAgent
from sstools_agent.chat.prepared_turn import PreparedTurn
from sstools_agent.chat.turn_cards import REJECTED_AS
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmationResult,
    ConfirmRequired,
    StreamEnd,
    Text,
)
from sstools_agent.domain.confirmation_outcomes import (
    cancellation_text,
    outcome_text,
    unshown_card_text,
)
from sstools_agent.domain.confirmations import ConfirmationStatus, Settlement
from sstools_agent.domain.conversations import Conversation, event_id
from sstools_agent.domain.ports import ConfirmationStore, ConversationStore

REPLAY_POLL_S: Final = 0.25
REPLAY_LIMIT_S: Final = 300.0


class TurnReplay:
    """Replays a conversation's stored events to a client that reconnects."""

    def __init__(
        self,
        agent_factory: Callable[[], ChatAgent],
        store: ConversationStore,
        confirmations: ConfirmationStore,
    ) -> None:
        self._agent_factory = agent_factory
        self.store, self.confirmations = store, confirmations

    async def replay(
        self, turn: PreparedTurn, *, limit_s: float = REPLAY_LIMIT_S
    ) -> AsyncIterator[tuple[str | None, ChatEvent]]:
        """Replays events after `turn.resume_after`, following a run still in progress; then
        re-emits a pending confirmation the client has not seen, or says what became of a
        confirmed call; and ends with `stream_end`, as every stream does.

        Replayed events keep their stored ids. What is said anew here is no stored event: it has
        no id (None), so a client that drops events by an id it has seen still shows it, and its
        resume point never moves past events it did not get."""
        conversation_id = turn.conversation.conversation_id
        seq, deadline = turn.resume_after, time.monotonic() + limit_s
        replayed_cards: set[str] = set()
        ended = False
        while True:
            # The state first, then the events: a run stores all its events before it lets go
            # of the conversation, so once it reads as ended, the read after it has them all.
            current = await self.store.get(conversation_id)
            running = current is not None and current.is_running(time.time())
            for stored_seq, wire in await self.store.events_after(conversation_id, seq):
                seq = stored_seq
                event = ChatEvent.from_wire(wire)
                if isinstance(event, ConfirmRequired) and event.confirmation_id:
                    replayed_cards.add(event.confirmation_id)
                ended = isinstance(event, StreamEnd)
                yield event_id(conversation_id, seq), event
            if not running or time.monotonic() > deadline:
                break
            await asyncio.sleep(REPLAY_POLL_S)
        said = await self._still_open_card(current, replayed_cards)
        for event in said:
            yield None, event
        if said or not ended:
            # A replay writes no messages: its end names none.
            yield None, StreamEnd(conversation_id, None, None)

    async def _still_open_card(
        self, conversation: Conversation | None, replayed: set[str]
    ) -> list[ChatEvent]:
        """For a reconnect: the card still waiting for a decision, with its id, unless the
        replay showed it; for a confirmed call whose run was interrupted, what is known of it;
        for a card decided against (or expired, or superseded by an edit) whose run never
        resolved it, that nothing ran — always (a replayed card may be spent). Never a card
        that cannot be answered."""
        waiting = conversation.pending_confirmation_id if conversation else None
        confirmation = await self.confirmations.get(waiting) if waiting else None
        if conversation is None or confirmation is None:
            return []
        agent = self._agent_factory()
        pending = await agent.pending_confirmation(conversation.conversation_id)
        if pending is None:
            return []
        if pending.fingerprint != confirmation.fingerprint:
            # An edit superseded the card and its run stopped before the new card was held:
            # the edited call waits on a card nobody saw, and nothing ran.
            if confirmation.status is not ConfirmationStatus.SUPERSEDED:
                return []
            return [Text(unshown_card_text(pending.tool, pending.args, confirmation.edited_args))]
        said: list[ChatEvent] = []
        match confirmation.settlement(time.time()):
            case Settlement.CANCEL if (
                confirmation.status is ConfirmationStatus.PENDING
                and confirmation.confirmation_id not in replayed
            ):  # (one confirmed once waits for someone else: its requester has nothing to answer)
                card = agent.card_of(conversation.conversation_id, pending)
                said.append(
                    card.answerable_as(
                        confirmation.confirmation_id, confirmation.expires_iso, confirmation.plan
                    )
                )
            case Settlement.REPORT:
                outcome = confirmation.interrupted_outcome
                said.append(
                    Text(
                        outcome_text(pending.tool, outcome, pending.args, confirmation.edited_args)
                    )
                )
            case Settlement.REJECT:
                # Decided against (or expired), and the run that resolves it never got there
                if confirmation.status is ConfirmationStatus.SUPERSEDED:
                    # The edit asked again, and the run stopped before its card was held
                    edited = confirmation.edited_args
                    said.append(Text(unshown_card_text(pending.tool, pending.args, edited)))
                else:
                    # A stale card's run stopped before its new card was held: it says so
                    # (not «отменено новым сообщением», which no message did)
                    stale = confirmation.status is ConfirmationStatus.STALE
                    result = ConfirmationResult.STALE if stale else REJECTED_AS[confirmation.status]
                    said.append(Text(cancellation_text(pending.tool, result, pending.args)))
        return said
