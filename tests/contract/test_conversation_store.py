"""`ConversationStore` contract: records, the turn lock, events, history, idempotent appends and
pages behave alike on every backend."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from sstools_agent.domain.conversations import (
    Conversation,
    ConversationArchived,
    ConversationBusy,
    ConversationNotFound,
    ConversationSubject,
    IdempotencyKeyReused,
    InvalidPageToken,
    MessageRole,
    StoredItemTooLarge,
    StoredMessage,
)
from sstools_agent.domain.ports import ConversationStore
from sstools_agent.domain.tool_outputs import MAX_ITEM_BYTES

pytestmark = pytest.mark.anyio
AT = "2026-11-30T10:00:00.000Z"
LEASE_S = 60.0
LAPSED_S = -1.0
"""A lease that ended a second before it was taken."""


def conversation(
    owner: str, *, at: str = AT, title: str = "contract", **fields: Any
) -> Conversation:
    return Conversation(uuid.uuid4().hex, owner, title, at, at, **fields)


def user() -> str:
    return f"user-{uuid.uuid4().hex[:8]}"


def message(text: str, seq: int = 0, role: MessageRole = MessageRole.USER) -> StoredMessage:
    return StoredMessage(uuid.uuid4().hex, role, text, AT, seq, ui_context={"envId": "ss-dev"})


def token(seq: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": "",
        "metadata": {"type": "stream_token", "token": f"t{seq}"},
    }


async def held(store: ConversationStore, owner: str | None = None) -> tuple[Conversation, str]:
    """A new conversation held by a run, and the run's id."""
    run = uuid.uuid4().hex
    record = await store.start_turn(conversation(owner or user()), run, LEASE_S, new=True)
    return record, run


async def append(
    store: ConversationStore, record: Conversation, text: str, key: str | None = None
) -> tuple[StoredMessage, bool]:
    return await store.append_message(
        record.conversation_id,
        record.owner,
        message(text),
        idempotency_key=key or uuid.uuid4().hex,
        fingerprint=f"fp-{text}",
    )


# --- records --------------------------------------------------------------------------------


async def test_a_created_conversation_is_found_by_its_owner_only(store: ConversationStore):
    owner = user()
    created = await store.create(conversation(owner, ui_context={"envId": "ss-dev"}))
    assert created.last_seq == 0
    assert created.locked_by is None
    assert not created.is_archived
    assert await store.get(created.conversation_id) == created
    assert await store.get_owned(created.conversation_id, owner) == created
    with pytest.raises(ConversationNotFound):
        await store.get_owned(created.conversation_id, user())
    with pytest.raises(ConversationNotFound):
        await store.get_owned(uuid.uuid4().hex, owner)
    assert await store.get(uuid.uuid4().hex) is None


async def test_archive_marks_the_record_and_stops_a_running_answer(store: ConversationStore):
    record, run = await held(store)
    with pytest.raises(ConversationNotFound):
        await store.archive(record.conversation_id, user())
    archived = await store.archive(record.conversation_id, record.owner)
    assert archived.is_archived
    assert await store.cancel_requested(record.conversation_id, run)
    with pytest.raises(ConversationNotFound):
        await store.archive(uuid.uuid4().hex, record.owner)


# --- the turn lock --------------------------------------------------------------------------


async def test_a_new_turn_creates_the_record_and_holds_it(store: ConversationStore):
    record, run = await held(store)
    assert record.locked_by == run
    assert record.is_running(record.locked_at or 0)
    stored = await store.get(record.conversation_id)
    assert stored is not None
    assert stored.locked_by == run


async def test_a_second_turn_while_held_is_busy_and_writes_nothing(store: ConversationStore):
    record, run = await held(store)
    with pytest.raises(ConversationBusy):
        await store.start_turn(record, uuid.uuid4().hex, LEASE_S, new=False)
    with pytest.raises(ConversationBusy):  # the same id again as new: the record exists
        await store.start_turn(record, uuid.uuid4().hex, LEASE_S, new=True)
    stored = await store.get(record.conversation_id)
    assert stored is not None
    assert stored.locked_by == run


