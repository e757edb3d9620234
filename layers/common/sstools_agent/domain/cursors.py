"""Opaque page cursors: where the next page starts, signed so a client can neither forge nor
reuse one for another user or another query.

A cursor carries the store's page token (opaque here: only the store that issued it reads it),
the owner it was issued to and the query it belongs to (search text, archived flag,
conversation). It is signed with an HMAC
key (itsdangerous); any change, or a cursor presented by someone else or for another query, is
`InvalidCursor` (400), never a storage error.
"""

from __future__ import annotations

from typing import Any, Final

from itsdangerous import BadSignature, URLSafeSerializer

MAX_CURSOR_CHARS: Final = 2048
"""Longer cursors are refused unread (the REST schema states the same bound)."""


class InvalidCursor(Exception):
    """A cursor this service did not issue for this caller and query."""


class CursorCodec:
    """Signs and checks page cursors of one kind of listing (the `purpose`)."""

    def __init__(self, secret: str, purpose: str) -> None:
        if len(secret) < 16:
            raise ValueError("the cursor signing secret must have at least 16 characters")
        self._serializer = URLSafeSerializer(secret, salt=f"sstools-agent-cursor:{purpose}")

    def encode(self, owner: str, query: dict[str, Any], position: str) -> str:
        """A cursor that resumes `query` for `owner` at `position` (a store's page token)."""
        return str(self._serializer.dumps({"o": owner, "q": query, "p": position}))

    def decode(self, cursor: str, owner: str, query: dict[str, Any]) -> str:
        """The page token in a cursor issued to `owner` for `query`; InvalidCursor otherwise."""
        if len(cursor) > MAX_CURSOR_CHARS:
            raise InvalidCursor("cursor too long")
        try:
            data = self._serializer.loads(cursor)
        except BadSignature:
            raise InvalidCursor("cursor was not issued by this service") from None
        if not isinstance(data, dict) or data.get("o") != owner:
            raise InvalidCursor("cursor belongs to another user")
        if data.get("q") != query:
            raise InvalidCursor("cursor belongs to another query")
        position = data.get("p")
        if not isinstance(position, str) or not position:
            raise InvalidCursor("cursor has no position")
        return position
