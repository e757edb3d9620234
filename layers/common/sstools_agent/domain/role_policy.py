"""Who may use which tool where, at the prompt and again before every invocation.

One policy answers both questions: may a tool be offered to the model for this user on this page,
and may this particular call run. A tool the policy does not know is denied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sstools_agent.domain.catalog_types import EnvironmentSource, Operation, ToolSpec
from sstools_agent.domain.environments import Environment, EnvironmentTier
from sstools_agent.domain.policy_engine import CallFacts, tier_environment
from sstools_agent.domain.roles import Role

if TYPE_CHECKING:  # a resolved call carries its SQL's classification: no parser for the offer
    from sstools_agent.domain.tool_calls import ResolvedToolCall


@dataclass(frozen=True, slots=True)
class PermissionResult:
    """The answer of the role check; a denial names the role that would be allowed."""

    allowed: bool
    user_role: Role | None
    required_role: Role | None
    reason: str

    @classmethod
    def unknown_tool(cls, tool: str, user_role: Role | None) -> PermissionResult:
        """The denial for a tool name the catalog does not declare."""
        return cls(False, user_role, None, f"tool {tool!r} is not known to the policy")


def offer_calls(spec: ToolSpec, page_environment: Environment | None) -> list[CallFacts]:
    """The calls of `spec` that make it worth offering on this page: in the page's environment
    for a tool that acts there, else in any tier (each call is checked again); an SQL tool's
    statement may turn out a read, so its reads count too."""
    if spec.environment_source is EnvironmentSource.UI_CONTEXT and page_environment:
        environments = [page_environment]
    else:
        environments = [tier_environment(tier) for tier in EnvironmentTier]
    operations = [spec.operation]
    if spec.sql_argument is not None:
        operations.append(Operation.READ)
    return [
        CallFacts(spec.name, operation, environment, cost=bool(spec.cost))
        for operation in operations
        for environment in environments
    ]


class RolePolicy:
    """Role checks at prompt level (what to offer) and at invocation level (what to run)."""

    def required_to_offer(self, spec: ToolSpec, page_environment: Environment | None) -> Role:
        """The least role for which the tool is worth offering on this page.

        A tool acting in the page's environment needs the role for that environment's tier; one
        whose target is an argument is offered to whoever may use it somewhere (each call is
        checked again).
        """
        if spec.environment_source is EnvironmentSource.UI_CONTEXT and page_environment:
            roles = [spec.required_roles.for_tier(page_environment.tier)]
        else:
            roles = [spec.required_roles.most_lenient]
        if spec.sql_argument is not None:
            roles.append(spec.read_roles.most_lenient)
        return min(roles, key=lambda role: role.rank)

    def may_offer(
        self, user_role: Role | None, spec: ToolSpec, page_environment: Environment | None
    ) -> bool:
        """Whether the model may see this tool at all."""
        return user_role is not None and user_role.satisfies(
            self.required_to_offer(spec, page_environment)
        )

    def check(self, user_role: Role | None, call: ResolvedToolCall) -> PermissionResult:
        """The invocation-level check, made before every call whatever the model was shown."""
        tier = call.environment.tier if call.environment else None
        required = call.required_roles.for_tier(tier)
        where = f" in {call.environment.env_id}" if call.environment else ""
        if user_role is None:
            return PermissionResult(False, None, required, "the user has no ss-tools role")
        if not user_role.satisfies(required):
            return PermissionResult(
                False,
                user_role,
                required,
                f"{call.spec.name} ({call.operation}){where} requires the {required} role",
            )
        return PermissionResult(
            True, user_role, required, f"{user_role} may {call.operation}{where}"
        )
