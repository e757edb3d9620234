"""The shipped Cedar policy set against the rules the catalog declares, every combination.

The reference here is the declarations read the way the Python policy core read them before Cedar
decided (RoleRequirement.for_tier, most_lenient, the card rule): the shipped set reproduces them
exactly, for every role (and none), every tool, every tier (and no environment), read and write.
"""

from __future__ import annotations

import pytest

from sstools_agent.domain.catalog_types import EnvironmentSource, Operation, ToolSpec
from sstools_agent.domain.cedar_policy import (
    InvalidPolicySet,
    cedar_schema,
    compile_policies,
    shipped_policy_text,
)
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS, Environment, EnvironmentTier
from sstools_agent.domain.policy_engine import CallFacts, Principal, shipped_engine
from sstools_agent.domain.role_policy import offer_calls
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG

ENVIRONMENTS: list[Environment | None] = [*DEFAULT_ENVIRONMENTS, None]
ROLES: list[Role | None] = [*Role, None]


def operations(spec: ToolSpec) -> list[Operation]:
    """How a call of `spec` may turn out: an SQL tool's statement decides per call."""
    return [Operation.READ, Operation.WRITE] if spec.sql_argument else [spec.operation]


def declared_role(spec: ToolSpec, operation: Operation, tier: EnvironmentTier | None) -> Role:
    roles = spec.read_roles if spec.sql_argument and operation is Operation.READ else None
    return (roles or spec.required_roles).for_tier(tier)


def declared_card(spec: ToolSpec, operation: Operation, configured: bool) -> bool:
    return operation is Operation.WRITE or bool(spec.cost) or configured


CALLS = [
    (role, spec, operation, env)
    for role in ROLES
    for spec in CATALOG
    for operation in operations(spec)
    for env in ENVIRONMENTS
]


def test_the_shipped_set_is_valid_against_the_schema():
    compiled = compile_policies(shipped_policy_text(), cedar_schema(CATALOG.names))
    assert compiled.log_only == frozenset()
    assert dict(compiled.windows) == {}


@pytest.mark.parametrize(
    ("role", "spec", "operation", "env"),
    CALLS,
    ids=[f"{r}-{s.name}-{o}-{e.env_id if e else '-'}" for r, s, o, e in CALLS],
)
def test_cedar_allows_exactly_what_the_declarations_allow(role, spec, operation, env):
    engine = shipped_engine()
    call = CallFacts(spec.name, operation, env, cost=bool(spec.cost))
    decision = engine.decide(Principal(role), call)
    expected = role is not None and role.satisfies(
        declared_role(spec, operation, env.tier if env else None)
    )
    assert decision.allowed is expected
    # an allowed call names the permit that allowed it; a denial here is Cedar's default
    assert bool(decision.policies) is expected
    assert engine.least_role(call) == declared_role(spec, operation, env.tier if env else None)


@pytest.mark.parametrize("configured", [False, True])
@pytest.mark.parametrize("spec", list(CATALOG), ids=lambda spec: spec.name)
def test_cedar_asks_a_card_exactly_where_the_declarations_do(spec, configured):
    engine = shipped_engine()
    for operation in operations(spec):
        for env in ENVIRONMENTS:
            call = CallFacts(spec.name, operation, env, bool(spec.cost), configured)
            card = engine.requires_card(Principal(Role.ADMIN), call)
            assert card.allowed is declared_card(spec, operation, configured), (operation, env)
            assert bool(card.policies) is card.allowed
            assert engine.approvals_required(Principal(Role.ADMIN), call) == 1


def declared_offer_role(spec: ToolSpec, page: Environment | None) -> Role:
    if spec.environment_source is EnvironmentSource.UI_CONTEXT and page:
        roles = [spec.required_roles.for_tier(page.tier)]
    else:
        roles = [spec.required_roles.most_lenient]
    if spec.sql_argument is not None:
        roles.append(spec.read_roles.most_lenient)
    return min(roles, key=lambda role: role.rank)


@pytest.mark.parametrize("page", ENVIRONMENTS, ids=lambda env: env.env_id if env else "-")
@pytest.mark.parametrize("role", ROLES)
def test_cedar_offers_exactly_what_the_declarations_offer(role, page):
    engine = shipped_engine()
    for spec in CATALOG:
        expected = role is not None and role.satisfies(declared_offer_role(spec, page))
        assert engine.may_offer(Principal(role), offer_calls(spec, page)) is expected, spec.name


def test_a_policy_set_that_fails_the_schema_is_refused():
    bad = '@id("x")\npermit (principal, action == SsTools::Action::"drop_everything", resource);'
    with pytest.raises(InvalidPolicySet) as refused:
        compile_policies(bad, cedar_schema(CATALOG.names))
    assert "drop_everything" in str(refused.value)


ANY = "(principal, action, resource);"
WINDOW = '@window_end("2026-12-04T18:00")'


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (f"permit {ANY}", "no @id"),
        (
            f'@id("a") permit {ANY}\n@id("a") forbid {ANY}',
            "twice",
        ),
        (f'@id("a") @mode("dry") permit {ANY}', "@mode"),
        (
            f'@id("a") {WINDOW} forbid {ANY}',
            "@timezone",
        ),
        (
            f'@id("a") @window_end("friday") @timezone("Europe/Moscow") forbid {ANY}',
            "friday",
        ),
        (
            f'@id("a") {WINDOW} @timezone("Mars/Olympus") forbid {ANY}',
            "Mars",
        ),
    ],
)
def test_the_encodings_rules_are_checked(text, says):
    with pytest.raises(InvalidPolicySet) as refused:
        compile_policies(text, cedar_schema(CATALOG.names))
    assert says in str(refused.value)