async def test_a_turn_is_refused_for_another_owner_a_missing_or_an_archived_conversation(
    store: ConversationStore,
):
    record, run = await held(store)
    await store.finish_turn(record.conversation_id, run, 0, AT)
    stranger = conversation(user())
    with pytest.raises(ConversationNotFound):
        await store.start_turn(
            Conversation(record.conversation_id, stranger.owner, "x", AT, AT),
            uuid.uuid4().hex,
            LEASE_S,
            new=False,
        )
    with pytest.raises(ConversationNotFound):
        await store.start_turn(stranger, uuid.uuid4().hex, LEASE_S, new=False)
    await store.archive(record.conversation_id, record.owner)
    with pytest.raises(ConversationArchived):
        await store.start_turn(record, uuid.uuid4().hex, LEASE_S, new=False)


async def test_finishing_releases_the_lock_for_the_next_turn(store: ConversationStore):
    record, run = await held(store)
    await store.finish_turn(record.conversation_id, uuid.uuid4().hex, 9, AT)  # not its run
    with pytest.raises(ConversationBusy):
        await store.start_turn(record, uuid.uuid4().hex, LEASE_S, new=False)
    await store.finish_turn(record.conversation_id, run, 4, "2026-11-30T11:00:00.000Z")
    released = await store.get(record.conversation_id)
    assert released is not None
    assert (released.locked_by, released.last_seq) == (None, 4)
    assert released.updated_at == "2026-11-30T11:00:00.000Z"
    second = await store.start_turn(record, "run-2", LEASE_S, new=False)
    assert second.locked_by == "run-2"
    assert second.last_seq == 4


async def test_a_lapsed_lease_may_be_taken_and_the_old_run_cannot_renew_it(
    store: ConversationStore,
):
    record = await store.create(conversation(user()))
    await store.start_turn(record, "old-run", LAPSED_S, new=False)
    taken = await store.start_turn(record, "new-run", LEASE_S, new=False)
    assert taken.locked_by == "new-run"
    await store.renew(record.conversation_id, "old-run", 3600)
    await store.finish_turn(record.conversation_id, "old-run", 1, AT)
    stored = await store.get(record.conversation_id)
    assert stored is not None
    assert stored.locked_by == "new-run"
    assert stored.locked_until == taken.locked_until


async def test_renew_extends_the_runs_own_lease(store: ConversationStore):
    record = await store.create(conversation(user()))
    short = await store.start_turn(record, "run", 1, new=False)
    await store.renew(record.conversation_id, "run", 3600)
    renewed = await store.get(record.conversation_id)
    assert renewed is not None
    assert (renewed.locked_until or 0) > (short.locked_until or 0) + 1000


async def test_a_given_ui_context_replaces_the_stored_one(store: ConversationStore):
    record = await store.create(conversation(user(), ui_context={"envId": "ss-dev"}))
    kept = await store.start_turn(record, "run-1", LEASE_S, new=False)
    assert kept.ui_context == {"envId": "ss-dev"}
    await store.finish_turn(record.conversation_id, "run-1", 0, AT)
    moved = Conversation(record.conversation_id, record.owner, "t", AT, AT, ui_context={"a": 1})
    assert (await store.start_turn(moved, "run-2", LEASE_S, new=False)).ui_context == {"a": 1}


