"""The role matrix: every role x tool x tier, at both layers.

The rule of each tool reviewed so far is written out here, independently of the catalog, so a wrong
declaration of one of them fails these tests. A tool added since is held to its own declaration,
and every declaration to the role rules (reads open to all, writes engineer or admin).
"""

from __future__ import annotations

from typing import Any

import pytest

from sstools_agent.domain.catalog_types import Operation, ToolSpec
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.roles import ADMIN_ONLY, READ_ACCESS, WRITE_ACCESS, Role
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.ui_context import UIContext

A, E, D = Role.ANALYST, Role.ENGINEER, Role.ADMIN
TIERS = {"dev": "ss-dev", "staging": "staging", "prod": "prod"}
WRITE_SQL = "UPDATE t SET a = 1 WHERE id = 2"
"""What an SQL tool runs in the matrix: a write statement (SELECTs are checked below)."""

# tool -> (operation, least role in dev, staging, prod), as the role rules say.
WRITTEN_OUT: dict[str, tuple[str, Role, Role, Role]] = {
    "show_capabilities": ("read", A, A, A),
    "search_dashboards": ("read", A, A, A),
    "get_health_summary": ("read", A, A, A),
    "deploy_dashboard": ("write", E, E, D),
    "run_llm_validation": ("read", A, A, A),
    "run_llm_documentation": ("write", E, E, D),
    "execute_migration": ("write", E, E, D),
    "create_branch": ("write", E, E, D),
    "commit_changes": ("write", E, E, D),
    "superset_explore_database": ("read", A, A, A),
    "superset_format_sql": ("read", A, A, A),
    "superset_audit_permissions": ("read", A, A, A),
    "superset_execute_sql": ("write", E, E, D),  # a write statement; SELECT is checked below
    "superset_create_dataset": ("write", E, E, D),
    "get_task_status": ("read", A, A, A),
    "list_environments": ("read", A, A, A),
    "run_backup": ("write", D, D, D),
    "list_maintenance_events": ("read", A, A, A),
    "start_maintenance": ("write", D, D, D),
    "end_maintenance": ("write", D, D, D),
    "list_migrations": ("read", A, A, A),
    "get_migration_plan": ("read", A, A, A),
}


def expected(tool: str) -> tuple[str, Role, Role, Role]:
    """The written-out rule of `tool`, or, for a tool added since, its declaration."""
    if tool in WRITTEN_OUT:
        return WRITTEN_OUT[tool]
    spec = declared(tool)
    roles = spec.required_roles
    return spec.operation.value, roles.dev, roles.staging, roles.prod


def declared(tool: str) -> ToolSpec:
    spec = CATALOG.get(tool)
    assert spec is not None, tool
    return spec


def call_args(tool: str, env_id: str) -> dict[str, Any]:
    """The declaration's example call, run in `env_id`; an SQL tool's statement is a write."""
    spec = declared(tool)
    args = dict(spec.example_args)
    if spec.environment_argument:
        args[spec.environment_argument] = env_id
    if spec.sql_argument:
        args[spec.sql_argument] = WRITE_SQL
    return args


def page(env_id: str | None) -> UIContext:
    """A page with no object (so affinity keeps every tool) in `env_id`."""
    return UIContext.model_validate(
        {"contextVersion": 1, "envId": env_id, "route": "/settings"},
        context={"environments": DEFAULT_ENVIRONMENTS},
    )


def test_every_written_out_tool_is_declared():
    assert set(WRITTEN_OUT) <= set(CATALOG.names)


@pytest.mark.parametrize("spec", list(CATALOG), ids=lambda spec: spec.name)
def test_every_declaration_follows_the_role_rules(spec: ToolSpec):
    # Reads are open to every role; a write needs an engineer (an admin in prod) or an admin
    if spec.operation is Operation.READ:
        assert spec.required_roles == READ_ACCESS
    else:
        assert spec.required_roles in (WRITE_ACCESS, ADMIN_ONLY)
    if spec.sql_argument:  # a read statement of an SQL tool is a read like any other
        assert spec.read_roles == READ_ACCESS


MATRIX = [
    (role, tool, tier)
    for role in Role
    for tool in CATALOG.names
    for tier in ("dev", "staging", "prod")
]


@pytest.mark.parametrize(("role", "tool", "tier"), MATRIX)
def test_invocation_level_matches_the_matrix(policy, role, tool, tier):
    # Given a user of `role` on a page in an environment of `tier`
    env_id = TIERS[tier]
    operation, *least_roles = expected(tool)
    required = dict(zip(("dev", "staging", "prod"), least_roles, strict=True))[tier]
    # When the agent is about to run the tool there (whatever the model was shown)
    decision = policy.evaluate(role, tool, call_args(tool, env_id), page(env_id))
    # Then it runs exactly when the role meets the requirement, and a denial names that role
    assert decision.operation == operation
    assert decision.permission.allowed is role.satisfies(required)
    assert decision.permission.required_role == required
    if not decision.permission.allowed:
        assert decision.requires_confirmation is False


