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


async def test_parallel_requests_check_one_file_at_a_time_in_the_process(
    monkeypatch: pytest.MonkeyPatch,
):
    # Given two requests, each with a file, in the same process
    store = CountingStore()
    for n in (1, 2):
        store.put(upload_key(f"user{n}", file_id(n)), CSV)
    inside, most = [0], [0]
    second_entered = threading.Event()

    def model_attachment(
        info: AttachmentInfo, data: bytes, *, model_takes_files: bool
    ) -> ModelAttachment:
        inside[0] += 1
        most[0] = max(most[0], inside[0])
        if inside[0] > 1:
            second_entered.set()
        else:  # the first check waits for the second to come in, if it can come in
            second_entered.wait(timeout=1)
        inside[0] -= 1
        return ModelAttachment(info, "block")

    monkeypatch.setattr(chat_attachments, "model_attachment", model_attachment)
    checks = ChatAttachments(store, AttachmentLimits())
    # When both check their files at once
    await asyncio.gather(
        checks.checked("user1", [file_id(1)]), checks.checked("user2", [file_id(2)])
    )
    # Then the second check began after the first ended
    assert most[0] == 1


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
