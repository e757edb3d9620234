"""What every agent run needs and LangGraph does not checkpoint: who asks, and from which page."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from sstools_agent.agent.prefetch import PrefetchedObject
from sstools_agent.domain.confirmations import ExecutionState
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.policy_engine import Principal as PolicyPrincipal
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_routing import RoutingDecision
from sstools_agent.domain.tool_runs import UpstreamCredentials
from sstools_agent.domain.ui_context import UIContext


class ConfirmedCall(Protocol):
    """The one call a confirm allows, and the journal of its execution."""

    @property
    def tool_call_id(self) -> str: ...

    @property
    def fingerprint(self) -> str:
        """Tool, arguments, environment and risk, as the card showed them."""
        ...

    async def started(self) -> bool:
        """Records, durably, that the call leaves now; False: it must not run (already started,
        or given up as not run)."""
        ...

    async def finished(self, outcome: ExecutionState) -> None:
        """Records what became of the call."""
        ...


@dataclass(frozen=True, slots=True)
class AgentRunContext:
    """The runtime context of one agent invocation, rebuilt and passed on every call and resume."""

    principal: Principal
    ui_context: UIContext | None
    service_token: str
    request_id: str | None = None
    routing: RoutingDecision | None = None
    """The router's choice for this turn's message (None on a resume: the policy's set)."""
    prefetched: PrefetchedObject | None = None
    """The page object's summary, read while the turn started (None: not named, failed, slow)."""
    confirmed_call: ConfirmedCall | None = None
    """On the resume of a confirmed card: the only call that may run without a new card."""
    file_blocks: tuple[dict[str, Any], ...] = ()
    """The bytes of this turn's images and PDFs as content blocks, added to the user's message
    for this run's model calls only: they never reach the checkpoint (its message keeps the
    files' data blocks), so a conversation's later turns do not carry them."""

    @property
    def role(self) -> Role | None:
        """The user's role for the policy."""
        return self.principal.role

    @property
    def who(self) -> PolicyPrincipal:
        """Who asks, as policy sees them: the role, the token's groups and its subject."""
        return PolicyPrincipal(self.principal.role, self.principal.groups, self.principal.subject)

    @property
    def credentials(self) -> UpstreamCredentials:
        """Both identities for the upstream call."""
        return UpstreamCredentials(
            service_token=self.service_token, user_token=self.principal.token
        )
