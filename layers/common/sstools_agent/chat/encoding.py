"""How a stream of events becomes bytes on the wire, one encoder per wire protocol.

The chat function picks an encoder per response and writes `frame(...)` for every event, then
`close()`; the events and their ids come from `ChatTurns` and do not know the encoding. A new
protocol (AG-UI, say) is one more class here: it may keep state across a stream (an open text
message, a run id), which is why the app makes a fresh encoder for each response.
"""

from __future__ import annotations

import json
from typing import Final, Protocol

from sstools_agent.domain.chat_events import ChatEvent, Notice

_JSON: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))
"""Built once: `json.dumps` with options builds an encoder per call, and this runs per token."""


class StreamEncoder(Protocol):
    """One response's stream of events in one wire protocol."""

    @property
    def media_type(self) -> str:
        """The response's Content-Type."""
        ...

    def frame(self, event_id: str | None, event: ChatEvent) -> bytes:
        """The bytes for one event (empty when the protocol has nothing to say about it);
        `event_id` is None for an event that is no stored one (said anew on a reconnect)."""
        ...

    def close(self) -> bytes | None:
        """What ends a stream that ran to its end (None when the protocol needs nothing)."""
        ...


class ChatMessageSSE:
    """Server-sent events carrying the seed's ChatMessage JSON: the event's SSE `id` (for
    Last-Event-ID resume) and its wire object on one `data:` line."""

    media_type: Final = "text/event-stream"

    def frame(self, event_id: str | None, event: ChatEvent) -> bytes:
        if isinstance(event, Notice):
            return b""
        data = f"data: {_JSON.encode(event.to_wire())}\n\n"
        # Without an `id:` line a client's last event id stays where it was (SSE's own rule).
        return (data if event_id is None else f"id: {event_id}\n{data}").encode()

    def close(self) -> bytes | None:
        """Nothing: `stream_end` is an event of its own."""
        return None
