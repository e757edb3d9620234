"""The chat function: the routes of `sstools_agent.chat.routes` (a turn's SSE stream, AG-UI 1.0,
cancel) and of `sstools_agent.chat.gradio_routes` (the Gradio client's protocol), with the shared
error handlers and refusal table. On Lambda it runs under the Lambda Web Adapter (response
streaming); locally and in the tests under uvicorn, as the adapter proxies."""

from __future__ import annotations

from fastapi import FastAPI
from pydantic import SecretStr

from sstools_agent.chat import approval_routes, gradio_routes, routes
from sstools_agent.http.audit_flush import AuditFlush
from sstools_agent.http.blocking_threads import more_blocking_threads
from sstools_agent.http.body_limits import AG_UI_MAX_BODY_BYTES, CHAT_MAX_BODY_BYTES, BodyLimit
from sstools_agent.http.errors import install_error_handlers
from sstools_agent.http.observability import LambdaTraceHeader
from sstools_agent.http.origin import OriginCheck
from sstools_agent.http.refusals import install_refusals
from sstools_agent.http.snapstart import HOOK_PATHS, snapstart_router
from sstools_agent.wiring.chat import ChatDeps


def create_app(deps: ChatDeps, *, origin_verify_secret: SecretStr | None = None) -> FastAPI:
    """The chat ASGI app over its collaborators (`sstools_agent.wiring.chat.build_chat`).

    With `origin_verify_secret` (in AWS: ORIGIN_VERIFY_SECRET) every request must carry it in
    `X-Origin-Verify`, which only CloudFront adds: 403 `FORBIDDEN` otherwise. Then, before a
    route reads a body: a body over its limit is 413 (`BodyLimit`), the caller is authenticated
    (`AuthenticatedRoute`), and only then is the body parsed. SnapStart's two hook routes
    (`http.snapstart`) need neither the header nor a user."""
    route_deps = deps.route_deps(origin_verify_secret)
    app = FastAPI(
        title="ss-tools agent chat",
        version="1.0",
        docs_url=None,
        redoc_url=None,
        lifespan=more_blocking_threads,
    )
    install_error_handlers(app)
    install_refusals(app)
    app.state.chat, app.state.authenticator = route_deps, route_deps.principal
    app.state.approvals = deps.approvals
    app.include_router(routes.router)
    app.include_router(gradio_routes.router)
    app.include_router(approval_routes.router)
    # The state machine's invocation with a second approver's decision (no user, no CloudFront)
    app.include_router(approval_routes.pass_through)
    # SnapStart's hooks: no user, no CloudFront (the adapter calls them from inside)
    app.include_router(snapstart_router(deps.prepare_snapshot, deps.renew_after_restore))
    limits = {routes.CHAT_PATH: CHAT_MAX_BODY_BYTES, routes.AG_UI_PATH: AG_UI_MAX_BODY_BYTES}
    app.add_middleware(BodyLimit, limits=limits)
    if origin_verify_secret is not None:
        app.add_middleware(
            OriginCheck,
            secret=origin_verify_secret.get_secret_value(),
            exempt=HOOK_PATHS | {approval_routes.SECOND_DECISION_PATH},
        )
    app.add_middleware(AuditFlush, sink=deps.audit)
    if routes.CHAT_OBSERVABILITY.tracer is not None:
        app.add_middleware(LambdaTraceHeader)
    return app
