"""`make bench` (part 10): the chat function's init phase in the production configuration, before
and after the SnapStart work, and what SnapStart leaves for after a restore.

Production configuration: the Bedrock model and Titan embeddings (`MODEL_PROVIDER=bedrock`,
`EMBEDDINGS_PROVIDER=bedrock`), tracing off, against moto; Bedrock's runtime is a local stand-in
that answers Titan's embedding calls (`AWS_ENDPOINT_URL_BEDROCK_RUNTIME`), so the router's
warm-up does what it does in AWS, one call per example. Nothing calls the chat model at init.

1. Init phase: a fresh process imports `functions/chat/main.py` as Lambda's init does (the module
   uvicorn loads; process start to the import's end), before (the tree of `BEFORE`, exported with
   `git archive`) and after (this tree), in turn, after one warm-up each (which writes the
   bytecode, as the layers ship it).
2. SnapStart's hooks (this tree, in the same processes): the before-checkpoint work (the router's
   examples embedded; it waits for the warm-up thread) and the after-restore work (what a
   restored environment does before its first request).
3. A restored environment's first turn: the chat function under uvicorn (as run.sh starts it,
   the stand-in model: Bedrock is not reachable here), the adapter's two hook calls, then the first
   turn, request to first event.

Only AWS can measure the restore itself (the snapshot's resume, before the after-restore hook)
and Bedrock's own latency; docs/performance.md says what to add.
"""

from __future__ import annotations

import io
import json
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

import httpx
from fastapi import FastAPI, Request

from bench.bench_agent import DASHBOARD_10
from bench.first_turn import chat_function_env, start_chat_function, wait_for_port
from functions.api.app import create_app as api_app
from local.agent_stack import local_aws_and_upstream, user_issuer
from local.demo_users import DEMO_USERS
from local.servers import serve
from sstools_agent.adapters.embeddings import TITAN_DIMENSIONS
from sstools_agent.http.snapstart import AFTER_RESTORE_PATH, BEFORE_CHECKPOINT_PATH
from sstools_agent.wiring.api import build_api

ROOT = Path(__file__).resolve().parent.parent
BEFORE: Final = "4ebb798"
"""The last commit before SnapStart: the agent built at import, the saver's lifecycle calls."""
ROUNDS = 5
FIRST_TURN_ROUNDS = 3
INIT = """
import json, sys, time
started = time.perf_counter()
import main
print("IMPORTED", flush=True)
figures = {"import_s": time.perf_counter() - started}
deps = main.deps
if hasattr(deps, "prepare_snapshot"):
    started = time.perf_counter()
    deps.prepare_snapshot()
    figures["before_checkpoint_s"] = time.perf_counter() - started
    started = time.perf_counter()
    deps.renew_after_restore()
    figures["after_restore_s"] = time.perf_counter() - started
print("FIGURES " + json.dumps(figures), flush=True)
"""


def titan_stand_in() -> FastAPI:
    """Bedrock's runtime as far as Titan's InvokeModel goes: a normalised vector per text."""
    app = FastAPI()

    @app.post("/model/{model_id}/invoke")
    async def invoke(model_id: str, request: Request) -> dict[str, Any]:
        text = (await request.json())["inputText"]
        vector = [0.0] * TITAN_DIMENSIONS
        vector[hash(text) % TITAN_DIMENSIONS] = 1.0
        return {"embedding": vector, "inputTextTokenCount": len(text.split())}

    return app


