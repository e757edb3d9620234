"""`make bench` (part 7): what a chat message's files cost before its stream opens, at the limits.

For the worst file of each type at the size limit (a JSON array of 3.5 M empty objects, a JSON of
side-by-side 60-deep chains, a CSV of 5 M one-character rows, Markdown prose, SQL, a PNG and a PDF
of padding), and for five such JSON files in one message, a fresh process puts the files in the
in-memory store and times `ChatAttachments.checked`: the whole of what a turn does with its files
before the lock and the stream (read, checks, the model's data blocks). The rest of the turn
(the lock, the model) does not depend on the files: this time is what the files add to the time
to first byte. Each process reports:

- the check's wall time, which adds to the turn's time to first byte;
- the peak RSS it added (`ru_maxrss` after the check minus before it, the files already built and
  stored: what the check itself took on top of the bytes read);
- the event loop's longest stall while the check ran (a task that sleeps 5 ms and notes how late
  it woke): how long another user's turn in the same process waits behind the check.

    python -m bench.bench_attachments            # every case
    python -m bench.bench_attachments CASE N     # one case, N files (the child process)
"""

from __future__ import annotations

import asyncio
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from sstools_agent.adapters.memory import MemoryAttachmentStore
from sstools_agent.chat.attachments import ChatAttachments
from sstools_agent.domain.attachments import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_FILES,
    AttachmentLimits,
    StoredFile,
    upload_key,
)
from tests.support.files import PDF, PNG

ROOT = Path(__file__).resolve().parents[1]
LIMIT = DEFAULT_MAX_BYTES
OWNER = "bench"


def _repeat(head: bytes, item: bytes, tail: bytes, sep: bytes = b",") -> bytes:
    count = (LIMIT - len(head) - len(tail)) // (len(item) + len(sep))
    return head + sep.join([item] * count) + tail


def _padded(signature: bytes) -> bytes:
    return signature + b"\0" * (LIMIT - len(signature))


CASES: dict[str, tuple[str, str, Callable[[], bytes]]] = {
    "json_empty_objects": ("a.json", "application/json", lambda: _repeat(b"[", b"{}", b"]")),
    "json_deep_chains": (
        "a.json",
        "application/json",
        lambda: _repeat(b"[", b"[" * 60 + b"]" * 60, b"]"),
    ),
    "csv_tiny_rows": ("a.csv", "text/csv", lambda: _repeat(b"n\n", b"1", b"\n", b"\n")),
    "markdown_prose": (
        "a.md",
        "text/markdown",
        lambda: _repeat(b"# Notes\n", "Строка заметки, с <b>разметкой</b>.".encode(), b"\n", b"\n"),
    ),
    "sql_statements": ("a.sql", "application/sql", lambda: _repeat(b"", b"SELECT 1;", b"", b"\n")),
    "png_padding": ("a.png", "image/png", lambda: _padded(PNG)),
    "pdf_padding": ("a.pdf", "application/pdf", lambda: _padded(PDF)),
}
RUNS: tuple[tuple[str, int], ...] = (
    *((case, 1) for case in CASES),
    ("json_empty_objects", DEFAULT_MAX_FILES),
)


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def _stalls(stop: asyncio.Event, worst: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.005)
        worst[0] = max(worst[0], time.perf_counter() - started - 0.005)


async def one(case: str, count: int) -> dict[str, float]:
    """In this process: `count` files of `case` checked as a chat message's files."""
    name, content_type, make = CASES[case]
    store = MemoryAttachmentStore()
    data = make()
    ids = [f"{n:032x}" for n in range(count)]
    stored = StoredFile(len(data), content_type, name)
    for file_id in ids:
        store.objects[upload_key(OWNER, file_id)] = (data, stored)
    attachments = ChatAttachments(store, AttachmentLimits(), model_takes_files=True)
    warm_id = "f" * 32  # imports and first-use caches, on a small file of the same type
    small = data[:64] if content_type in {"image/png", "application/pdf"} else b"[]"
    small = small if content_type != "text/csv" else b"n\n1\n"
    store.objects[upload_key(OWNER, warm_id)] = (small, StoredFile(len(small), content_type, name))
    await attachments.checked(OWNER, [warm_id])
    before = _rss_mb()
    stop, worst = asyncio.Event(), [0.0]
    watcher = asyncio.create_task(_stalls(stop, worst))
    await asyncio.sleep(0.02)
    started = time.perf_counter()
    checked = await attachments.checked(OWNER, ids)
    elapsed = time.perf_counter() - started
    stop.set()
    await watcher
    assert len(checked) == count
    return {
        "seconds": elapsed,
        "peak_rss_mb": _rss_mb() - before,
        "stall_s": worst[0],
        "file_mb": len(data) / 1024 / 1024,
    }


def main() -> None:
    print(
        "== Files at the limit: ChatAttachments.checked in a fresh process "
        f"({LIMIT // 1024 // 1024} MB a file) =="
    )
    print(
        f"  {'case':22} {'files':>5} {'check, s':>9} {'peak RSS added, MB':>19} "
        f"{'loop stall, ms':>15}"
    )
    for case, count in RUNS:
        result = subprocess.run(
            [sys.executable, "-m", "bench.bench_attachments", case, str(count)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        got = json.loads(result.stdout.strip().splitlines()[-1])
        print(
            f"  {case:22} {count:5d} {got['seconds']:9.2f} {got['peak_rss_mb']:19.0f} "
            f"{got['stall_s'] * 1000:15.0f}"
        )


if __name__ == "__main__":
    if len(sys.argv) == 3:
        print(json.dumps(asyncio.run(one(sys.argv[1], int(sys.argv[2])))))
    else:
        main()
