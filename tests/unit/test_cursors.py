"""Page cursors: opaque, and good only for the owner and query they were issued for."""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sstools_agent.domain.cursors import MAX_CURSOR_CHARS, CursorCodec, InvalidCursor

SECRET = "a-cursor-secret-for-tests-0123456789"
POSITION = "a-store-page-token:CONV#abc:OWNER#alice:2026-11-30"
"""A store's page token: opaque to the codec, which only signs and binds it."""
QUERY = {"search": "", "include_archived": False}


def test_a_cursor_resumes_its_owners_query():
    codec = CursorCodec(SECRET, "conversations")
    cursor = codec.encode("alice", QUERY, POSITION)
    assert "OWNER" not in cursor  # opaque enough not to read as a key
    assert codec.decode(cursor, "alice", QUERY) == POSITION


@pytest.mark.parametrize(
    ("owner", "query", "reason"),
    [
        ("bob", QUERY, "another user"),
        ("alice", {"search": "x", "include_archived": False}, "another query"),
    ],
)
def test_a_cursor_is_refused_for_another_owner_or_query(owner, query, reason):
    codec = CursorCodec(SECRET, "conversations")
    cursor = codec.encode("alice", QUERY, POSITION)
    with pytest.raises(InvalidCursor, match=reason):
        codec.decode(cursor, owner, query)


def test_cursors_of_one_listing_or_key_do_not_open_another():
    cursor = CursorCodec(SECRET, "history").encode("alice", QUERY, POSITION)
    with pytest.raises(InvalidCursor):
        CursorCodec(SECRET, "conversations").decode(cursor, "alice", QUERY)
    with pytest.raises(InvalidCursor):
        CursorCodec(SECRET + "x", "history").decode(cursor, "alice", QUERY)


@given(st.integers(min_value=0), st.characters(codec="ascii"))
def test_a_changed_character_never_moves_the_position(index, replacement):
    """Refused, or (a base64 padding bit nobody reads) the very same position: never another."""
    codec = CursorCodec(SECRET, "conversations")
    cursor = codec.encode("alice", QUERY, POSITION)
    position = index % len(cursor)
    changed = cursor[:position] + replacement + cursor[position + 1 :]
    with contextlib.suppress(InvalidCursor):
        assert codec.decode(changed, "alice", QUERY) == POSITION


def test_oversized_cursors_are_refused_unread():
    with pytest.raises(InvalidCursor, match="too long"):
        CursorCodec(SECRET, "conversations").decode("x" * (MAX_CURSOR_CHARS + 1), "alice", QUERY)


def test_a_short_secret_is_refused():
    with pytest.raises(ValueError, match="16"):
        CursorCodec("short", "conversations")
