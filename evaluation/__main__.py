"""`make eval`: the labelled scenarios through the turn service, scored per criterion and group.

Usage: `python -m evaluation [tuning|held_out ...] [--verbose]` (both sets when none is named).
The model is the configured one: `MODEL_PROVIDER=openai OPENAI_API_KEY=... make eval` scores a
real model on the same scenarios (see docs/evaluation.md). Prints figures; asserts nothing (the
thresholds are tests).
"""

from __future__ import annotations

import asyncio
import sys

from evaluation.report import render, score
from evaluation.runner import ScenarioRunner, local_stack
from evaluation.scenarios import ScenarioSet, load
from sstools_agent.settings import Settings


async def _run_all(runner: ScenarioRunner, sets: list[ScenarioSet], verbose: bool) -> None:
    for scenario_set in sets:
        runs = [await runner.run(scenario) for scenario in load(scenario_set)]
        print(render(score(scenario_set.value, runs), verbose=verbose), flush=True)


def main(argv: list[str]) -> int:
    named = [ScenarioSet(arg) for arg in argv if not arg.startswith("-")]
    sets = named or list(ScenarioSet)
    print(f"model: {Settings().model_provider}")
    with local_stack() as runner:
        asyncio.run(_run_all(runner, sets, "--verbose" in argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
