"""The REST API's use cases (`ConversationsApi`) on the in-memory ports: no moto, no HTTP."""

from __future__ import annotations

import pytest

from sstools_agent.adapters.memory import InMemoryConversationStore, MemoryBlobStore
from sstools_agent.domain.conversations import (
    ConversationArchived,
    ConversationBusy,
    ConversationNotFound,
    IdempotencyKeyReused,
    MessageRole,
    StoredMessage,
)
from sstools_agent.domain.cursors import CursorCodec, InvalidCursor
from sstools_agent.domain.ports import BlobStoreError
from sstools_agent.domain.tool_outputs import ToolOutputNotFound, tool_output_key
from sstools_agent.rest.service import ConversationsApi

pytestmark = pytest.mark.anyio
SECRET = "a-cursor-secret-for-tests-0123456789"


@pytest.fixture
def store() -> InMemoryConversationStore:
    return InMemoryConversationStore()


@pytest.fixture
def outputs() -> MemoryBlobStore:
    return MemoryBlobStore()


@pytest.fixture
def api(store: InMemoryConversationStore, outputs: MemoryBlobStore) -> ConversationsApi:
    return ConversationsApi(
        store, CursorCodec(SECRET, "conversations"), CursorCodec(SECRET, "history"), outputs
    )


async def append(
    api: ConversationsApi, owner: str, conversation_id: str, content: str, key: str
) -> tuple[StoredMessage, bool]:
    return await api.append(
        owner,
        conversation_id,
        role=MessageRole.USER,
        content=content,
        ui_context=None,
        idempotency_key=key,
    )


async def test_listing_pages_with_signed_cursors_bound_to_owner_and_query(api: ConversationsApi):
    created = [await api.create("alice", f"отчёт {n}", None) for n in range(5)]
    await api.create("bob", "bob's", None)
    seen, cursor = [], None
    while True:
        page = await api.list("alice", limit=2, cursor=cursor, search=None, include_archived=False)
        seen += [c.conversation_id for c in page.items]
        cursor = page.next_cursor
        if cursor is None:
            break
        # Another user, another query, or a changed character: refused
        for owner, search in (("bob", None), ("alice", "отчёт")):
            with pytest.raises(InvalidCursor):
                await api.list(owner, limit=2, cursor=cursor, search=search, include_archived=False)
        with pytest.raises(InvalidCursor):
            await api.list(
                "alice", limit=2, cursor=cursor[:-2] + "xx", search=None, include_archived=False
            )
    assert sorted(seen) == sorted(c.conversation_id for c in created)


async def test_a_history_cursor_belongs_to_its_conversation(api: ConversationsApi):
    first = await api.create("alice", "one", None)
    other = await api.create("alice", "two", None)
    for n in range(3):
        await append(api, "alice", first.conversation_id, f"m{n}", f"key-{n}")
    _, page = await api.history("alice", first.conversation_id, limit=2, cursor=None)
    assert [m.content for m in page.items] == ["m0", "m1"]
    assert page.next_cursor is not None
    with pytest.raises(InvalidCursor):
        await api.history("alice", other.conversation_id, limit=2, cursor=page.next_cursor)
    _, rest = await api.history("alice", first.conversation_id, limit=2, cursor=page.next_cursor)
    assert [m.content for m in rest.items] == ["m2"]
    assert rest.next_cursor is None


async def test_another_users_conversation_reads_as_missing(api: ConversationsApi):
    mine = await api.create("alice", "private", None)
    with pytest.raises(ConversationNotFound):
        await api.history("bob", mine.conversation_id, limit=10, cursor=None)
    with pytest.raises(ConversationNotFound):
        await append(api, "bob", mine.conversation_id, "x", "key")
    with pytest.raises(ConversationNotFound):
        await api.archive("bob", mine.conversation_id)
    with pytest.raises(ConversationNotFound):
        await api.activity("bob", mine.conversation_id)


async def test_an_append_replay_is_idempotent(api: ConversationsApi):
    conversation = await api.create("alice", None, None)
    message, replayed = await append(api, "alice", conversation.conversation_id, "hi", "key-1")
    assert not replayed
    again, replayed = await append(api, "alice", conversation.conversation_id, "hi", "key-1")
    assert replayed
    assert again == message
    with pytest.raises(IdempotencyKeyReused):
        await append(api, "alice", conversation.conversation_id, "changed", "key-1")
    _, page = await api.history("alice", conversation.conversation_id, limit=10, cursor=None)
    assert [m.content for m in page.items] == ["hi"]


async def test_append_waits_for_a_running_turn_and_ends_with_the_archive(
    api: ConversationsApi, store: InMemoryConversationStore
):
    conversation = await api.create("alice", None, None)
    await store.start_turn(conversation, "run-in-another-tab", 30, new=False)
    activity, running = await api.activity("alice", conversation.conversation_id)
    assert running
    assert activity.locked_by == "run-in-another-tab"
    with pytest.raises(ConversationBusy):
        await append(api, "alice", conversation.conversation_id, "x", "key-1")
    archived = await api.archive("alice", conversation.conversation_id)
    assert archived.is_archived
    assert await store.cancel_requested(conversation.conversation_id, "run-in-another-tab")
    await store.finish_turn(
        conversation.conversation_id, "run-in-another-tab", 0, archived.updated_at
    )
    with pytest.raises(ConversationArchived):
        await append(api, "alice", conversation.conversation_id, "x", "key-2")


async def test_a_kept_tool_output_is_served_to_its_owner_only(
    api: ConversationsApi, outputs: MemoryBlobStore
):
    conversation = await api.create("alice", None, None)
    await outputs.put(tool_output_key(conversation.conversation_id, "call-1"), b"{}", "json")
    assert await api.tool_output("alice", conversation.conversation_id, "call-1") == b"{}"
    with pytest.raises(ToolOutputNotFound):
        await api.tool_output("alice", conversation.conversation_id, "call-2")
    with pytest.raises(ConversationNotFound):
        await api.tool_output("bob", conversation.conversation_id, "call-1")
    outputs.fail_on.add("get")
    with pytest.raises(BlobStoreError):
        await api.tool_output("alice", conversation.conversation_id, "call-1")
