"""The REST API function's composition: `build_api(settings) -> ApiDeps` (no agent imports)."""

from __future__ import annotations

from functools import partial

from sstools_agent.domain.policy_engine import PolicyEngine
from sstools_agent.http.client_address import ClientAddresses
from sstools_agent.http.observability import policy_set_refused
from sstools_agent.rest.deps import ApiDeps
from sstools_agent.rest.files import FilesApi
from sstools_agent.rest.service import ServiceTokens
from sstools_agent.settings import ApiSettings
from sstools_agent.wiring.adapters import (
    attachment_store_from,
    audit_sink_from,
    client_credentials_from,
    conversations_api_from,
    policy_source_from,
    secrets_reader_from,
    service_token_issuer_from,
    user_verifier_from,
)


def build_api(settings: ApiSettings) -> ApiDeps:
    """The REST API's collaborators, wired to AWS as `settings` say."""
    reader = secrets_reader_from(settings)
    issuer = service_token_issuer_from(settings)
    return ApiDeps(
        conversations=conversations_api_from(settings, reader),
        files=FilesApi(attachment_store_from(settings), settings.attachment_limits()),
        service_tokens=ServiceTokens(
            client_credentials_from(settings, reader), issuer, settings.service_token_ttl_s
        ),
        jwks=issuer.jwks,
        verifier=user_verifier_from(settings),
        environments=settings.environments(),
        audit=audit_sink_from(settings),
        auth_failures=settings.auth_failure_sampler(),
        service_token_failures=settings.service_token_limiter(),
        client_addresses=ClientAddresses.trusting(settings.origin_verify_secret),
        policy=PolicyEngine(policy_source_from(settings, partial(policy_set_refused, "api"))),
    )