@contextmanager
def before_tree() -> Iterator[Path]:
    """The functions and the layer's package as they were at `BEFORE`."""
    git = shutil.which("git")
    if git is None:
        raise RuntimeError("the bench exports the before tree with git, which is not installed")
    with tempfile.TemporaryDirectory(prefix="cold-start-") as folder:
        archive = subprocess.run(
            [git, "archive", BEFORE, "functions", "layers/common/sstools_agent"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(folder, filter="data")
        yield Path(folder)


def init_phase(tree: Path, env: dict[str, str]) -> dict[str, float]:
    """One fresh process's init (spawn to `import main` done: Lambda's init phase, the
    interpreter's start included, its exit not) and the hooks' times in it."""
    started = time.perf_counter()
    with subprocess.Popen(
        [sys.executable, "-c", INIT],
        cwd=tree / "functions" / "chat",
        env={**env, "PYTHONPATH": str(tree / "layers" / "common")},
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    ) as process:
        assert process.stdout is not None  # piped just above
        figures: dict[str, float] = {}
        for line in process.stdout:
            if line.startswith("IMPORTED"):
                figures["init_s"] = time.perf_counter() - started
            if line.startswith("FIGURES "):
                figures |= json.loads(line.removeprefix("FIGURES "))
        if process.wait(120) != 0 or "init_s" not in figures:
            raise RuntimeError(f"the chat function's import failed in {tree}")
    return figures


def first_turn_after_restore(env: dict[str, str], token: str) -> tuple[float, float]:
    """The after-restore hook's answer time and the first turn's (request to first event)."""
    process, port = start_chat_function(env)
    try:
        wait_for_port(port, process)
        base = f"http://127.0.0.1:{port}"
        with httpx.Client(base_url=base, timeout=60) as client:
            client.post(BEFORE_CHECKPOINT_PATH).raise_for_status()
            started = time.perf_counter()
            client.post(AFTER_RESTORE_PATH).raise_for_status()
            restored = time.perf_counter()
            body = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}
            headers = {"Authorization": f"Bearer {token}"}
            first = None
            with client.stream("POST", "/api/agent/chat", json=body, headers=headers) as response:
                response.raise_for_status()
                for line in response.iter_lines():
                    if line.startswith("data: ") and first is None:
                        first = time.perf_counter()
        return restored - started, (first or time.perf_counter()) - restored
    finally:
        process.terminate()
        process.wait(10)


def figure(values: list[float]) -> str:
    return (
        f"median {statistics.median(values) * 1000:6.0f} ms "
        f"(range {min(values) * 1000:.0f}-{max(values) * 1000:.0f})"
    )


def main() -> None:
    with local_aws_and_upstream("bench") as stack, before_tree() as old:
        settings = stack.settings
        token = user_issuer(settings).issue(DEMO_USERS["analyst"], 3600, {"roles": ["analyst"]})
        with serve(api_app(build_api(settings))) as api_url, serve(titan_stand_in()) as titan:
            env = chat_function_env(settings, api_url)
            production = {
                **env,
                "MODEL_PROVIDER": "bedrock",
                "EMBEDDINGS_PROVIDER": "bedrock",
                "TRACING": "false",
                "AWS_ENDPOINT_URL_BEDROCK_RUNTIME": titan,
            }
            trees = {"before": old, "after": ROOT}
            for tree in trees.values():
                init_phase(tree, production)  # warm-up: writes the bytecode
            runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
            for _ in range(ROUNDS):
                for name, tree in trees.items():
                    runs[name].append(init_phase(tree, production))
            restored_env = {**env, "EMBEDDINGS_PROVIDER": "bedrock", "TRACING": "false"}
            restored_env["AWS_ENDPOINT_URL_BEDROCK_RUNTIME"] = titan
            turns = [
                first_turn_after_restore(restored_env, token.token)
                for _ in range(FIRST_TURN_ROUNDS)
            ]

    def init(name: str) -> list[float]:
        return [run["init_s"] for run in runs[name]]

    print("== The chat function's init phase, production configuration (Bedrock model, Titan")
    print(f"   embeddings, tracing off; {ROUNDS} fresh processes each, in turn) ==")
    print(f"  before ({BEFORE}: eager, S3 lifecycle calls) {figure(init('before'))}")
    print(f"  after (lazy, no AWS call)                {figure(init('after'))}")
    ratios = [a / b for a, b in zip(init("after"), init("before"), strict=True)]
    print(f"  after / before, pair by pair             median x{statistics.median(ratios):.2f}")
    print("== SnapStart's hooks, in the same processes (after) ==")
    before_checkpoint = [run["before_checkpoint_s"] for run in runs["after"]]
    after_restore = [run["after_restore_s"] for run in runs["after"]]
    print(f"  before checkpoint (router warmed; in the snapshot) {figure(before_checkpoint)}")
    print(f"  after restore (left for a restored environment)   {figure(after_restore)}")
    print("== A restored environment's first turn (uvicorn as run.sh starts it, stand-in model;")
    print(f"   {FIRST_TURN_ROUNDS} processes: the adapter's two hook calls, then the turn) ==")
    print(f"  after-restore hook, as the adapter calls it  {figure([r for r, _ in turns])}")
    print(f"  first turn: request to first event          {figure([f for _, f in turns])}")
    print(f"  both (+ the restore itself: AWS only)       {figure([r + f for r, f in turns])}")


if __name__ == "__main__":
    main()
