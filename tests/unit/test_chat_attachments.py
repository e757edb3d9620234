"""The chat's checks of a message's files (`chat/attachments.py`): one file at a time, one check
at a time in the process, and a kept file's verdict remembered (it never changes)."""

from __future__ import annotations

import asyncio
import threading

import pytest

from sstools_agent.adapters.memory import MemoryAttachmentStore
from sstools_agent.chat import attachments as chat_attachments
from sstools_agent.chat.attachments import ChatAttachments
from sstools_agent.domain.attachment_content import ModelAttachment
from sstools_agent.domain.attachments import (
    AttachmentInfo,
    AttachmentLimits,
    StoredFile,
    attached_key,
    upload_key,
)

pytestmark = pytest.mark.anyio
OWNER = "egor"
CSV = b"id,name\n1,a\n2,b\n"


class CountingStore(MemoryAttachmentStore):
    """Notes how many reads are under way at once, and how many each key had."""

    def __init__(self) -> None:
        super().__init__()
        self.reading = self.most_at_once = 0
        self.reads: dict[str, int] = {}

    async def read(self, key: str) -> bytes | None:
        self.reading += 1
        self.most_at_once = max(self.most_at_once, self.reading)
        self.reads[key] = self.reads.get(key, 0) + 1
        await asyncio.sleep(0)  # another file's read would start here if it could
        self.reading -= 1
        return await super().read(key)

    def put(self, key: str, data: bytes, name: str = "a.csv") -> None:
        self.objects[key] = (data, StoredFile(len(data), "text/csv", name))


def file_id(n: int) -> str:
    return f"{n:032x}"


async def test_a_messages_files_are_read_and_checked_one_at_a_time():
    # Given a message of five uploaded files
    store = CountingStore()
    for n in range(5):
        store.put(upload_key(OWNER, file_id(n)), CSV)
    checks = ChatAttachments(store, AttachmentLimits())
    # When they are checked
    checked = await checks.checked(OWNER, [file_id(n) for n in range(5)])
    # Then each was read (and checked) after the one before: never two files in memory at once
    assert [each.info.file_id for each in checked] == [file_id(n) for n in range(5)]
    assert store.most_at_once == 1


async def test_a_kept_file_is_checked_once_across_requests():
    # Given a file a message kept
    store = CountingStore()
    key = attached_key(OWNER, file_id(1))
    store.put(key, CSV)
    checks = ChatAttachments(store, AttachmentLimits())
    # When two later messages attach it
    first = await checks.checked(OWNER, [file_id(1)])
    second = await checks.checked(OWNER, [file_id(1)])
    # Then its bytes were read and checked once; both messages give the model the same block
    assert store.reads == {key: 1}
    assert first[0].model.block == second[0].model.block
    assert second[0].kept


async def test_an_upload_is_checked_every_time():
    # An upload may be posted again under its grant: its verdict is not remembered
    store = CountingStore()
    key = upload_key(OWNER, file_id(2))
    store.put(key, CSV)
    checks = ChatAttachments(store, AttachmentLimits())
    await checks.checked(OWNER, [file_id(2)])
    await checks.checked(OWNER, [file_id(2)])
    assert store.reads == {key: 2}


