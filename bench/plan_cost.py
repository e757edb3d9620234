"""`make bench` (part 9): what reading a change's plan adds before its card. Asserts nothing.

The plan is read through the same upstream client and sample upstream (real HTTP, service and
user JWTs verified) as the tools: a deploy's plan (two dashboard reads side by side, source and
target), a DELETE's plan (one derived `count(*)`), beside one read tool call as the baseline,
interleaved in the same rounds. Printed: the upstream requests each makes, p50 / p95 of each,
and each plan's p50 as a ratio of the baseline's.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Final

from bench.bench_agent import DASHBOARD_10, bench_stack
from sstools_agent.agent.interrupts import ConfirmationInterrupt

ROUNDS: Final = 40
DATASET_15 = {
    "contextVersion": 1,
    "objectType": "dataset",
    "objectId": "15",
    "envId": "staging",
    "route": "/datasets/15",
}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


async def timed(call: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def main() -> None:
    with bench_stack() as stack:
        upstream = stack.upstream
        agent = stack.agent()
        admin = stack.context("admin", DASHBOARD_10)
        engineer = stack.context("engineer", DATASET_15)
        deploy_args = {
            "dashboard_ids": [10],
            "source_env_id": "ss-dev",
            "target_env_id": "prod",
        }
        deploy = ConfirmationInterrupt(
            "c1",
            "deploy_dashboard",
            deploy_args,
            {"operation": "write", "environment": "prod"},
        )
        delete = ConfirmationInterrupt(
            "c2",
            "superset_execute_sql",
            {"database_id": 1, "sql": "DELETE FROM mart.employees WHERE id < 10"},
            {"operation": "write", "environment": "staging"},
        )
        read = stack.policy.resolve("search_dashboards", {"dashboard_ids": [10]}, admin.ui_context)
        assert read is not None

        async def baseline() -> object:
            return await agent.upstream.call(read, admin.credentials)

        cases: dict[str, Callable[[], Awaitable[object]]] = {
            "one read tool call (baseline)": baseline,
            "deploy plan (2 reads side by side)": lambda: agent.plan(deploy, admin),
            "DELETE plan (1 count(*) read)": lambda: agent.plan(delete, engineer),
        }
        requests: dict[str, int] = {}
        for name, case in cases.items():  # warm up, and count each one's requests
            before = upstream.plan.requests()
            await case()
            requests[name] = upstream.plan.requests() - before
        times: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(ROUNDS):  # interleaved: the machine's load moves all alike
            for name, case in cases.items():
                times[name].append(await timed(case))
        base = statistics.median(times["one read tool call (baseline)"])
        print(f"== Plan before the card: {ROUNDS} rounds, interleaved ==")
        for name, values in times.items():
            median = statistics.median(values)
            print(
                f"  {name:36} requests={requests[name]}  p50={median:6.1f} ms  "
                f"p95={percentile(values, 0.95):6.1f} ms  x{median / base:4.2f} of baseline"
            )


if __name__ == "__main__":
    asyncio.run(main())