async def test_cancel_reaches_the_run_holding_the_conversation(store: ConversationStore):
    record = await store.create(conversation(user()))
    assert not await store.request_cancel(record.conversation_id, record.owner)  # nothing runs
    await store.start_turn(record, "run-1", LEASE_S, new=False)
    assert not await store.request_cancel(record.conversation_id, user())  # not the owner's
    assert not await store.cancel_requested(record.conversation_id, "run-1")
    assert await store.request_cancel(record.conversation_id, record.owner)
    assert await store.cancel_requested(record.conversation_id, "run-1")
    assert not await store.cancel_requested(record.conversation_id, "run-2")
    await store.append_events(record.conversation_id, "run-1", [(1, token(1))])
    # The next turn starts without the old request
    await store.finish_turn(record.conversation_id, "run-1", 1, AT)
    await store.start_turn(record, "run-2", LEASE_S, new=False)
    assert not await store.cancel_requested(record.conversation_id, "run-2")


async def test_a_lapsed_run_cannot_be_cancelled(store: ConversationStore):
    record = await store.create(conversation(user()))
    await store.start_turn(record, "run", LAPSED_S, new=False)
    assert not await store.request_cancel(record.conversation_id, record.owner)


async def test_the_pending_card_is_forgotten_only_by_its_own_id(store: ConversationStore):
    record, _ = await held(store)
    await store.set_pending_confirmation(record.conversation_id, "card-1")
    await store.clear_pending_confirmation(record.conversation_id, "card-0")
    stored = await store.get(record.conversation_id)
    assert stored is not None
    assert stored.pending_confirmation_id == "card-1"
    await store.clear_pending_confirmation(record.conversation_id, "card-1")
    stored = await store.get(record.conversation_id)
    assert stored is not None
    assert stored.pending_confirmation_id is None


# --- events and history ---------------------------------------------------------------------


async def test_events_replay_after_any_sequence_number(store: ConversationStore):
    record, run = await held(store)
    events = [(seq, token(seq)) for seq in range(1, 8)]
    await store.append_events(record.conversation_id, run, events[:3])
    await store.append_events(record.conversation_id, run, events[3:])
    await store.append_events(record.conversation_id, run, [])
    for seq in range(len(events) + 1):
        assert await store.events_after(record.conversation_id, seq) == events[seq:]
    await store.finish_turn(record.conversation_id, run, 7, AT)
    stored = await store.get(record.conversation_id)
    assert stored is not None
    assert stored.last_seq == 7
    assert await store.events_after(uuid.uuid4().hex, 0) == []


async def test_a_turn_after_a_run_that_never_ended_numbers_after_what_it_stored(
    store: ConversationStore,
):
    # Given a finished turn, then a run that stored events and died before it ended
    record = await store.create(conversation(user()))
    await store.start_turn(record, "run-1", LEASE_S, new=False)
    await store.append_events(record.conversation_id, "run-1", [(1, token(1)), (2, token(2))])
    await store.finish_turn(record.conversation_id, "run-1", 2, AT)
    await store.start_turn(record, "run-2", LAPSED_S, new=False)
    await store.append_events(record.conversation_id, "run-2", [(3, token(3))])
    await store.append_events(record.conversation_id, "run-2", [(4, token(4)), (5, token(5))])
    # When the next turn takes the lock its lease left
    taken = await store.start_turn(record, "run-3", LEASE_S, new=False)
    # Then its events come after the dead run's (none is written over)
    assert taken.last_seq == 5
    # and a turn after one that ended numbers from the record, reading nothing else
    await store.finish_turn(record.conversation_id, "run-3", 9, AT)
    assert (await store.start_turn(record, "run-4", LEASE_S, new=False)).last_seq == 9


async def test_an_event_too_large_for_an_item_is_refused(store: ConversationStore):
    record, run = await held(store)
    huge = {"role": "assistant", "content": "x" * (MAX_ITEM_BYTES + 1), "metadata": {}}
    with pytest.raises(StoredItemTooLarge):
        await store.append_events(record.conversation_id, run, [(1, huge)])


