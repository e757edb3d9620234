"""`make bench` (part 4): a new chat function process, from its start to its first answer.

The chat function starts as Lambda Web Adapter starts it (`python -m uvicorn main:app`, run.sh's
options) in a process of its own, with the stand-in model and the offline sentence encoder (the
heaviest start: the encoder loads for about 1.6 s), against moto and the sample upstream, its
service token from the REST API (served here). The adapter sends the first invocation once the
port accepts connections; so does this bench. Printed, over 3 fresh processes: the start (process
start to port open: Lambda's init phase) and the first turn (request sent to first event), and
their sum (what the first user of a cold container waits for, without the runtime's own start).
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

from bench.bench_agent import DASHBOARD_10
from functions.api.app import create_app as api_app
from local.agent_stack import local_aws_and_upstream, user_issuer
from local.demo_users import DEMO_USERS
from local.moto import free_port
from local.servers import serve
from sstools_agent.settings import Settings
from sstools_agent.wiring.api import build_api

ROOT = Path(__file__).resolve().parent.parent
ROUNDS = 3


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the chat function exited: {process.returncode}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.005)
    raise RuntimeError("the chat function did not open its port")


def chat_function_env(settings: Settings, api_url: str) -> dict[str, str]:
    """The environment a chat function process runs with here: moto, the sample upstream, the
    REST API's service token, the stand-in model."""
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "common"), str(ROOT)]),
        "AWS_ENDPOINT_URL": str(settings.aws_endpoint_url),
        "UPSTREAM_BASE_URL": settings.upstream_base_url,
        "SERVICE_TOKEN_URL": f"{api_url}/api/auth/service-token",
        "MODEL_PROVIDER": "standin",
        "EMBEDDINGS_PROVIDER": "offline",
        "POWERTOOLS_METRICS_DISABLED": "true",
        "POWERTOOLS_LOG_LEVEL": "WARNING",
    }


def start_chat_function(env: dict[str, str]) -> tuple[subprocess.Popen[bytes], int]:
    """A chat function process as Lambda Web Adapter starts it (run.sh's uvicorn options), and
    its port (not open yet: `wait_for_port`)."""
    port = free_port()
    command = [
        *(sys.executable, "-m", "uvicorn", "--app-dir", str(ROOT / "functions" / "chat")),
        *("main:app", "--host", "127.0.0.1", "--port", str(port), "--no-access-log"),
        *("--loop", "uvloop", "--http", "httptools", "--log-level", "warning"),
    ]
    return subprocess.Popen(command, env=env, cwd=ROOT), port


def one_start(env: dict[str, str], token: str) -> tuple[float, float]:
    started = time.perf_counter()
    process, port = start_chat_function(env)
    try:
        wait_for_port(port, process)
        ready = time.perf_counter()
        body = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}
        headers = {"Authorization": f"Bearer {token}"}
        with (
            httpx.Client(timeout=60) as client,
            client.stream(
                "POST", f"http://127.0.0.1:{port}/api/agent/chat", json=body, headers=headers
            ) as response,
        ):
            response.raise_for_status()
            first = None
            for line in response.iter_lines():
                if line.startswith("data: ") and first is None:
                    first = time.perf_counter()
        return ready - started, (first or time.perf_counter()) - ready
    finally:
        process.terminate()
        process.wait(10)


def main() -> None:
    with local_aws_and_upstream("bench") as stack:
        settings = stack.settings
        with serve(api_app(build_api(settings))) as api_url:
            env = chat_function_env(settings, api_url)
            token = user_issuer(settings).issue(DEMO_USERS["analyst"], 3600, {"roles": ["analyst"]})
            rounds = [one_start(env, token.token) for _ in range(ROUNDS)]
    starts = [s for s, _ in rounds]
    firsts = [f for _, f in rounds]
    totals = [s + f for s, f in rounds]

    def figure(values: list[float]) -> str:
        return (
            f"median {statistics.median(values) * 1000:6.0f} ms "
            f"(range {min(values) * 1000:.0f}-{max(values) * 1000:.0f})"
        )

    print("== A new chat function process: start, then its first turn (stand-in model and")
    print(f"   encoder; {ROUNDS} fresh processes) ==")
    print(f"  start (process to port open)      {figure(starts)}")
    print(f"  first turn (request to 1st event) {figure(firsts)}")
    print(f"  both                              {figure(totals)}")


if __name__ == "__main__":
    main()
