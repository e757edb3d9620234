"""The REST API function: conversations, history, the multi-tab gate, service tokens, JWKS.

Routes only: the routers of `sstools_agent.rest.routes` over the use cases of
`sstools_agent.rest`, with the shared error handlers and refusal table. On Lambda this FastAPI
app runs under Mangum behind API Gateway (main.py); locally and in the tests under uvicorn,
beside the chat function on one origin.
"""

from __future__ import annotations

from typing import Any

from fastapi import Depends, FastAPI

from sstools_agent.factories import (
    audit_sink_from,
    client_credentials_from,
    conversations_api_from,
    secrets_reader_from,
    service_token_issuer_from,
    user_verifier_from,
)
from sstools_agent.http.errors import install_error_handlers, single_query_values
from sstools_agent.http.observability import Observability
from sstools_agent.http.refusals import install_refusals
from sstools_agent.rest.deps import RestApi
from sstools_agent.rest.routes import conversations, identity
from sstools_agent.rest.service import ServiceTokens
from sstools_agent.settings import Settings

observability = Observability.of("api")
logger, metrics = observability.logger, observability.metrics


def create_app(**collaborators: Any) -> FastAPI:
    """The REST ASGI app over RestApi's collaborators (factories build them)."""
    app = FastAPI(
        title="ss-tools agent REST API",
        version="1.0",
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(single_query_values)],
    )
    install_error_handlers(app)
    install_refusals(app)
    app.state.api = RestApi(**collaborators, observability=observability)
    app.middleware("http")(observability.request_log())
    app.include_router(conversations.router)
    app.include_router(identity.router)
    return app


def app_from_settings(settings: Settings, **overrides: Any) -> FastAPI:
    """The app wired to AWS as `settings` say (Lambda's main.py, the local stack, the tests);
    `overrides` replace collaborators by name (a test's audit sink)."""
    reader = secrets_reader_from(settings)
    issuer = service_token_issuer_from(settings)
    collaborators: dict[str, Any] = {
        "conversations": conversations_api_from(settings, reader),
        "service_tokens": ServiceTokens(
            client_credentials_from(settings, reader), issuer, settings.service_token_ttl_s
        ),
        "jwks": issuer.jwks,
        "verifier": user_verifier_from(settings),
        "environments": settings.environments(),
        "audit": audit_sink_from(settings),
        "auth_failures": settings.auth_failure_sampler(),
        "service_token_failures": settings.service_token_limiter(),
    }
    return create_app(**(collaborators | overrides))
