"""What a turn may offer the model before routing: the role policy, then the page's affinity and
environment, with the reason each removed tool went. Its own module so that the REST API (whose
starter questions follow it) loads no SQL parser and no guardrails at its start."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from sstools_agent.domain.catalog_types import EnvironmentSource, ToolSpec
from sstools_agent.domain.context_affinity import AffinityVerdict, affinity_verdict
from sstools_agent.domain.environments import Environment, EnvironmentRegistry
from sstools_agent.domain.policy_engine import Who
from sstools_agent.domain.role_policy import RolePolicy
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


class ToolSelector:
    """The role policy and context affinity over one catalog and one set of environments."""

    def __init__(
        self,
        catalog: ToolCatalog,
        environments: EnvironmentRegistry,
        roles: RolePolicy | None = None,
    ) -> None:
        self.catalog = catalog
        self.environments = environments
        self.roles = roles or RolePolicy()

    def select(self, who: Who, ui_context: UIContext | None) -> ToolSelection:
        """The tools to give the model: role first, then the page's affinity and environment."""
        page_env_id = ui_context.env_id if ui_context is not None else None
        page_environment = self.environments.get(page_env_id) if page_env_id else None
        offered: list[ToolSpec] = []
        removed: list[ToolRemoval] = []
        for spec in self.catalog:
            if not self.roles.may_offer(who, spec, page_environment):
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
        roles = {env.env_id: str(self.roles.required_in(spec, env)) for env in self.environments}
        if len(set(roles.values())) == 1:
            return ToolRemoval(spec.name, RemovalRule.ROLE, f"requires {needed}", roles)
        by_role: dict[str, list[str]] = {}
        for env_id, role in roles.items():
            by_role.setdefault(role, []).append(env_id)
        where = "; ".join(f"{role} in {', '.join(envs)}" for role, envs in by_role.items())
        return ToolRemoval(spec.name, RemovalRule.ROLE, f"requires {where}", roles)
