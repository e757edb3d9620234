"""`make bench`: the tool router, measured on the labelled set (tests/data/routing_queries.jsonl).
Asserts nothing; prints figures side by side.

- top-1 and top-3 accuracy, hybrid (keywords + USE embeddings) against keywords alone;
- tools offered against the full catalog (the context budget saved), for specific queries and all;
- routing latency per query, p50 and p95, hybrid against keywords alone, and the embedder's start;
- how many queries needed the embedding fallback;
- the stand-in model's first choice (the router's ranking) on the queries that name a tool.
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

from sstools_agent.adapters.embeddings import OfflineEmbedder
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_routing import RoutingDecision, ToolRouter

ROOT = Path(__file__).resolve().parent.parent
LABELLED = ROOT / "tests" / "data" / "routing_queries.jsonl"
ALL_TOOLS = tuple(spec.name for spec in CATALOG)
ROUNDS = 5


def hit(decision: RoutingDecision, expect: str, within: int) -> bool:
    if expect.startswith("intent:"):
        return decision.intent.value == expect.removeprefix("intent:")
    return expect in decision.ranked[:within]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def measure(router: ToolRouter, rows: list[dict[str, Any]]) -> dict[str, float]:
    decisions = [router.route(row["query"], ALL_TOOLS) for row in rows]
    latencies = []
    for _ in range(ROUNDS):
        for row in rows:
            started = time.perf_counter()
            router.route(row["query"], ALL_TOOLS)
            latencies.append((time.perf_counter() - started) * 1000)
    specific = [
        d for d, row in zip(decisions, rows, strict=True) if not row["expect"].startswith("intent:")
    ]
    return {
        "top1": sum(hit(d, r["expect"], 1) for d, r in zip(decisions, rows, strict=True))
        / len(rows),
        "top3": sum(hit(d, r["expect"], 3) for d, r in zip(decisions, rows, strict=True))
        / len(rows),
        "offered_specific": statistics.mean(len(d.offered) for d in specific),
        "offered_all": statistics.mean(len(d.offered) for d in decisions),
        "fallback_share": sum(d.used_embeddings for d in decisions) / len(decisions),
        "p50_ms": statistics.median(latencies),
        "p95_ms": percentile(latencies, 0.95),
    }


def main() -> None:
    rows = [json.loads(line) for line in LABELLED.read_text(encoding="utf-8").splitlines()]
    started = time.perf_counter()
    hybrid = ToolRouter(OfflineEmbedder())
    hybrid.warm()
    warm_s = time.perf_counter() - started
    keywords = ToolRouter(None)
    figures = {
        "hybrid (keywords + USE)": measure(hybrid, rows),
        "keywords only": measure(keywords, rows),
    }
    full = len(ALL_TOOLS)
    print(
        f"== Tool routing: {len(rows)} labelled queries (RU/EN, typos, off-topic), {full} tools =="
    )
    print(
        f"{'router':<26}{'top-1':>8}{'top-3':>8}{'offered (specific)':>20}{'offered (all)':>15}"
        f"{'fallback':>10}{'p50 ms':>9}{'p95 ms':>9}"
    )
    for name, f in figures.items():
        print(
            f"{name:<26}{f['top1']:>8.1%}{f['top3']:>8.1%}"
            f"{f['offered_specific']:>11.2f} of {full} ({f['offered_specific'] / full:.0%})"
            f"{f['offered_all']:>8.2f} of {full}{f['fallback_share']:>10.0%}"
            f"{f['p50_ms']:>9.2f}{f['p95_ms']:>9.2f}"
        )
    ratio = figures["hybrid (keywords + USE)"]["p50_ms"] / figures["keywords only"]["p50_ms"]
    print(
        f"hybrid p50 / keywords-only p50: {ratio:.1f}x; USE load and tool vectors: {warm_s:.1f} s"
    )
    tools = [row for row in rows if not row["expect"].startswith("intent:")]
    for name, router in (("hybrid", hybrid), ("keywords", keywords)):
        model = StandinChatModel(router=router)
        first = [next(iter(model.ranked(row["query"])[1]), None) for row in tools]
        right = sum(tool == row["expect"] for tool, row in zip(first, tools, strict=True))
        print(f"stand-in model's first choice, {name} router: {right / len(tools):.1%} top-1")


if __name__ == "__main__":
    main()
