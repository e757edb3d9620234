"""The one object agent middleware talks to: what to offer the model, and what a call may do.

`select_tools` applies the role policy, then context affinity (tool routing narrows it further in
a later step) and records why each removed tool went. `evaluate` resolves a call and returns its
GuardrailDecision, permission included; `check_invocation` is its permission alone, for the check
that runs before every tool execution whatever the model was shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from sstools_agent.domain.approvals import DEFAULT_PROD_APPROVERS, required_approvals
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.guardrails import GuardrailDecision, decide_guardrail, decide_unknown_tool
from sstools_agent.domain.policy_engine import PolicyEngine, Who, principal_of
from sstools_agent.domain.role_policy import PermissionResult, RolePolicy
from sstools_agent.domain.tool_calls import ResolvedToolCall, resolve_tool_call
from sstools_agent.domain.tool_catalog import ToolCatalog
from sstools_agent.domain.tool_selection import ToolSelection, ToolSelector
from sstools_agent.domain.ui_context import UIContext


class ToolPolicy:
    """Role policy, context affinity and guardrails over one catalog and one set of environments."""

    def __init__(
        self,
        catalog: ToolCatalog,
        environments: EnvironmentRegistry,
        *,
        confirm_reads: frozenset[str] = frozenset(),
        sql_dialect: str | None = None,
        engine: PolicyEngine | None = None,
        prod_approvers: int = DEFAULT_PROD_APPROVERS,
    ) -> None:
        self.catalog = catalog
        self.environments = environments
        self.confirm_reads = confirm_reads
        self.sql_dialect = sql_dialect
        self.prod_approvers = prod_approvers
        self.roles = RolePolicy(engine)
        self.selector = ToolSelector(catalog, environments, self.roles)

    def select_tools(self, who: Who, ui_context: UIContext | None) -> ToolSelection:
        """The tools to give the model: role first, then the page's affinity and environment."""
        return self.selector.select(who, ui_context)

    def resolve(
        self, tool: str, args: Mapping[str, Any], ui_context: UIContext | None
    ) -> ResolvedToolCall | None:
        """The resolved call, or None for an unknown tool; raises InvalidToolCall for bad args."""
        spec = self.catalog.get(tool)
        if spec is None:
            return None
        return resolve_tool_call(spec, args, ui_context, self.environments, self.sql_dialect)

    def evaluate(
        self,
        who: Who,
        tool: str,
        args: Mapping[str, Any],
        ui_context: UIContext | None,
    ) -> GuardrailDecision:
        """The guardrail decision for a call, its permission included.

        Raises InvalidToolCall when a known tool gets bad arguments or has no environment to run in.
        """
        call = self.resolve(tool, args, ui_context)
        if call is None:
            role = principal_of(who).role
            return decide_unknown_tool(tool, PermissionResult.unknown_tool(tool, role))
        configured = tool in self.confirm_reads
        permission = self.roles.check(who, call, card_configured=configured)
        card = self.roles.requires_card(who, call, card_configured=configured)
        if card.allowed and permission.allowed:
            permission = replace(permission, card_policies=card.policies)
        decision = decide_guardrail(call, permission, needs_card=card.allowed)
        if not decision.requires_confirmation:
            return decision
        return replace(decision, approvers=self._approvals(who, call))

    def _approvals(self, who: Who, call: ResolvedToolCall) -> int:
        """The deployment's floor (`PROD_APPROVERS`) or the policy set's `RequireSecondApprover`,
        whichever asks for more people."""
        floor = required_approvals(call, self.prod_approvers)
        return max(floor, self.roles.approvals_required(who, call))

    def check_invocation(
        self,
        who: Who,
        tool: str,
        args: Mapping[str, Any],
        ui_context: UIContext | None,
    ) -> PermissionResult:
        """The role check made before every execution, whatever the model was shown."""
        return self.evaluate(who, tool, args, ui_context).permission
