"""`make run` as a newcomer meets it: the stack starts, says where to go, and its console is quiet.

The stack runs as `make run` runs it (`python -m local.run_stack`), on ports of its own."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path

import httpx

from local.moto import free_port

REPO = Path(__file__).resolve().parents[2]
# Any of these on the console is noise a newcomer has to wonder about.
NOISE = re.compile(r"^(WARNING|ERROR|Traceback|DEBUG)|\{\"_aws\"", re.MULTILINE)


def _free_base_port() -> int:
    """A port P with P+100 and P+101 free too (the stack uses all three)."""
    while True:
        port = free_port()
        if port + 101 < 65536 and all(_is_free(port + offset) for offset in (100, 101)):
            return port


def _is_free(port: int) -> bool:
    with socket.socket() as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def test_the_stack_starts_prints_the_page_and_stops_quietly() -> None:
    port = _free_base_port()
    env = {**os.environ, "LOCAL_PORT": str(port), "PYTHONPATH": f"layers/common{os.pathsep}."}
    stack = subprocess.Popen(
        [sys.executable, "-m", "local.run_stack"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    ready = threading.Event()

    def read() -> None:
        assert stack.stdout is not None
        for line in stack.stdout:
            lines.append(line)
            if line.startswith("Ctrl-C stops everything."):
                ready.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert ready.wait(120), "".join(lines)
        page = next(line.split()[-1] for line in lines if "Open the page:" in line)
        assert page.startswith(f"http://127.0.0.1:{port}/agent?objectType=dashboard&objectId=10")
        response = httpx.get(page, timeout=30)
        assert response.status_code == 200
        assert '<div id="app">' in response.text
        # The Gradio client's URL, and its config answered there to a demo user
        gradio = next(line for line in lines if "Client.connect(" in line)
        url = re.search(r'Client\.connect\("([^"]+)"\)', gradio)
        assert url is not None, gradio
        assert url.group(1) == f"http://127.0.0.1:{port}/api/agent/gradio"
        token = subprocess.run(
            [sys.executable, "-m", "local.demo_users", "engineer"],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        config = httpx.get(
            f"{url.group(1)}/config", headers={"Authorization": f"Bearer {token}"}, timeout=30
        )
        assert config.status_code == 200, config.text
        assert config.json()["protocol"] == "sse_v3"
    finally:
        stack.send_signal(signal.SIGINT)
        code = stack.wait(60)
        reader.join(10)
    console = "".join(lines)
    assert code == 0, console
    assert "a restart starts from a clean state" in console
    assert not NOISE.search(console), console
