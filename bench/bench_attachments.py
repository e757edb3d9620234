"""`make bench` (part 7): what a chat message's files cost before its stream opens, at the limits.

For the worst file of each type at the size limit (a JSON array of 3.5 M empty objects, a JSON of
side-by-side chains of lists as deep as the check takes, a CSV of 5 M one-character rows, Markdown
prose, SQL, a PNG and a PDF of padding), and for five of either JSON file in one message, a fresh
process puts the files in the in-memory store and times `ChatAttachments.checked`: the whole of
what a turn does with its files before the lock and the stream (read, checks, the model's data
blocks). The rest of the turn (the lock, the model) does not depend on the files: this time is what
the files add to the time to first byte. Each process reports:

- the check's wall time, which adds to the turn's time to first byte;
- the peak RSS it added (VmHWM after the check, the peak reset just before it, minus the RSS
  then, the files already read from disk and stored: what the check took on top of the bytes);
- the event loop's longest stall while the check ran (a task that sleeps 5 ms and notes how late
  it woke): how long another user's turn in the same process waits behind the check;
- the RSS before the check: the process with the chat stack imported and the files' bytes held.

    python -m bench.bench_attachments                 # every case
    python -m bench.bench_attachments CASE N PATH     # one case, N files of PATH's bytes (child)
    python -m bench.bench_attachments whole-tree PATH # json.loads and a summary (child)

Beside each JSON file, a fresh process parses it whole and summarises the tree, which is what the
check did before it read JSON as a stream: the ratio of the two is printed.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from local.sample_files import PDF, PNG
from sstools_agent.adapters.memory import MemoryAttachmentStore
from sstools_agent.chat.attachments import ChatAttachments
from sstools_agent.domain.attachments import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_FILES,
    AttachmentLimits,
    StoredFile,
    upload_key,
)
from sstools_agent.domain.json_scan import MAX_DEPTH
from sstools_agent.domain.tool_output_summary import summarise_tool_output

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
    "json_deep_chains": (  # MAX_DEPTH levels (the deepest the check takes), a list on each
        "a.json",
        "application/json",
        lambda: _repeat(b"[", b"[0," * (MAX_DEPTH - 2) + b"0" + b"]" * (MAX_DEPTH - 2), b"]"),
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
    ("json_deep_chains", DEFAULT_MAX_FILES),
)


def _status_mb(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def _reset_peak_rss() -> float:
    """The peak RSS set to the RSS now (Linux: `5` to clear_refs), which it returns: the imports
    and the files' reading peaked higher than a bounded check does."""
    Path("/proc/self/clear_refs").write_text("5")
    return _status_mb("VmRSS")


async def _stalls(stop: asyncio.Event, worst: list[float]) -> None:
    while not stop.is_set():
        started = time.perf_counter()
        await asyncio.sleep(0.005)
        worst[0] = max(worst[0], time.perf_counter() - started - 0.005)


async def one(case: str, count: int, path: Path) -> dict[str, float]:
    """In this process: `count` files of `case` (its bytes in `path`) checked as a chat
    message's files."""
    name, content_type, _ = CASES[case]
    store = MemoryAttachmentStore()
    data = path.read_bytes()
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
    before = _reset_peak_rss()
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
        "peak_rss_mb": _status_mb("VmHWM") - before,
        "rss_before_mb": before,
        "stall_s": worst[0],
        "file_mb": len(data) / 1024 / 1024,
    }


def whole_tree(path: Path) -> dict[str, float]:
    """In this process: what the check did before it streamed, side by side for the ratio: the
    whole file parsed into its tree (`json.loads`) and that tree summarised."""
    data = path.read_bytes()
    before = _reset_peak_rss()
    started = time.perf_counter()
    summarise_tool_output(json.loads(data))
    return {
        "seconds": time.perf_counter() - started,
        "peak_rss_mb": _status_mb("VmHWM") - before,
    }


def _child(*args: str) -> dict[str, float]:
    result = subprocess.run(
        [sys.executable, "-m", "bench.bench_attachments", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    answer: dict[str, float] = json.loads(result.stdout.strip().splitlines()[-1])
    return answer


def main() -> None:
    print(
        "== Files at the limit: ChatAttachments.checked in a fresh process "
        f"({LIMIT // 1024 // 1024} MB a file) =="
    )
    print(
        f"  {'case':22} {'files':>5} {'check, s':>9} {'peak RSS added, MB':>19} "
        f"{'loop stall, ms':>15} {'RSS before, MB':>15}"
    )
    files = Path(tempfile.mkdtemp(prefix="bench-attachments-"))
    for case, count in RUNS:
        path = files / case
        if not path.exists():
            path.write_bytes(CASES[case][2]())
        got = _child(case, str(count), str(path))
        print(
            f"  {case:22} {count:5d} {got['seconds']:9.2f} {got['peak_rss_mb']:19.0f} "
            f"{got['stall_s'] * 1000:15.0f} {got['rss_before_mb']:15.0f}"
        )
        if CASES[case][1] == "application/json" and count == 1:
            tree = _child("whole-tree", str(path))
            print(
                f"  {'  the whole tree':22} {1:5d} {tree['seconds']:9.2f} "
                f"{tree['peak_rss_mb']:19.0f}   (json.loads and a summary, as before: "
                f"{tree['seconds'] / got['seconds']:.0f}x the time, "
                f"{tree['peak_rss_mb'] / max(got['peak_rss_mb'], 1):.0f}x the memory)"
            )


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "whole-tree":
        print(json.dumps(whole_tree(Path(sys.argv[2]))))
    elif len(sys.argv) == 4:
        print(json.dumps(asyncio.run(one(sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])))))
    else:
        main()
