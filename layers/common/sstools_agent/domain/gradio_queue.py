"""Turns queued through the Gradio endpoint: what a join records and a stream claims.

Gradio's own queue lives in one process's memory; on Lambda the join (POST queue/join) and the
stream (GET queue/data) reach different execution environments. So a join writes its turn here
(`QueuedTurn`), and whichever instance serves the session's stream claims it with a conditional
write and runs it. A session hash is never a capability on its own: every turn is keyed by the
subject of the JWT that queued it as well, and no other subject can claim, see or cancel it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

QUEUED_FOR_S: Final = 60
"""How long a joined turn waits for its stream: the client opens it right after the join (a turn
not claimed by then is dropped; the table's TTL deletes it later, and reads check it first)."""
RUNNING_FOR_S: Final = 900
"""How long a claimed turn is kept (for a cancel to find its conversation): a Lambda's longest
run."""


class GradioTurnNotFound(Exception):
    """No live turn of this caller under that event id in that session (404: whether another
    subject has one does not leak)."""


class GradioTurnState:
    """Where a queued turn is: waiting for its stream, or claimed by one."""

    QUEUED: Final = "queued"
    CLAIMED: Final = "claimed"


@dataclass(frozen=True, slots=True)
class QueuedTurn:
    """One joined turn: the chat request it carries, bound to its subject and session.

    `request` is the chat request body's fields (`ChatRequestBody`), checked at the join;
    `conversation_id` is set once the stream opened the turn (a new conversation has one only
    then), and `cancel_requested` when a cancel came first."""

    session: str
    event_id: str
    subject: str
    request: dict[str, Any]
    request_id: str
    queued_at: float
    expires_at: float
    state: str = GradioTurnState.QUEUED
    conversation_id: str | None = None
    cancel_requested: bool = False

    def live(self, now: float) -> bool:
        """Not past its expiry (TTL deletes late: every read checks it)."""
        return self.expires_at > now
