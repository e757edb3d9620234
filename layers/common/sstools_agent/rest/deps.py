"""The REST API's collaborators and the dependency aliases its routes declare.

`ApiDeps` holds what the use cases need (built by `wiring.api.build_api`, kept on `app.state`;
tests replace one with `dataclasses.replace`);
`Api`, `Caller`, `ConversationId` and `ToolCallId` are the `Annotated` aliases routes use, so a
route names what it needs and nothing builds anything per request.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated, Any, Final

from fastapi import Depends, Path, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from sstools_agent.adapters.process_state import renew_after_restore
from sstools_agent.domain.attempt_limits import AuthFailureSampler, FailureLimiter
from sstools_agent.domain.audit import audited_ui_context
from sstools_agent.domain.conversations import CONVERSATION_ID_PATTERN
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.identity import Principal, UserTokenVerifier
from sstools_agent.domain.policy_engine import PolicyEngine, shipped_engine
from sstools_agent.domain.ports import AuditSink
from sstools_agent.domain.role_policy import RolePolicy
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_selection import ToolSelector
from sstools_agent.domain.ui_context import UIContext
from sstools_agent.http.auth import authenticate_request, authenticated_principal
from sstools_agent.http.client_address import ClientAddresses
from sstools_agent.http.observability import Observability
from sstools_agent.rest.files import FilesApi
from sstools_agent.rest.schemas import TOOL_CALL_ID_PATTERN, ErrorBody
from sstools_agent.rest.service import ConversationsApi, ServiceTokens

API_OBSERVABILITY: Final = Observability.of("api")
"""The REST API function's logger, metrics and tracer: its routes, app and handler share them."""


@dataclass(frozen=True, slots=True)
class ApiDeps:
    """The REST API's collaborators."""

    conversations: ConversationsApi
    files: FilesApi
    service_tokens: ServiceTokens
    jwks: Callable[[], dict[str, Any]]
    """The JWKS document of the service-token keys."""
    verifier: UserTokenVerifier
    environments: EnvironmentRegistry
    audit: AuditSink
    auth_failures: AuthFailureSampler = field(default_factory=AuthFailureSampler)
    service_token_failures: FailureLimiter = field(default_factory=FailureLimiter)
    client_addresses: ClientAddresses = field(default_factory=ClientAddresses)
    """Where a request came from, for the two counters above."""
    policy: PolicyEngine = field(default_factory=shipped_engine)
    """The policy set the offers (and so the starter questions) follow: the chat's own."""

    def page_context(
        self, ui_context: Any, caller: Principal, conversation_id: str | None = None
    ) -> UIContext | None:
        """A page context validated and audited as the chat does; ContextRejected (422)."""
        return audited_ui_context(
            ui_context, self.environments, self.audit.emit, caller.subject, conversation_id
        )

    def prepare_snapshot(self) -> None:
        """SnapStart's before-snapshot hook: everything is built at import; held audit records
        are sent, so that no restored environment sends them again."""
        self.audit.flush()

    def renew_after_restore(self) -> None:
        """SnapStart's after-restore hook: new random state and AWS connections
        (`adapters.process_state`); nothing else here is kept per process."""
        renew_after_restore()

    def checked_context(
        self, ui_context: Any, caller: Principal, conversation_id: str | None = None
    ) -> dict[str, Any] | None:
        """`page_context` as stored: the payload the page sent, validated."""
        page = self.page_context(ui_context, caller, conversation_id)
        return page.to_payload() if page else None

    @property
    def tools(self) -> ToolSelector:
        """What each user is offered on each page (the starter questions follow it)."""
        return ToolSelector(CATALOG, self.environments, RolePolicy(self.policy))


def rest_api(request: Request) -> ApiDeps:
    """The app's collaborators."""
    api: ApiDeps = request.app.state.api
    return api


Api = Annotated[ApiDeps, Depends(rest_api)]
bearer = HTTPBearer(auto_error=False, description="The user's JWT")


def authenticate_caller(request: Request) -> Principal:
    """The REST API's sign-in check (`AuthenticatedRoute` runs it before the body is read)."""
    api = rest_api(request)
    return authenticate_request(
        request,
        api.verifier,
        api.audit,
        source=api.client_addresses.of(request),
        failures=api.auth_failures,
    )


def current_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> Principal:
    """The caller, authenticated from the user JWT before the body was read (dependency of every
    user endpoint; their routers' routes are `AuthenticatedRoute`s). `credentials` declares the
    bearer scheme in the OpenAPI schema; the route read the header already."""
    del credentials
    return authenticated_principal(request)


Caller = Annotated[Principal, Depends(current_principal)]
ConversationId = Annotated[str, Path(pattern=CONVERSATION_ID_PATTERN)]
ToolCallId = Annotated[str, Path(pattern=TOOL_CALL_ID_PATTERN)]


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI: the error statuses an operation answers, all with the `{code, detail}` body
    (400: a bad cursor; 422: a request that does not validate, a body that is not JSON
    included; 500: an internal failure)."""
    answers: dict[int | str, dict[str, Any]] = {
        status: {"model": ErrorBody} for status in (*statuses, 400, 422, 500)
    }
    return answers
