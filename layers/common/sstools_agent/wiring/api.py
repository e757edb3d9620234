"""The REST API function's composition: `build_api(settings) -> ApiDeps` (no agent imports)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sstools_agent.adapters.audit import AuditSink
from sstools_agent.domain.attempt_limits import AuthFailureSampler, FailureLimiter
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.identity import UserTokenVerifier
from sstools_agent.rest.service import ConversationsApi, ServiceTokens
from sstools_agent.settings import ApiSettings
from sstools_agent.wiring.adapters import (
    audit_sink_from,
    client_credentials_from,
    conversations_api_from,
    secrets_reader_from,
    service_token_issuer_from,
    user_verifier_from,
)


@dataclass(frozen=True, slots=True)
class ApiDeps:
    """The REST API's collaborators; tests replace one with `dataclasses.replace`."""

    conversations: ConversationsApi
    service_tokens: ServiceTokens
    jwks: Callable[[], dict[str, Any]]
    """The JWKS document of the service-token keys."""
    verifier: UserTokenVerifier
    environments: EnvironmentRegistry
    audit: AuditSink
    auth_failures: AuthFailureSampler = field(default_factory=AuthFailureSampler)
    service_token_failures: FailureLimiter = field(default_factory=FailureLimiter)


def build_api(settings: ApiSettings) -> ApiDeps:
    """The REST API's collaborators, wired to AWS as `settings` say."""
    reader = secrets_reader_from(settings)
    issuer = service_token_issuer_from(settings)
    return ApiDeps(
        conversations=conversations_api_from(settings, reader),
        service_tokens=ServiceTokens(
            client_credentials_from(settings, reader), issuer, settings.service_token_ttl_s
        ),
        jwks=issuer.jwks,
        verifier=user_verifier_from(settings),
        environments=settings.environments(),
        audit=audit_sink_from(settings),
        auth_failures=settings.auth_failure_sampler(),
        service_token_failures=settings.service_token_limiter(),
    )
