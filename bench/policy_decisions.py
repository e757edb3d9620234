"""`make bench`: the cost of a policy decision, Cedar beside the Python rules it replaced, side by
side in one run (prints; asserts nothing).

- one call's permission: `PolicyEngine.decide` against `RoleRequirement.for_tier` + `satisfies`;
- one call's card: `requires_card` against the Python card rule;
- a whole `ToolPolicy.evaluate` (resolve, permission, least role, card, guardrail) and a turn's
  `select_tools` (every catalog tool offered or not), both on Cedar.
Each figure is the median of rounds over every (role, tool, environment) call of the catalog.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.policy_engine import CallFacts, Principal, shipped_engine
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.ui_context import UIContext

ROUNDS = 7
CALLS = [(role, spec, env) for role in Role for spec in CATALOG for env in DEFAULT_ENVIRONMENTS]


def per_call_us(run: Callable[[], object], count: int) -> float:
    """Median µs per call over ROUNDS rounds of `run` (which makes `count` decisions)."""
    rounds = []
    for _ in range(ROUNDS):
        started = time.perf_counter()
        run()
        rounds.append((time.perf_counter() - started) / count * 1e6)
    return statistics.median(rounds)


ENGINE = shipped_engine()
FACTS = [
    (role, spec, CallFacts(spec.name, spec.operation, env, cost=bool(spec.cost)))
    for role, spec, env in CALLS
]
CONFIRM_READS: frozenset[str] = frozenset({"search_dashboards"})


def python_permission() -> None:
    for role, spec, call in FACTS:
        role.satisfies(
            spec.required_roles.for_tier(call.environment.tier if call.environment else None)
        )


def cedar_permission() -> None:
    for role, _, call in FACTS:
        ENGINE.decide(Principal(role), call)


def python_card() -> None:
    for _, spec, call in FACTS:
        _ = call.operation is Operation.WRITE or bool(spec.cost) or spec.name in CONFIRM_READS


def cedar_card() -> None:
    for role, _, call in FACTS:
        ENGINE.requires_card(Principal(role), call)


def main() -> None:
    count = len(FACTS)
    print(f"policy decisions over {count} (role, tool, environment) calls, median of {ROUNDS}")
    print(f"  {'question':<34} {'Python µs':>10} {'Cedar µs':>10}")
    for name, python, cedar in (
        ("may call (permission)", python_permission, cedar_permission),
        ("needs a card", python_card, cedar_card),
    ):
        print(
            f"  {name:<34} {per_call_us(python, count):>10.2f} {per_call_us(cedar, count):>10.2f}"
        )
    policy = ToolPolicy(CATALOG, DEFAULT_ENVIRONMENTS)
    page = UIContext.model_validate(
        {"contextVersion": 1, "envId": "prod", "route": "/settings"},
        context={"environments": DEFAULT_ENVIRONMENTS},
    )
    evaluated = [
        (role, spec.name, dict(spec.example_args))
        for role in Role
        for spec in CATALOG
        if not spec.sql_argument  # the SQL parser's cost is not the policy's
    ]

    def evaluate() -> None:
        for role, tool, args in evaluated:
            policy.evaluate(role, tool, args, page)

    def select() -> None:
        for role in Role:
            policy.select_tools(role, page)

    print(
        f"  {'ToolPolicy.evaluate (whole)':<34} {'':>10} "
        f"{per_call_us(evaluate, len(evaluated)):>10.2f}"
    )
    print(
        f"  {'select_tools (a turn, 22 tools)':<34} {'':>10} "
        f"{per_call_us(select, len(Role)):>10.2f}"
    )


if __name__ == "__main__":
    main()