async def test_history_keeps_messages_in_order_with_their_fields(store: ConversationStore):
    record, _ = await held(store)
    first = message("вопрос", 1)
    answer = StoredMessage(
        "m2",
        MessageRole.ASSISTANT,
        "ответ",
        AT,
        3,
        tool_calls=[{"tool": "search_dashboards", "status": "tool_end", "output": {"n": 1}}],
        confirmations=[{"type": "confirm_resolved", "result": "confirmed"}],
        status="interrupted",
    )
    await store.add_messages(record.conversation_id, [answer])
    await store.add_messages(record.conversation_id, [first])
    assert await store.messages(record.conversation_id) == [first, answer]


async def test_a_message_too_large_for_an_item_writes_nothing(store: ConversationStore):
    record, _ = await held(store)
    fits, too_large = message("ok", 1), message("x" * (MAX_ITEM_BYTES + 1), 2)
    with pytest.raises(StoredItemTooLarge):
        await store.add_messages(record.conversation_id, [fits, too_large])
    assert await store.messages(record.conversation_id) == []


# --- idempotent append (REST) ---------------------------------------------------------------


async def test_append_numbers_messages_and_a_replay_is_idempotent(store: ConversationStore):
    record = await store.create(conversation(user()))
    first, replayed = await append(store, record, "one", key="key-1")
    assert (first.seq, replayed) == (1, False)
    again, replayed = await append(store, record, "one", key="key-1")
    assert (again, replayed) == (first, True)
    second, _ = await append(store, record, "two")
    assert second.seq == 2
    assert [m.content for m in await store.messages(record.conversation_id)] == ["one", "two"]
    stored = await store.get(record.conversation_id)
    assert stored is not None
    assert stored.last_seq == 2
    with pytest.raises(IdempotencyKeyReused):
        await append(store, record, "another text", key="key-1")


async def test_append_is_refused_while_held_archived_or_for_another_owner(
    store: ConversationStore,
):
    record, run = await held(store)
    with pytest.raises(ConversationBusy):
        await append(store, record, "while a run holds it")
    await store.finish_turn(record.conversation_id, run, 0, AT)
    with pytest.raises(ConversationNotFound):
        await append(store, Conversation(record.conversation_id, user(), "t", AT, AT), "x")
    await store.archive(record.conversation_id, record.owner)
    with pytest.raises(ConversationArchived):
        await append(store, record, "after delete")
    assert await store.messages(record.conversation_id) == []


# --- pages ----------------------------------------------------------------------------------


async def test_listing_pages_newest_first_with_the_stores_tokens(store: ConversationStore):
    owner = user()
    created = [
        await store.create(conversation(owner, at=f"2026-11-30T10:00:0{n}.000Z", title=f"n{n}"))
        for n in range(5)
    ]
    await store.create(conversation(user()))  # another owner's
    seen: list[str] = []
    after = None
    while True:
        page = await store.list_owned(
            owner, limit=2, after=after, search=None, include_archived=False
        )
        seen += [c.conversation_id for c in page.items]
        after = page.next_token
        if after is None:
            break
        assert isinstance(after, str)
    assert seen == [c.conversation_id for c in reversed(created)]


async def test_listing_filters_by_title_and_archive(store: ConversationStore):
    owner = user()
    report = await store.create(conversation(owner, title="Отчёт по продажам"))
    old = await store.create(conversation(owner, title="старый ОТЧЁТ", at="2026-11-30T10:00:01Z"))
    await store.create(conversation(owner, title="Deploy"))
    await store.archive(old.conversation_id, owner)

    async def titles(search: str | None, include_archived: bool) -> set[str]:
        page = await store.list_owned(
            owner, limit=10, after=None, search=search, include_archived=include_archived
        )
        assert page.next_token is None
        return {c.title for c in page.items}

    assert await titles("отчёт", False) == {report.title}
    assert await titles("ОТЧЁТ", True) == {report.title, old.title}
    assert await titles(None, False) == {report.title, "Deploy"}


