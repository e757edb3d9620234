"""The chat function in a process of its own, for tests that kill it mid-call.

A SIGKILL is what a Lambda sandbox that dies (out of memory, a timeout, a host lost) does to a run:
no `finally`, no shielded write, no released lock. What the next access finds is then only what
was durably written before the kill. The process is the function's own composition over the
test's moto and upstream (the stand-in model, service tokens minted directly, audit kept nowhere:
the tests read what the next access, in the test's own process, records).
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import boto3

from local.moto import free_port
from sstools_agent.settings import Settings

ROOT: Final = Path(__file__).resolve().parents[2]
START_BOUND_S: Final = 120.0
"""How long the process may take to start (imports on a busy shared machine); a bound."""
BOOT: Final = """
import dataclasses, sys
import uvicorn
from functions.chat.app import create_app
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.settings import Settings
from sstools_agent.wiring.chat import build_chat
from local.agent_stack import minted_service_tokens

settings = Settings()
deps = dataclasses.replace(
    build_chat(settings), service_token=minted_service_tokens(settings), audit=MemoryAuditSink()
)
# As every server of the apps: the peer is the socket's, never a loopback caller's X-Forwarded-For
uvicorn.run(
    create_app(deps),
    host="127.0.0.1",
    port=int(sys.argv[1]),
    lifespan="on",
    log_level="warning",
    proxy_headers=False,
)
"""


@dataclass
class ChatProcess:
    """A running chat function: its URL, and the kill."""

    url: str
    process: subprocess.Popen[bytes]

    def kill(self) -> None:
        """SIGKILL: the run stops where it is, writing nothing more."""
        self.process.kill()
        self.process.wait(timeout=30)


@contextmanager
def chat_process(
    settings: Settings, *, tool_timeout_s: float, env: dict[str, str] | None = None
) -> Iterator[ChatProcess]:
    """The chat function over `settings` (its moto and upstream), in a process of its own;
    `env` sets more of its settings (STANDIN_TOKEN_DELAY_S, say)."""
    port = free_port()
    env = {
        **os.environ,
        "PYTHONPATH": f"{ROOT / 'layers' / 'common'}{os.pathsep}{ROOT}",
        "AWS_ENDPOINT_URL": str(settings.aws_endpoint_url),
        "AWS_REGION": settings.aws_region,
        "UPSTREAM_BASE_URL": settings.upstream_base_url,
        "TOOL_TIMEOUT_S": str(tool_timeout_s),
        "TOOL_ROUTING": "off",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_DISABLED": "true",
        **(env or {}),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", BOOT, str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + START_BOUND_S
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the chat process did not start") from None
                time.sleep(0.1)
        yield ChatProcess(f"http://127.0.0.1:{port}", process)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def lapse_lease(settings: Settings, conversation_id: str) -> None:
    """What time does to the lock of a run that died: its lease lapses (the next run may take
    it), without waiting the lease's two minutes."""
    table = boto3.resource(
        "dynamodb", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region
    ).Table(settings.conversations_table)
    table.update_item(
        Key={"PK": f"CONV#{conversation_id}", "SK": "META"},
        UpdateExpression="SET locked_until = :past",
        ConditionExpression="attribute_exists(locked_by)",
        ExpressionAttributeValues={":past": 0},
    )
