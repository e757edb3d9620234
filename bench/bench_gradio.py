"""`make bench` (Gradio): a turn through the Gradio endpoint against the same turn through
`/api/agent/chat`, on one chat function under uvicorn over moto (the bench's 300-word scripted
model, a cached service token, no page context). The client runs in a process of its own
(`bench.gradio_client`) and alternates the two, so both meet the same tables.

What Gradio adds is the join: a POST whose turn is written to DynamoDB before the stream (a GET)
claims it with a conditional write. Printed: the join's round trip, the time to first event from
the request (the join's start, for Gradio), the whole turn; medians and ranges of REPEATS turns.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from bench.bench_chat import WORDS, deps_for, token_for
from functions.chat.app import create_app
from local.agent_stack import local_aws_and_upstream
from local.servers import serve

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 10


def spread(values: Sequence[float], scale: float = 1000.0) -> str:
    """median (min-max), in ms"""
    scaled = [value * scale for value in values]
    return f"{statistics.median(scaled):7.1f} ({min(scaled):.1f}-{max(scaled):.1f})"


def main() -> None:
    with local_aws_and_upstream("bench") as stack:
        token = token_for(stack)
        app = create_app(deps_for(stack))
        with serve(app, lifespan="on") as url:
            result = subprocess.run(
                [sys.executable, "-m", "bench.gradio_client", url, token, "x", str(REPEATS)],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            )
    turns = json.loads(result.stdout.strip().splitlines()[-1])
    for _, _, _, tokens, _ in turns:
        if tokens != WORDS:
            raise RuntimeError(f"expected {WORDS} tokens, got {tokens}")
    chat = [turn for turn in turns if turn[0] == "chat"]
    gradio = [turn for turn in turns if turn[0] == "gradio"]
    print(
        f"== A {WORDS}-word answer through /api/agent/chat and through the Gradio endpoint "
        f"(join, then the stream), one process over moto; {REPEATS} turns each: "
        "median (range), ms =="
    )
    print(f"  Gradio join round trip     {spread([t[1] for t in gradio])}")
    print(
        f"  time to first event        chat {spread([t[2] for t in chat])}   "
        f"Gradio {spread([t[2] for t in gradio])}"
    )
    print(
        f"  whole turn                 chat {spread([t[4] for t in chat])}   "
        f"Gradio {spread([t[4] for t in gradio])}"
    )


if __name__ == "__main__":
    main()