async def test_a_listing_token_of_another_owner_is_refused(store: ConversationStore):
    owner = user()
    for n in range(3):
        await store.create(conversation(owner, at=f"2026-11-30T10:00:0{n}.000Z"))
    page = await store.list_owned(owner, limit=1, after=None, search=None, include_archived=False)
    assert page.next_token is not None
    with pytest.raises(InvalidPageToken):
        await store.list_owned(
            user(), limit=1, after=page.next_token, search=None, include_archived=False
        )
    with pytest.raises(InvalidPageToken):
        await store.list_owned(
            owner, limit=1, after="not-a-token", search=None, include_archived=False
        )


async def test_history_pages_oldest_first_and_tokens_stay_in_their_conversation(
    store: ConversationStore,
):
    record, _ = await held(store)
    other, _ = await held(store)
    messages = [message(f"m{seq}", seq) for seq in range(1, 6)]
    await store.add_messages(record.conversation_id, messages)
    await store.add_messages(other.conversation_id, [message("elsewhere", 1), message("x", 2)])
    paged: list[StoredMessage] = []
    after = None
    while True:
        page = await store.message_page(record.conversation_id, limit=2, after=after)
        paged += page.items
        after = page.next_token
        if after is None:
            break
        with pytest.raises(InvalidPageToken):
            await store.message_page(other.conversation_id, limit=2, after=after)
    assert paged == messages
    with pytest.raises(InvalidPageToken):
        await store.message_page(record.conversation_id, limit=2, after="garbage")


# --- what a conversation is about -----------------------------------------------------------

SALES_PAGE = {
    "contextVersion": 1,
    "objectType": "dashboard",
    "objectId": "10",
    "objectName": "Продажи",
    "envId": "ss-dev",
    "route": "/dashboards/10",
}


async def test_the_subject_is_the_page_a_conversation_started_on(store: ConversationStore):
    # Given a conversation started by a turn on the «Продажи» dashboard in ss-dev
    started = Conversation.started(uuid.uuid4().hex, user(), "какой статус?", SALES_PAGE)
    record = await store.start_turn(started, "run-1", LEASE_S, new=True)
    await store.finish_turn(record.conversation_id, "run-1", 0, AT)
    # When a later turn comes from another page
    moved = Conversation.asked_for(
        record.conversation_id, record.owner, {"contextVersion": 1, "envId": "ss-prod"}
    )
    await store.start_turn(moved, "run-2", LEASE_S, new=False)
    # Then the record still says what the conversation was about, as read and as listed
    expected = ConversationSubject("dashboard", "10", "Продажи", "ss-dev")
    assert (await store.get_owned(record.conversation_id, record.owner)).subject == expected
    page = await store.list_owned(
        record.owner, limit=5, after=None, search=None, include_archived=False
    )
    assert [c.subject for c in page.items] == [expected]


async def test_listing_finds_conversations_by_object_environment_and_title_words(
    store: ConversationStore,
):
    owner = user()
    sales = await store.create(
        Conversation.started(uuid.uuid4().hex, owner, "какой статус у этого?", SALES_PAGE)
    )
    orders_page = {"contextVersion": 1, "objectType": "dataset", "objectId": "15"}
    orders_page["envId"] = "ss-prod"
    orders = await store.create(
        Conversation.started(uuid.uuid4().hex, owner, "Где используется?", orders_page)
    )
    general = await store.create(Conversation.started(uuid.uuid4().hex, owner, "что умеешь", None))

    async def found(search: str) -> set[str]:
        page = await store.list_owned(
            owner, limit=10, after=None, search=search, include_archived=False
        )
        return {c.conversation_id for c in page.items}

    assert await found("продажи") == {sales.conversation_id}  # the object's name
    assert await found("ДАТАСЕТ") == {orders.conversation_id}  # its type, in the page's words
    assert await found("ss-prod") == {orders.conversation_id}  # the environment
    assert await found("статус дашборд") == {sales.conversation_id}  # every word, any order
    assert await found("статус датасет") == set()
    assert await found("умеешь") == {general.conversation_id}
