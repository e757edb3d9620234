"""What every agent run needs and LangGraph does not checkpoint: who asks, and from which page."""

from __future__ import annotations

from dataclasses import dataclass

from sstools_agent.adapters.upstream_client import UpstreamCredentials
from sstools_agent.agent.prefetch import PrefetchedObject
from sstools_agent.domain.identity import Principal
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_routing import RoutingDecision
from sstools_agent.domain.ui_context import UIContext


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

    @property
    def role(self) -> Role | None:
        """The user's role for the policy."""
        return self.principal.role

    @property
    def credentials(self) -> UpstreamCredentials:
        """Both identities for the upstream call."""
        return UpstreamCredentials(
            service_token=self.service_token, user_token=self.principal.token
        )
