"""Cedar's answers to the policy core's questions: may this user call this tool here, may it be
offered, does the call need a card, how many people approve it.

Each answer carries the `@id`s of the policies that decided it (Cedar's reasons), the change
window that refused it, if any, and what the log-only policies would have decided.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any, Final, Protocol

import cedarpy

from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.cedar_policy import (
    NAMESPACE,
    NO_ENVIRONMENT,
    REQUIRE_CARD,
    REQUIRE_SECOND_APPROVER,
    ChangeWindow,
    CompiledPolicies,
    cedar_schema,
    cedar_time,
    compile_policies,
    entity_ref,
    shipped_policy_text,
)
from sstools_agent.domain.environments import Environment, EnvironmentTier
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG

logger = logging.getLogger(__name__)

REMEMBERED: Final = 4096
"""Answers and entity sets kept per policy set at most: a principal carries its user, so a
long-lived container meets many; past this the memory starts afresh."""
ROLE_CHAIN: Final = tuple(sorted(Role, key=lambda role: role.rank))
"""Least to most privileged: each role's entity is a member of the one before it."""


class PolicySource(Protocol):
    """Where the engine gets the policy set in force (the shipped one, or an S3 object's)."""

    def current(self) -> CompiledPolicies:
        """The policy set to decide with now (the last good one if a newer one failed)."""
        ...


@dataclass(frozen=True, slots=True)
class Principal:
    """Who asks: the user, their role and the groups their token names."""

    role: Role | None
    groups: tuple[str, ...] = ()
    user: str = "user"


type Who = Role | Principal | None
"""Who asks, as the policy's callers know them: a role alone (offers to a role, the tests) or the
whole principal of a signed-in user (the chat's calls, so a policy may name a user or group)."""


def principal_of(who: Who) -> Principal:
    """`who` as a Cedar principal (a role alone is a user of that role, in no group)."""
    return who if isinstance(who, Principal) else Principal(who)


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What policy sees of a call: the tool, read or write, where, and what it costs."""

    tool: str
    operation: Operation
    environment: Environment | None
    cost: bool = False
    card_configured: bool = False
    """The deployment asks a card for this read (`CONFIRM_READ_TOOLS`)."""


@dataclass(frozen=True, slots=True)
class Freeze:
    """A change window that refused a call: which policy, and when it ends."""

    policy: str
    ends: datetime
    timezone: str


@dataclass(frozen=True, slots=True)
class Trial:
    """What the log-only policies would have decided (recorded, never applied)."""

    allowed: bool
    policies: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class PolicyDecision:
    """Cedar's answer to one question, with the policies that decided it."""

    allowed: bool
    policies: tuple[str, ...]
    freeze: Freeze | None = None
    trial: Trial | None = None


class FixedPolicies:
    """One policy set, compiled once: the layer's shipped set when no S3 object is configured,
    or a set a test or `make policy-check` names."""

    def __init__(self, text: str, tools: Sequence[str] = CATALOG.names) -> None:
        self._compiled = compile_policies(text, cedar_schema(tools))

    @classmethod
    def shipped(cls) -> FixedPolicies:
        """The layer's own policy set."""
        return cls(shipped_policy_text())

    def current(self) -> CompiledPolicies:
        return self._compiled