@pytest.mark.parametrize("tier", ["dev", "staging", "prod"])
@pytest.mark.parametrize("role", list(Role))
def test_prompt_level_offers_what_the_role_may_use(policy, role, tier):
    env_id = TIERS[tier]
    offered = set(policy.select_tools(role, page(env_id)).offered_names)
    for tool in CATALOG.names:
        spec = declared(tool)
        _, *least_roles = expected(tool)
        if spec.sql_argument:  # SELECTs are open to every role, so the tool is offered to all
            assert tool in offered
            continue
        tier_index = ("dev", "staging", "prod").index(tier)
        # A tool whose target is an argument is offered if the role may use it in some tier.
        needed = (
            least_roles[tier_index]
            if not spec.environment_argument
            else min(least_roles, key=lambda r: r.rank)
        )
        assert (tool in offered) is role.satisfies(needed), (role, tool, tier)


@pytest.mark.parametrize("tier", ["dev", "staging", "prod"])
def test_sc005_no_analyst_reaches_any_write_tool(policy, tier):
    env_id = TIERS[tier]
    writes = {tool for tool in CATALOG.names if expected(tool)[0] == "write"}
    # Prompt level: no write tool is offered, except SQL, which analysts may use for SELECT
    offered = set(policy.select_tools(Role.ANALYST, page(env_id)).offered_names)
    assert offered & writes == {"superset_execute_sql"}
    # Invocation level: every write call is denied, SQL writes included, even tools never offered
    for tool in writes:
        decision = policy.evaluate(Role.ANALYST, tool, call_args(tool, env_id), page(env_id))
        assert decision.permission.allowed is False, tool
        assert decision.requires_confirmation is False


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM energy WHERE day > now() - interval '1 day'",
        "WITH x AS (SELECT 1 AS a) SELECT a FROM x",
        "EXPLAIN SELECT * FROM energy",
    ],
)
def test_analysts_may_run_read_sql(policy, sql):
    decision = policy.evaluate(
        Role.ANALYST,
        "superset_execute_sql",
        {"database_id": 1, "sql": sql},
        page("prod"),
    )
    assert decision.permission.allowed
    assert decision.operation == "read"


def test_an_engineer_deploying_to_prod_is_denied_with_admin_required(policy):
    decision = policy.evaluate(
        Role.ENGINEER,
        "deploy_dashboard",
        {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "prod"},
        page("ss-dev"),
    )
    assert decision.permission.allowed is False
    assert decision.permission.required_role == Role.ADMIN
    assert decision.requires_confirmation is False
    assert decision.prompt.startswith("Недостаточно прав")


def test_a_tool_the_policy_does_not_know_is_denied(policy):
    decision = policy.evaluate(Role.ADMIN, "drop_everything", {}, page("ss-dev"))
    assert decision.permission.allowed is False
    assert decision.permission.required_role is None
    assert decision.requires_confirmation is False
    assert policy.check_invocation(Role.ADMIN, "drop_everything", {}, None).allowed is False


def test_a_user_without_a_known_role_gets_nothing(policy):
    assert policy.select_tools(None, page("ss-dev")).offered == ()
    permission = policy.check_invocation(None, "search_dashboards", {}, page("ss-dev"))
    assert permission.allowed is False


def test_removed_tools_carry_the_rule_that_removed_them(policy):
    selection = policy.select_tools(Role.ANALYST, page("prod"))
    removed = {removal.tool: removal for removal in selection.removed}
    assert removed["run_backup"].rule == "role"
    assert "admin" in removed["run_backup"].detail
    assert set(removed) | set(selection.offered_names) == set(CATALOG.names)


def test_a_write_kept_from_an_analyst_names_the_role_each_target_needs(policy):
    # deploy_dashboard's target is an argument: prod needs admin, not the least role of any tier
    removed = {r.tool: r for r in policy.select_tools(Role.ANALYST, page("ss-dev")).removed}
    deploy = removed["deploy_dashboard"]
    assert deploy.roles == {"ss-dev": "engineer", "staging": "engineer", "prod": "admin"}
    assert deploy.detail == "requires engineer in ss-dev, staging; admin in prod"
    assert removed["run_backup"].detail == "requires admin"


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE usename = 'bob'",
        "SELECT pg_catalog.pg_terminate_backend(4242)",
        "SELECT dblink_exec('host=db', 'DELETE FROM energy_readings')",
    ],
)
def test_an_analysts_select_with_side_effects_in_prod_is_refused_like_any_write(policy, sql):
    # Given an analyst on a prod page, and a plain write refused there
    write = policy.evaluate(
        Role.ANALYST,
        "superset_execute_sql",
        {"database_id": 1, "sql": "UPDATE t SET a = 1 WHERE id = 2"},
        page("prod"),
    )
    # When the model runs a SELECT that calls a function with side effects
    decision = policy.evaluate(
        Role.ANALYST, "superset_execute_sql", {"database_id": 1, "sql": sql}, page("prod")
    )
    # Then it is refused exactly as the write is: no card, admin named, nothing runs
    assert decision.operation == write.operation == "write"
    assert decision.permission.allowed is write.permission.allowed is False
    assert decision.permission.required_role == write.permission.required_role == Role.ADMIN
    assert decision.requires_confirmation is write.requires_confirmation is False
    assert decision.prompt == write.prompt
    assert (
        policy.check_invocation(
            Role.ANALYST, "superset_execute_sql", {"database_id": 1, "sql": sql}, page("prod")
        ).allowed
        is False
    )
