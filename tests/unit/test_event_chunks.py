"""A flush of the event writer is one stored item unless its bytes need more
(`adapters/dynamodb/items.py`'s `event_chunks`, `chat/event_log.py`'s flush cadence)."""

from __future__ import annotations

from sstools_agent.adapters.dynamodb.items import event_chunks
from sstools_agent.chat.event_log import FLUSH_EVERY_EVENTS
from sstools_agent.domain.chat_events import StreamToken
from sstools_agent.domain.tool_outputs import MAX_ITEM_BYTES


def tokens(count: int, text: str = "слово ") -> list[tuple[int, dict[str, object]]]:
    return [(seq, StreamToken(text).to_wire()) for seq in range(1, count + 1)]


def test_a_full_flush_of_tokens_is_one_item():
    assert len(event_chunks(tokens(FLUSH_EVERY_EVENTS))) == 1


def test_a_flush_whose_bytes_pass_an_item_is_split_by_bytes():
    big = "ы" * (MAX_ITEM_BYTES // 20)  # about 10 % of an item each (2 bytes a letter)
    chunks = event_chunks(tokens(20, big))
    assert len(chunks) >= 2
    assert [seq for chunk in chunks for seq, _ in chunk] == list(range(1, 21))
