"""Who may use which tool where, at the prompt and again before every invocation.

One policy answers both questions: may a tool be offered to the model for this user on this page,
and may this particular call run. A tool the policy does not know is denied.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from sstools_agent.domain.catalog_types import EnvironmentSource, Operation, ToolSpec
from sstools_agent.domain.environments import Environment, EnvironmentTier
from sstools_agent.domain.policy_engine import (
    ROLE_CHAIN,
    CallFacts,
    Freeze,
    PolicyDecision,
    PolicyEngine,
    Principal,
    Trial,
    Who,
    principal_of,
    shipped_engine,
    tier_environment,
)
from sstools_agent.domain.roles import Role
from sstools_agent.domain.wording import until_in_words

if TYPE_CHECKING:  # a resolved call carries its SQL's classification: no parser for the offer
    from sstools_agent.domain.tool_calls import ResolvedToolCall


@dataclass(frozen=True, slots=True)
class PermissionResult:
    """The answer of the role check; a denial names the role that would be allowed."""

    allowed: bool
    user_role: Role | None
    required_role: Role | None
    reason: str
    policies: tuple[str, ...] = ()
    """The `@id`s of the Cedar policies that decided (none: Cedar's default deny)."""
    notice: str | None = None
    """What the user is told instead of the role a refusal needs (a change window's end)."""
    trial: Trial | None = None
    """What the log-only policies would have decided, when one of them took part."""
    card_policies: tuple[str, ...] = ()
    """The policies that ask this call's card (`RequireCard`), when it has one."""

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
    """Role checks at prompt level (what to offer) and at invocation level (what to run), each
    asked of the Cedar policy set `engine` holds (the shipped one unless told otherwise)."""

    def __init__(self, engine: PolicyEngine | None = None) -> None:
        self.engine = engine or shipped_engine()

    def required_to_offer(self, spec: ToolSpec, page_environment: Environment | None) -> Role:
        """The least role for which the tool is worth offering on this page (the highest when
        the policy offers it to nobody).

        A tool acting in the page's environment needs the role for that environment's tier; one
        whose target is an argument is offered to whoever may use it somewhere (each call is
        checked again).
        """
        calls = offer_calls(spec, page_environment)
        for role in ROLE_CHAIN:
            if self.engine.may_offer(Principal(role), calls):
                return role
        return ROLE_CHAIN[-1]

    def may_offer(self, who: Who, spec: ToolSpec, page_environment: Environment | None) -> bool:
        """Whether the model may see this tool at all."""
        return self.engine.may_offer(principal_of(who), offer_calls(spec, page_environment))

    def required_in(self, spec: ToolSpec, environment: Environment) -> Role | None:
        """The least role that may make the tool's declared call in `environment`."""
        return self.engine.least_role(
            CallFacts(spec.name, spec.operation, environment, cost=bool(spec.cost)), offer=True
        )

    def check(
        self, who: Who, call: ResolvedToolCall, *, card_configured: bool = False
    ) -> PermissionResult:
        """The invocation-level check, made before every call whatever the model was shown."""
        facts = call_facts(call, card_configured=card_configured)
        principal = principal_of(who)
        user_role = principal.role
        decision = self.engine.decide(principal, facts)
        where = f" in {call.environment.env_id}" if call.environment else ""
        if decision.allowed:
            return PermissionResult(
                True,
                user_role,
                self.engine.least_role(facts),
                f"{user_role} may {call.operation}{where}",
                decision.policies,
                trial=decision.trial,
            )
        if decision.freeze is not None:
            return PermissionResult(
                False,
                user_role,
                None,
                f"{call.spec.name} ({call.operation}){where} is frozen by policy "
                f"{decision.freeze.policy} until {decision.freeze.ends.isoformat()}",
                decision.policies,
                freeze_notice(decision.freeze, call.environment, self.engine.clock()),
                decision.trial,
            )
        required = self.engine.least_role(facts)
        if user_role is None:
            reason = "the user has no ss-tools role"
        else:
            reason = f"{call.spec.name} ({call.operation}){where} requires the {required} role"
        return PermissionResult(
            False, user_role, required, reason, decision.policies, trial=decision.trial
        )

    def requires_card(
        self, who: Who, call: ResolvedToolCall, *, card_configured: bool = False
    ) -> PolicyDecision:
        """Whether the call needs a card, and the policies that say so."""
        facts = call_facts(call, card_configured=card_configured)
        return self.engine.requires_card(principal_of(who), facts)

    def approvals_required(self, who: Who, call: ResolvedToolCall) -> int:
        """How many people approve the call (`RequireSecondApprover`: two)."""
        return self.engine.approvals_required(principal_of(who), call_facts(call))


def call_facts(call: ResolvedToolCall, *, card_configured: bool = False) -> CallFacts:
    """What policy sees of a resolved call."""
    return CallFacts(
        call.spec.name,
        call.operation,
        call.environment,
        cost=bool(call.spec.cost),
        card_configured=card_configured,
    )


def freeze_notice(freeze: Freeze, environment: Environment | None, now: datetime) -> str:
    """«Изменения в prod заморожены до пятницы 18:00 (Europe/Moscow)»."""
    where = f" в {environment.env_id}" if environment else ""
    return f"Изменения{where} заморожены до {until_in_words(freeze.ends, now)} ({freeze.timezone})"
