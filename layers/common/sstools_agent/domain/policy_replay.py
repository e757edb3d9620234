"""`make policy-check`'s core: the audited calls of the last days replayed against the policy set
in force and a candidate, and what the candidate would decide otherwise.

A call is replayable when its audit record carries `call` (what policy saw: operation,
environment and tier, the user's role and groups; `tool_called`, `tool_denied` and
`confirmation_requested` records carry it). Each call is decided by both sets at the time it was
made, so a change window bites as it would have then. A difference is any of: allowed, card,
approvers.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.environments import Environment, EnvironmentTier
from sstools_agent.domain.policy_engine import CallFacts, PolicyEngine, PolicySource, Principal
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG


@dataclass(frozen=True, slots=True)
class AuditedCall:
    """One call as its audit record tells it."""

    at: str
    user: str
    tool: str
    environment: str | None
    principal: Principal
    facts: CallFacts

    @property
    def moment(self) -> datetime:
        return datetime.fromisoformat(self.at).astimezone(UTC)

    def who(self) -> str:
        """«ivanov (admin; contractors)»."""
        role = self.principal.role.value if self.principal.role else "no role"
        groups = f"; {', '.join(self.principal.groups)}" if self.principal.groups else ""
        return f"{self.user} ({role}{groups})"


@dataclass(frozen=True, slots=True)
class Verdict:
    """What one policy set decides of a call."""

    allowed: bool
    card: bool
    approvers: int
    policies: tuple[str, ...]

    def words(self) -> str:
        """«denied», «allowed», «allowed with a card», «allowed with a card, 2 approvers»."""
        if not self.allowed:
            return "denied"
        if not self.card:
            return "allowed"
        return "allowed with a card" + (
            f", {self.approvers} approvers" if self.approvers > 1 else ""
        )

    def differs(self, other: Verdict) -> bool:
        return (self.allowed, self.card, self.approvers) != (
            other.allowed,
            other.card,
            other.approvers,
        )


@dataclass(frozen=True, slots=True)
class PolicyChange:
    """A call the candidate decides otherwise."""

    call: AuditedCall
    before: Verdict
    after: Verdict


def audited_calls(
    items: Iterable[Mapping[str, Any]], confirm_reads: frozenset[str] = frozenset()
) -> list[AuditedCall]:
    """The replayable calls among audit table items (their `detail` is the record as JSON), in
    time order; `confirm_reads`: the deployment's CONFIRM_READ_TOOLS, which policy sees as
    `card_configured`."""
    calls = []
    for item in items:
        record = json.loads(item["detail"]) if isinstance(item["detail"], str) else item["detail"]
        detail = record.get("detail") or {}
        seen, tool = detail.get("call"), detail.get("tool")
        if not isinstance(seen, Mapping) or not tool or CATALOG.get(tool) is None:
            continue
        calls.append(_call(item, tool, seen, confirm_reads))
    return sorted(calls, key=lambda c: c.at)


def _call(
    item: Mapping[str, Any], tool: str, seen: Mapping[str, Any], confirm_reads: frozenset[str]
) -> AuditedCall:
    env_id, tier = seen.get("environment"), seen.get("tier")
    environment = Environment(env_id, EnvironmentTier(tier)) if env_id and tier else None
    role = seen.get("role")
    spec = CATALOG.get(tool)
    facts = CallFacts(
        tool,
        Operation(seen.get("operation", "read")),
        environment,
        cost=bool(spec and spec.cost),
        card_configured=tool in confirm_reads,
    )
    user = str(item.get("user", "anonymous"))
    known = {each.value: each for each in Role}
    principal = Principal(known.get(str(role)), tuple(seen.get("groups") or ()), user)
    return AuditedCall(str(item["at"]), user, tool, env_id, principal, facts)


class _At:
    """The replay's clock: the time of the call being decided."""

    def __init__(self) -> None:
        self.now = datetime.now(UTC)

    def __call__(self) -> datetime:
        return self.now


def policy_changes(
    calls: Sequence[AuditedCall], before: PolicySource, after: PolicySource
) -> list[PolicyChange]:
    """The calls `after` decides otherwise than `before`, each at its own time."""
    clock = _At()
    engines = PolicyEngine(before, clock), PolicyEngine(after, clock)
    changes = []
    for call in calls:
        clock.now = call.moment
        was, would = (_verdict(engine, call) for engine in engines)
        if was.differs(would):
            changes.append(PolicyChange(call, was, would))
    return changes


def _verdict(engine: PolicyEngine, call: AuditedCall) -> Verdict:
    decision = engine.decide(call.principal, call.facts)
    if not decision.allowed:
        return Verdict(False, False, 0, decision.policies)
    card = engine.requires_card(call.principal, call.facts)
    approvers = engine.approvals_required(call.principal, call.facts) if card.allowed else 0
    return Verdict(True, card.allowed, approvers, decision.policies + card.policies)


def render_changes(changes: Sequence[PolicyChange], replayed: int) -> str:
    """The report: a line per changed call, then the count."""
    if not changes:
        return f"no audited call would be decided otherwise ({replayed} replayed)"
    lines = [
        f"{c.call.at} {c.call.tool} {c.call.environment or '-'} {c.call.who()}: "
        f"{c.before.words()} [{', '.join(c.before.policies)}] -> "
        f"{c.after.words()} [{', '.join(c.after.policies)}]"
        for c in changes
    ]
    lines.append(f"{len(changes)} of {replayed} audited calls would be decided otherwise")
    return "\n".join(lines)
