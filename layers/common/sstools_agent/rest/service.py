"""The REST API's use cases over the conversation store; each takes the verified caller.

Ownership is checked on every access and a conversation of another user is reported exactly like
a missing one (`ConversationNotFound`, 404), so ids do not leak. The store's page tokens leave
here only inside signed cursors, bound to their owner and query.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sstools_agent.domain.conversations import (
    Conversation,
    InvalidPageToken,
    MessageRole,
    StoredMessage,
    now_iso,
)
from sstools_agent.domain.cursors import CursorCodec, InvalidCursor
from sstools_agent.domain.identity import (
    ClientCredentials,
    InvalidCredentials,
    MintedToken,
    TokenIssuer,
)
from sstools_agent.domain.ports import BlobStore, ConversationStore
from sstools_agent.domain.tool_outputs import ToolOutputNotFound, tool_output_key

DEFAULT_TITLE = "Новый разговор"


@dataclass(frozen=True, slots=True)
class Listing[T]:
    """A page for the caller, with the cursor of the next one."""

    items: list[T]
    next_cursor: str | None


class ConversationsApi:
    """Conversations, history, append, soft delete and the multi-tab gate, for their owner."""

    def __init__(
        self,
        store: ConversationStore,
        conversation_cursors: CursorCodec,
        history_cursors: CursorCodec,
        outputs: BlobStore,
    ) -> None:
        self.store = store
        self.outputs = outputs
        self._conversation_cursors = conversation_cursors
        self._history_cursors = history_cursors

    async def create(
        self, owner: str, title: str | None, ui_context: dict[str, Any] | None
    ) -> Conversation:
        fresh = Conversation.started(uuid.uuid4().hex, owner, title or DEFAULT_TITLE, ui_context)
        return await self.store.create(fresh)

    async def list(
        self,
        owner: str,
        *,
        limit: int,
        cursor: str | None,
        search: str | None,
        include_archived: bool,
    ) -> Listing[Conversation]:
        """The caller's conversations, most recently active first."""
        query = {"search": search or "", "include_archived": include_archived}
        after = self._conversation_cursors.decode(cursor, owner, query) if cursor else None
        try:
            page = await self.store.list_owned(
                owner, limit=limit, after=after, search=search, include_archived=include_archived
            )
        except InvalidPageToken as error:
            raise InvalidCursor(str(error)) from None
        next_cursor = None
        if page.next_token is not None:
            next_cursor = self._conversation_cursors.encode(owner, query, page.next_token)
        return Listing(page.items, next_cursor)

    async def history(
        self, owner: str, conversation_id: str, *, limit: int, cursor: str | None
    ) -> tuple[Conversation, Listing[StoredMessage]]:
        """A page of the conversation's messages, oldest first (archived ones stay readable)."""
        conversation = await self.store.get_owned(conversation_id, owner)
        query = {"conversation_id": conversation_id}
        after = self._history_cursors.decode(cursor, owner, query) if cursor else None
        try:
            page = await self.store.message_page(conversation_id, limit=limit, after=after)
        except InvalidPageToken as error:
            raise InvalidCursor(str(error)) from None
        next_cursor = None
        if page.next_token is not None:
            next_cursor = self._history_cursors.encode(owner, query, page.next_token)
        return conversation, Listing(page.items, next_cursor)

    async def tool_output(self, owner: str, conversation_id: str, tool_call_id: str) -> bytes:
        """A tool output kept whole (its history shows the summary and `output_ref`): the JSON
        bytes exactly as kept. Another user's conversation answers like a missing output."""
        await self.store.get_owned(conversation_id, owner)
        kept = await self.outputs.get(tool_output_key(conversation_id, tool_call_id))
        if kept is None:
            raise ToolOutputNotFound(tool_call_id)
        return kept

    async def append(
        self,
        owner: str,
        conversation_id: str,
        *,
        role: MessageRole,
        content: str,
        ui_context: dict[str, Any] | None,
        idempotency_key: str,
    ) -> tuple[StoredMessage, bool]:
        """Appends a message once per idempotency key; (message, whether it was a retry).

        Ownership first: a retry is answered from the stored key before any conditional write,
        and must not answer for another user's conversation."""
        await self.store.get_owned(conversation_id, owner)
        fingerprint = hashlib.sha256(
            json.dumps(
                {"role": role.value, "content": content, "ui_context": ui_context},
                sort_keys=True,
                ensure_ascii=False,
            ).encode()
        ).hexdigest()
        message = StoredMessage(
            uuid.uuid4().hex, role, content, now_iso(), seq=0, ui_context=ui_context
        )
        return await self.store.append_message(
            conversation_id,
            owner,
            message,
            idempotency_key=idempotency_key,
            fingerprint=fingerprint,
        )

    async def archive(self, owner: str, conversation_id: str) -> Conversation:
        return await self.store.archive(conversation_id, owner)

    async def activity(self, owner: str, conversation_id: str) -> tuple[Conversation, bool]:
        """The conversation and whether a run holds it now."""
        conversation = await self.store.get_owned(conversation_id, owner)
        return conversation, conversation.is_running(time.time())


class ServiceTokens:
    """Issues the agent's service token to the holder of its client credentials."""

    def __init__(
        self, credentials: Callable[[], ClientCredentials], issuer: TokenIssuer, ttl_s: int
    ) -> None:
        self._credentials = credentials
        self._issuer = issuer
        self.ttl_s = ttl_s

    def issue(self, client_id: str, client_secret: str) -> MintedToken:
        if not self._credentials().matches(client_id, client_secret):
            raise InvalidCredentials(client_id)
        return self._issuer.service_token(self.ttl_s)
