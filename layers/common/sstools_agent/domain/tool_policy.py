"""The one object agent middleware talks to: what to offer the model, and what a call may do.

`select_tools` applies the role policy, then context affinity (tool routing narrows it further in
a later step) and records why each removed tool went. `evaluate` resolves a call and returns its
GuardrailDecision, permission included; `check_invocation` is its permission alone, for the check
that runs before every tool execution whatever the model was shown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from sstools_agent.domain.catalog_types import EnvironmentSource, ToolSpec
from sstools_agent.domain.context_affinity import AffinityVerdict, affinity_verdict
from sstools_agent.domain.environments import Environment, EnvironmentRegistry
from sstools_agent.domain.guardrails import GuardrailDecision, decide_guardrail, decide_unknown_tool
from sstools_agent.domain.role_policy import PermissionResult, RolePolicy
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_calls import ResolvedToolCall, resolve_tool_call
from sstools_agent.domain.tool_catalog import ToolCatalog
from sstools_agent.domain.ui_context import UIContext


class RemovalRule(StrEnum):
    """The filter that took a tool out of the model's list."""

    ROLE = "role"
    AFFINITY = "affinity"
    NO_ENVIRONMENT = "no_environment"


@dataclass(frozen=True, slots=True)
class ToolRemoval:
    """One tool the model will not see, and why."""

    tool: str
    rule: RemovalRule
    detail: str
    roles: Mapping[str, str] | None = None
    """For a role removal whose call names its environment: the role each environment needs
    (a refusal then names the one the asked-for target needs, not the least of them)."""


@dataclass(frozen=True, slots=True)
class ToolSelection:
    """The tools offered for one turn, with the record of what was removed."""

    offered: tuple[ToolSpec, ...]
    removed: tuple[ToolRemoval, ...]

    @property
    def offered_names(self) -> tuple[str, ...]:
        """Names of the offered tools, in catalog order."""
        return tuple(spec.name for spec in self.offered)

    def offers(self, tool: str) -> bool:
        """Whether the model was shown this tool."""
        return tool in self.offered_names


_AFFINITY_RULES = {
    AffinityVerdict.OTHER_OBJECT_TYPE: RemovalRule.AFFINITY,
    AffinityVerdict.NO_ENVIRONMENT: RemovalRule.NO_ENVIRONMENT,
}


class ToolPolicy:
    """Role policy, context affinity and guardrails over one catalog and one set of environments."""

    def __init__(
        self,
        catalog: ToolCatalog,
        environments: EnvironmentRegistry,
        *,
        confirm_reads: frozenset[str] = frozenset(),
        sql_dialect: str | None = None,
    ) -> None:
        self.catalog = catalog
        self.environments = environments
        self.confirm_reads = confirm_reads
        self.sql_dialect = sql_dialect
        self.roles = RolePolicy()

    def select_tools(self, user_role: Role | None, ui_context: UIContext | None) -> ToolSelection:
        """The tools to give the model: role first, then the page's affinity and environment."""
        page_env_id = ui_context.env_id if ui_context is not None else None
        page_environment = self.environments.get(page_env_id) if page_env_id else None
        offered: list[ToolSpec] = []
        removed: list[ToolRemoval] = []
        for spec in self.catalog:
            if not self.roles.may_offer(user_role, spec, page_environment):
                removed.append(self._role_removal(spec, page_environment))
                continue
            verdict = affinity_verdict(spec, ui_context)
            if verdict is not AffinityVerdict.KEPT:
                removed.append(ToolRemoval(spec.name, _AFFINITY_RULES[verdict], verdict.value))
                continue
            offered.append(spec)
        return ToolSelection(tuple(offered), tuple(removed))

    def _role_removal(self, spec: ToolSpec, page_environment: Environment | None) -> ToolRemoval:
        """Why a role keeps `spec` out: the least role it is offered to, and where the call's
        target decides, the role each environment needs («engineer in ss-dev, staging; admin in
        prod»)."""
        needed = self.roles.required_to_offer(spec, page_environment)
        if spec.environment_source is not EnvironmentSource.ARGUMENT:
            return ToolRemoval(spec.name, RemovalRule.ROLE, f"requires {needed}")
        roles = {
            env.env_id: str(spec.required_roles.for_tier(env.tier)) for env in self.environments
        }
        if len(set(roles.values())) == 1:
            return ToolRemoval(spec.name, RemovalRule.ROLE, f"requires {needed}", roles)
        by_role: dict[str, list[str]] = {}
        for env_id, role in roles.items():
            by_role.setdefault(role, []).append(env_id)
        where = "; ".join(f"{role} in {', '.join(envs)}" for role, envs in by_role.items())
        return ToolRemoval(spec.name, RemovalRule.ROLE, f"requires {where}", roles)

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
        user_role: Role | None,
        tool: str,
        args: Mapping[str, Any],
        ui_context: UIContext | None,
    ) -> GuardrailDecision:
        """The guardrail decision for a call, its permission included.

        Raises InvalidToolCall when a known tool gets bad arguments or has no environment to run in.
        """
        call = self.resolve(tool, args, ui_context)
        if call is None:
            return decide_unknown_tool(tool, PermissionResult.unknown_tool(tool, user_role))
        return decide_guardrail(call, self.roles.check(user_role, call), self.confirm_reads)

    def check_invocation(
        self,
        user_role: Role | None,
        tool: str,
        args: Mapping[str, Any],
        ui_context: UIContext | None,
    ) -> PermissionResult:
        """The role check made before every execution, whatever the model was shown."""
        return self.evaluate(user_role, tool, args, ui_context).permission