class PolicyEngine:
    """Asks Cedar, over the policy set `source` holds now."""

    def __init__(
        self,
        source: PolicySource,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.source = source
        self.clock = clock
        self._entities: dict[tuple[Any, ...], cedarpy.Entities] = {}
        self._answers: dict[tuple[Any, ...], bool] = {}

    def decide(self, principal: Principal, call: CallFacts) -> PolicyDecision:
        """May `principal` make this call now (change windows in force, log-only ones tried)."""
        policies = self.source.current()
        request = self._request(principal, call.tool, call)
        entities = self._entities_for(policies, principal, call.environment)
        result = cedarpy.is_authorized(request, policies.call, entities)
        decided_by = _reasons(result)
        freeze = _freeze(policies, decided_by) if not result.allowed else None
        trial = self._trial(policies, request, entities)
        return PolicyDecision(result.allowed, decided_by, freeze, trial)

    def may_offer(self, principal: Principal, calls: Iterable[CallFacts]) -> bool:
        """Whether any of `calls` (the ways a tool may be called here) is allowed, windows
        aside: a tool is offered where a call of it could be, and a window is told at the call.
        Kept per policy set: time enters policy only through windows (the encoding), so an offer
        does not change while a set is in force."""
        policies = self.source.current()
        return any(self._allowed(policies, policies.offer, principal, call) for call in calls)

    def least_role(self, call: CallFacts, *, offer: bool = False) -> Role | None:
        """The least role whose holder may make `call` (None: no role may, now); with `offer`,
        windows aside."""
        policies = self.source.current()
        chosen = policies.offer if offer or not policies.windows else policies.call
        for role in ROLE_CHAIN:
            if self._allowed(policies, chosen, Principal(role), call):
                return role
        return None

    def _allowed(
        self,
        policies: CompiledPolicies,
        chosen: cedarpy.PolicySet,
        principal: Principal,
        call: CallFacts,
    ) -> bool:
        """Cedar's allow over a set without windows (`offer`, or `call` when it has none),
        remembered for as long as `policies` is in force."""
        key = (policies, id(chosen), principal, call)
        if self._answers and next(iter(self._answers))[0] is not policies:
            self._answers.clear()
        if len(self._answers) >= REMEMBERED:
            self._answers.clear()
        known = self._answers.get(key)
        if known is None:
            request = self._request(principal, call.tool, call)
            entities = self._entities_for(policies, principal, call.environment)
            known = cedarpy.is_authorized(request, chosen, entities).allowed
            self._answers[key] = known
        return known

    def requires_card(self, principal: Principal, call: CallFacts) -> PolicyDecision:
        """Whether the call needs a card (`RequireCard` permitted)."""
        return self._question(REQUIRE_CARD, principal, call)

    def approvals_required(self, principal: Principal, call: CallFacts) -> int:
        """How many people approve the call: two where `RequireSecondApprover` is permitted."""
        return 2 if self._question(REQUIRE_SECOND_APPROVER, principal, call).allowed else 1

    def _question(self, action: str, principal: Principal, call: CallFacts) -> PolicyDecision:
        policies = self.source.current()
        request = self._request(principal, action, call)
        entities = self._entities_for(policies, principal, call.environment)
        result = cedarpy.is_authorized(request, policies.call, entities)
        return PolicyDecision(result.allowed, _reasons(result))

    def _trial(
        self, policies: CompiledPolicies, request: dict[str, Any], entities: cedarpy.Entities
    ) -> Trial | None:
        """The would-be decision with the log-only policies in force, when one of them took
        part in it (None otherwise: nothing to record)."""
        if policies.trial is None:
            return None
        result = cedarpy.is_authorized(request, policies.trial, entities)
        reasons = _reasons(result)
        if not policies.log_only.intersection(reasons):
            return None
        return Trial(result.allowed, reasons)

    def _request(self, principal: Principal, action: str, call: CallFacts) -> dict[str, Any]:
        env_id = call.environment.env_id if call.environment else NO_ENVIRONMENT
        return {
            "principal": _uid("User", principal.user),
            "action": _uid("Action", action),
            "resource": _uid("Environment", env_id),
            "context": {
                "tool": call.tool,
                "operation": call.operation.value,
                "cost": call.cost,
                "card_configured": call.card_configured,
                "now": {"__extn": {"fn": "datetime", "arg": cedar_time(self.clock())}},
            },
        }

    def _entities_for(
        self, policies: CompiledPolicies, principal: Principal, environment: Environment | None
    ) -> cedarpy.Entities:
        """The set's entities, the user and the environment (kept per combination: few exist;
        a new policy set starts afresh)."""
        key = (policies, principal, environment)
        if self._entities and next(iter(self._entities))[0] is not policies:
            self._entities.clear()
        if len(self._entities) >= REMEMBERED:
            self._entities.clear()
        entities = self._entities.get(key)
        if entities is None:
            parents = [entity_ref("Role", principal.role.value)] if principal.role else []
            parents += [entity_ref("Group", group) for group in principal.groups]
            env_id = environment.env_id if environment else NO_ENVIRONMENT
            tier = environment.tier.value if environment else NO_ENVIRONMENT
            delta = [
                {"uid": entity_ref("User", principal.user), "attrs": {}, "parents": parents},
                {"uid": entity_ref("Environment", env_id), "attrs": {"tier": tier}, "parents": []},
                *(
                    {"uid": entity_ref("Group", g), "attrs": {}, "parents": []}
                    for g in principal.groups
                ),
            ]
            entities = policies.entities.with_added_json_str(json.dumps(delta))
            self._entities[key] = entities
        return entities


def tier_environment(tier: EnvironmentTier) -> Environment:
    """The resource an offer asks about when no particular environment applies: one per tier."""
    return Environment(tier.value, tier)


def _uid(kind: str, entity_id: str) -> str:
    return f"{NAMESPACE}::{kind}::{json.dumps(entity_id)}"


def _reasons(result: cedarpy.AuthzResult) -> tuple[str, ...]:
    if result.diagnostics.errors:
        # a policy that errors is skipped by Cedar: the decision stands, the set needs a look
        logger.warning("policy evaluation errors: %s", result.diagnostics.errors)
    return tuple(sorted(result.diagnostics.reasons))


def _freeze(policies: CompiledPolicies, decided_by: Iterable[str]) -> Freeze | None:
    """The window among the policies that refused a call, the latest-ending if several."""
    windows: list[ChangeWindow] = [policies.windows[p] for p in decided_by if p in policies.windows]
    if not windows:
        return None
    window = max(windows, key=lambda each: each.ends)
    return Freeze(window.policy, window.ends, window.timezone)


@lru_cache(maxsize=1)
def shipped_engine() -> PolicyEngine:
    """The engine over the shipped policy set (tests and the REST API's starter questions)."""
    return PolicyEngine(FixedPolicies.shipped())
