"""The REST API function: conversations, history, the multi-tab gate, service tokens, JWKS.

Routes only: the routers of `sstools_agent.rest.routes` over the use cases of
`sstools_agent.rest`, with the shared error handlers and refusal table. On Lambda this FastAPI
app runs under Mangum behind API Gateway (main.py); locally and in the tests under uvicorn,
beside the chat function on one origin.
"""

from __future__ import annotations

from fastapi import Depends, FastAPI

from sstools_agent.http.audit_flush import AuditFlush
from sstools_agent.http.body_limits import BodyLimit
from sstools_agent.http.errors import install_error_handlers, single_values
from sstools_agent.http.refusals import install_refusals
from sstools_agent.rest.deps import API_OBSERVABILITY, ApiDeps, authenticate_caller
from sstools_agent.rest.routes import conversations, environments, files, identity, starters

observability = API_OBSERVABILITY
logger, metrics = observability.logger, observability.metrics


def create_app(deps: ApiDeps) -> FastAPI:
    """The REST ASGI app over its collaborators (`sstools_agent.wiring.api.build_api`).

    Before a route reads a body: a body over its limit is 413 (`BodyLimit`), then the caller is
    authenticated (the user endpoints' `AuthenticatedRoute`), and only then is it parsed."""
    app = FastAPI(
        title="ss-tools agent REST API",
        version="1.0",
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(single_values)],
    )
    install_error_handlers(app)
    install_refusals(app)
    app.state.api = deps
    app.state.authenticator = authenticate_caller
    app.add_middleware(BodyLimit)
    app.middleware("http")(observability.request_log())
    app.include_router(conversations.router)
    app.include_router(environments.router)
    app.include_router(files.router)
    app.include_router(identity.router)
    app.include_router(starters.router)
    app.add_middleware(AuditFlush, sink=deps.audit)
    return app
