"""`make bench` (part 8): a chat message with files at the limits, through the chat function.

Part 7 (`bench_attachments`) times the file check alone; this part is what a user meets: the chat
function in a process of its own (run.sh's uvicorn, the stand-in model), moto's S3 holding the
uploads, and a message that attaches the worst file of a type at the 10 MB limit, or five of
them. Each case runs in a fresh process, beside a message with no file in the same process (the
ratio is what the files add). Printed per case:

- the time to first byte: the request sent to the stream's first event (CloudFront gives up on
  an origin after 60 s without one);
- the process's peak RSS (VmHWM) after the turn, and the RSS it had before: the function has
  1769 MB.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import boto3
import httpx

from bench.bench_attachments import CASES
from bench.first_turn import chat_function_env, start_chat_function, wait_for_port
from functions.api.app import create_app as api_app
from local.agent_stack import local_aws_and_upstream, user_issuer
from local.demo_users import DEMO_USERS
from local.servers import serve
from sstools_agent.domain.attachments import (
    DEFAULT_MAX_FILES,
    NAME_META,
    name_metadata,
    upload_key,
)
from sstools_agent.settings import Settings
from sstools_agent.wiring.api import build_api

RUNS: tuple[tuple[str, int], ...] = (
    ("json_empty_objects", 1),
    ("json_deep_chains", 1),
    ("csv_tiny_rows", 1),
    ("markdown_prose", 1),
    ("sql_statements", 1),
    ("png_padding", 1),
    ("json_empty_objects", DEFAULT_MAX_FILES),
    ("json_deep_chains", DEFAULT_MAX_FILES),
)
USER = DEMO_USERS["analyst"]


def _memory_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for process {pid}")


def _first_byte(client: httpx.Client, url: str, token: str, file_ids: list[str]) -> float:
    """Seconds from the request to the stream's first event (the stream is read to its end)."""
    body = {"message": "что в этих файлах?", "files": [{"file_id": each} for each in file_ids]}
    started, first = time.perf_counter(), None
    headers = {"Authorization": f"Bearer {token}"}
    with client.stream("POST", url, json=body, headers=headers) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if line.startswith("data: ") and first is None:
                first = time.perf_counter()
    return (first or time.perf_counter()) - started


def _upload(settings: Settings, case: str, count: int, data: bytes) -> list[str]:
    """`count` uploads of `data` where the page's presigned POST would have put them."""
    name, content_type, _ = CASES[case]
    s3 = boto3.client("s3", endpoint_url=str(settings.aws_endpoint_url))
    ids = [os.urandom(16).hex() for _ in range(count)]
    for file_id in ids:
        s3.put_object(
            Bucket=settings.attachment_bucket,
            Key=upload_key(USER, file_id),
            Body=data,
            ContentType=content_type,
            Metadata={NAME_META: name_metadata(name)},
        )
    return ids


def one_case(env: dict[str, str], settings: Settings, token: str, case: str, count: int) -> str:
    data = CASES[case][2]()
    ids = _upload(settings, case, count, data)
    process, port = start_chat_function(env)
    url = f"http://127.0.0.1:{port}/api/agent/chat"
    try:
        wait_for_port(port, process)
        with httpx.Client(timeout=120) as client:
            plain = _first_byte(client, url, token, [])  # warm: imports, the first turn's caches
            plain = _first_byte(client, url, token, [])
            before = _memory_mb(process.pid, "VmRSS")
            with_files = _first_byte(client, url, token, ids)
            peak = _memory_mb(process.pid, "VmHWM")
    finally:
        process.terminate()
        process.wait(10)
    return (
        f"  {case:22} {count:5d} {with_files:14.2f} {plain:12.2f} "
        f"{with_files / plain:7.0f}x {peak:14.0f} {before:15.0f}"
    )


def main() -> None:
    print("== A message with files at the limit, through the chat function (a fresh process ==")
    print("   a case, moto's S3, the stand-in model; 10 MB a file; the function has 1769 MB) ==")
    print(
        f"  {'case':22} {'files':>5} {'1st byte, s':>14} {'no file, s':>12} {'ratio':>8} "
        f"{'peak RSS, MB':>14} {'RSS before, MB':>15}"
    )
    with local_aws_and_upstream("bench") as stack:
        settings = stack.settings
        with serve(api_app(build_api(settings))) as api_url:
            env = chat_function_env(settings, api_url)
            token = user_issuer(settings).issue(USER, 3600, {"roles": ["analyst"]}).token
            for case, count in RUNS:
                print(one_case(env, settings, token, case, count), flush=True)


if __name__ == "__main__":
    main()
