"""How many people approve a call (`domain/approvals.py`), and the decision that carries it."""

from __future__ import annotations

import pytest

from sstools_agent.domain.approvals import approvals_text, required_approvals
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from tests.unit.test_guardrails import dashboard_page, deploy

SQL_READ = {"database_id": 1, "sql": "SELECT 1"}
SQL_WRITE = {"database_id": 1, "sql": "DELETE FROM t WHERE id = 1"}


@pytest.mark.parametrize(
    ("tool", "args", "page", "prod_approvers", "approvers"),
    [
        ("deploy_dashboard", deploy("prod", [10]), "ss-dev", 2, 2),
        ("deploy_dashboard", deploy("prod", [10]), "ss-dev", 1, 1),
        ("deploy_dashboard", deploy("staging", [10]), "ss-dev", 2, 1),
        ("superset_execute_sql", SQL_WRITE, "prod", 2, 2),
        ("superset_execute_sql", SQL_WRITE, "staging", 2, 1),
    ],
)
def test_a_prod_write_needs_two_people_only_when_the_deployment_asks(
    tool, args, page, prod_approvers, approvers
):
    policy = ToolPolicy(CATALOG, DEFAULT_ENVIRONMENTS, prod_approvers=prod_approvers)
    decision = policy.evaluate(Role.ADMIN, tool, args, dashboard_page(page))
    assert decision.requires_confirmation
    assert decision.approvers == approvers
    call = policy.resolve(tool, args, dashboard_page(page))
    assert call is not None
    assert required_approvals(call, prod_approvers) == approvers


def test_a_prod_read_is_one_persons_even_with_two_approvers():
    policy = ToolPolicy(CATALOG, DEFAULT_ENVIRONMENTS, prod_approvers=2)
    call = policy.resolve("superset_execute_sql", SQL_READ, dashboard_page("prod"))
    assert call is not None
    assert required_approvals(call, 2) == 1


def test_the_default_policy_keeps_one_approver_for_everything(policy: ToolPolicy):
    decision = policy.evaluate(
        Role.ADMIN, "deploy_dashboard", deploy("prod", [10]), dashboard_page()
    )
    assert decision.approvers == 1
    assert decision.to_payload()["approvers"] == 1


def test_approvals_are_counted_in_words():
    assert approvals_text(1, 2) == "подтверждено (1 из 2)"