class Checks:
    """A stand-in for the file check that notes, under a lock, each check's entry and exit.

    The first check holds on until the second request has handed its file over to be checked
    (`release`, set by the event loop right after that): were the checks not one at a time, the
    second would then come in while the first is still inside."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.lock = threading.Lock()
        self.inside = self.most_at_once = 0
        self.first_entered = asyncio.Event()
        self.release = threading.Event()

    def __call__(
        self, info: AttachmentInfo, data: bytes, *, model_takes_files: bool
    ) -> ModelAttachment:
        with self.lock:
            first = self.inside == 0 and not self.first_entered.is_set()
            self.inside += 1
            self.most_at_once = max(self.most_at_once, self.inside)
        if first:
            self.loop.call_soon_threadsafe(self.first_entered.set)
            self.release.wait()
        with self.lock:
            self.inside -= 1
        return ModelAttachment(info, "block")


class HandingOverStore(CountingStore):
    """Releases the first check once the request reading `last_key` has handed its file over:
    the request goes on from the read to the check without yielding, and the callback runs once
    it yields."""

    def __init__(self, checks: Checks, last_key: str) -> None:
        super().__init__()
        self.checks, self.last_key = checks, last_key

    async def read(self, key: str) -> bytes | None:
        data = await super().read(key)
        if key == self.last_key:
            asyncio.get_running_loop().call_soon(self.checks.release.set)
        return data


async def test_parallel_requests_check_one_file_at_a_time_in_the_process(
    monkeypatch: pytest.MonkeyPatch,
):
    # Given two requests, each with a file, in the same process, the first inside its check
    check = Checks(asyncio.get_running_loop())
    monkeypatch.setattr(chat_attachments, "model_attachment", check)
    store = HandingOverStore(check, upload_key("user2", file_id(2)))
    for n in (1, 2):
        store.put(upload_key(f"user{n}", file_id(n)), CSV)
    checks = ChatAttachments(store, AttachmentLimits())
    first = asyncio.create_task(checks.checked("user1", [file_id(1)]))
    await check.first_entered.wait()
    # When the second request checks its file while the first check runs
    second = await checks.checked("user2", [file_id(2)])
    # Then both were checked, and the second check never ran beside the first
    assert [each.info.file_id for each in (*await first, *second)] == [file_id(1), file_id(2)]
    assert check.most_at_once == 1


async def test_checks_waiting_for_their_turn_leave_the_default_executor_to_other_turns(
    monkeypatch: pytest.MonkeyPatch,
):
    # Given a check that runs until released, and more requests with files queued behind it
    # than the event loop's default executor has threads (the router and service tokens use it)
    store = CountingStore()
    waiting = 12
    for n in range(waiting + 1):
        store.put(upload_key(f"user{n}", file_id(n)), CSV)
    release = threading.Event()

    def model_attachment(
        info: AttachmentInfo, data: bytes, *, model_takes_files: bool
    ) -> ModelAttachment:
        release.wait()
        return ModelAttachment(info, "block")

    monkeypatch.setattr(chat_attachments, "model_attachment", model_attachment)
    checks = ChatAttachments(store, AttachmentLimits())
    queued = [
        asyncio.create_task(checks.checked(f"user{n}", [file_id(n)])) for n in range(waiting + 1)
    ]
    await asyncio.sleep(0.1)  # every request reaches its check (none can finish before release)
    try:
        # When another turn runs blocking work on the default executor
        answer = await asyncio.wait_for(asyncio.to_thread(lambda: "routed"), timeout=30)
    finally:
        release.set()
        await asyncio.gather(*queued)
    # Then it is not queued behind the file checks
    assert answer == "routed"


class KeptMeanwhileStore(CountingStore):
    """Another tab's message keeps the upload between this request's look and its read."""

    async def read(self, key: str) -> bytes | None:
        if key.startswith("uploads/") and key in self.objects:
            data, stored = self.objects.pop(key)
            self.objects[key.replace("uploads/", "attachments/", 1)] = (data, stored)
            return None
        return await super().read(key)


async def test_an_upload_another_tab_keeps_meanwhile_is_read_where_it_is_kept():
    # Given an upload that another tab's message keeps while this request checks it
    store = KeptMeanwhileStore()
    store.put(upload_key(OWNER, file_id(1)), CSV)
    # When this request checks it
    (checked,) = await ChatAttachments(store, AttachmentLimits()).checked(OWNER, [file_id(1)])
    # Then it is the owner's file, read where it is kept, not «Файл не найден»
    assert (checked.kept, checked.data) == (True, CSV)
    assert store.reads == {attached_key(OWNER, file_id(1)): 1}
