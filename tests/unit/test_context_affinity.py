"""Context affinity : the seed's acceptance lists, exactly, as a hard filter."""

from __future__ import annotations

import pytest

from sstools_agent.domain.context_affinity import tools_for_object
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.ui_context import ObjectType, UIContext
from tests.support.seed import SEED_DASHBOARD_TOOLS, SEED_DATASET_TOOLS

# Ours (the seed names no list for migrations): see docs/policy.md.
MIGRATION_TOOLS = {
    "list_migrations",
    "get_migration_plan",
    "execute_migration",
    "get_task_status",
    "list_environments",
    "search_dashboards",
    "show_capabilities",
}


def context(object_type: str | None, env_id: str | None = "ss-dev") -> UIContext:
    payload = {"contextVersion": 1, "objectType": object_type, "envId": env_id, "route": "/x"}
    return UIContext.model_validate(payload, context={"environments": DEFAULT_ENVIRONMENTS})


def test_affinity_lists_equal_the_seed_lists():
    assert set(tools_for_object(CATALOG, ObjectType.DASHBOARD)) == SEED_DASHBOARD_TOOLS
    assert set(tools_for_object(CATALOG, ObjectType.DATASET)) == SEED_DATASET_TOOLS
    assert set(tools_for_object(CATALOG, ObjectType.MIGRATION)) == MIGRATION_TOOLS
    assert set(tools_for_object(CATALOG, None)) == set(CATALOG.names)


def test_an_admin_on_a_dashboard_page_is_offered_exactly_the_dashboard_tools(policy):
    # Story 1, acceptance 3: irrelevant tools (superset_explore_database, run_backup...) excluded
    offered = set(policy.select_tools(Role.ADMIN, context("dashboard")).offered_names)
    assert offered == SEED_DASHBOARD_TOOLS


def test_an_admin_on_a_dataset_page_is_offered_exactly_the_dataset_tools(policy):
    offered = set(policy.select_tools(Role.ADMIN, context("dataset", "staging")).offered_names)
    assert offered == SEED_DATASET_TOOLS


def test_affinity_never_widens_what_the_role_allows(policy):
    # An analyst on a dashboard page: the dashboard list minus its write tools
    offered = set(policy.select_tools(Role.ANALYST, context("dashboard")).offered_names)
    assert offered == SEED_DASHBOARD_TOOLS - {
        "deploy_dashboard",
        "run_llm_documentation",
        "execute_migration",
        "create_branch",
        "commit_changes",
    }


def test_without_an_object_every_allowed_tool_is_offered(policy):
    # Story 1, acceptance 6: a page without a context object (/settings)
    offered = policy.select_tools(Role.ADMIN, context(None, "prod")).offered_names
    assert sorted(offered) == sorted(CATALOG.names)


@pytest.mark.parametrize("object_type", [None, "dashboard", "dataset", "migration"])
@pytest.mark.parametrize("role", list(Role))
def test_show_capabilities_is_always_offered(policy, object_type, role):
    for env_id in (None, "ss-dev", "prod"):
        selection = policy.select_tools(role, context(object_type, env_id))
        assert selection.offers("show_capabilities")


def test_without_an_environment_env_specific_tools_are_out(policy):
    # Edge case: /agent without envId -> environment-agnostic mode
    selection = policy.select_tools(Role.ADMIN, context(None, None))
    assert set(selection.offered_names) == {
        "show_capabilities",
        "superset_format_sql",
        "get_task_status",
        "list_environments",
        "list_migrations",
        "get_migration_plan",
    }
    rules = {removal.tool: removal.rule for removal in selection.removed}
    assert rules["deploy_dashboard"] == "no_environment"
    assert rules["search_dashboards"] == "no_environment"


def test_no_context_at_all_is_the_environment_agnostic_full_mode(policy):
    offered = set(policy.select_tools(Role.ADMIN, None).offered_names)
    assert "search_dashboards" not in offered
    assert "list_environments" in offered


def test_a_new_page_gets_its_own_tools(policy):
    # Story 1, acceptance 5: no sticking of an old context: selection depends only on its input
    first = policy.select_tools(Role.ENGINEER, context("dashboard")).offered_names
    second = policy.select_tools(Role.ENGINEER, context("dataset")).offered_names
    again = policy.select_tools(Role.ENGINEER, context("dashboard")).offered_names
    assert first == again
    assert set(first) != set(second)
