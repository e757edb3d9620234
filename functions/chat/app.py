"""The chat function: POST /api/agent/chat (and /api/agent/ag-ui, AG-UI 1.0) answer with a
server-sent event stream.

Routes and encoding only: authenticate, hand the request to `ChatService`, encode its events as
SSE. Refusals are domain exceptions, answered by the shared refusal table. On Lambda this ASGI
app runs under the Lambda Web Adapter (response streaming); locally and in the tests under
uvicorn, which is exactly what the adapter proxies to.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Final

from ag_ui.core import RunAgentInput
from aws_lambda_powertools.metrics import MetricUnit
from fastapi import Depends, FastAPI, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import SecretStr

from sstools_agent.adapters.service_tokens import ServiceTokenSource
from sstools_agent.chat.ag_ui import (
    INTERRUPT_REFUSALS,
    AgUiEncoder,
    chat_request_of,
    rules_for,
    waiting_card,
)
from sstools_agent.chat.encoding import ChatMessageSSE, StreamEncoder
from sstools_agent.chat.pacing import Frame, paced
from sstools_agent.chat.request import CancelBody, ChatRequestBody
from sstools_agent.chat.service import ChatService, OpenedTurn
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.attempt_limits import AuthFailureSampler
from sstools_agent.domain.chat_events import EventType
from sstools_agent.domain.confirmations import CardWaits, ConfirmationExpired
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.identity import Principal, UserTokenVerifier
from sstools_agent.domain.ports import AuditSink
from sstools_agent.http.audit_flush import AuditFlush
from sstools_agent.http.auth import (
    AuthenticatedRoute,
    authenticate_request,
    authenticated_principal,
    request_id_from,
)
from sstools_agent.http.body_limits import AG_UI_MAX_BODY_BYTES, CHAT_MAX_BODY_BYTES, BodyLimit
from sstools_agent.http.client_address import ClientAddresses
from sstools_agent.http.errors import install_error_handlers
from sstools_agent.http.observability import LambdaTraceHeader, Observability
from sstools_agent.http.origin import OriginCheck
from sstools_agent.http.refusals import install_refusals, refusal_of
from sstools_agent.settings import DEFAULT_STREAM_COALESCE_S, DEFAULT_STREAM_HEARTBEAT_S
from sstools_agent.wiring.chat import ChatDeps

BLOCKING_THREADS = 32
observability = Observability.of("chat")
logger, metrics = observability.logger, observability.metrics

STREAM_HEADERS: Final = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
CHAT_PATH: Final = "/api/agent/chat"
AG_UI_PATH: Final = "/api/agent/ag-ui"
CANCEL_PATH: Final = "/api/agent/chat/cancel"
Caller = Annotated[Principal, Depends(authenticated_principal)]
RequestIdHeader = Annotated[str | None, Header(alias="X-Request-ID")]


class ChatEndpoints:
    """The chat function's two endpoints over the chat service."""

    def __init__(
        self,
        *,
        turns: ChatTurns,
        verifier: UserTokenVerifier,
        service_token: ServiceTokenSource,
        environments: EnvironmentRegistry,
        audit: AuditSink,
        auth_failures: AuthFailureSampler | None = None,
        client_addresses: ClientAddresses | None = None,
        coalesce_s: float = DEFAULT_STREAM_COALESCE_S,
        heartbeat_s: float = DEFAULT_STREAM_HEARTBEAT_S,
    ) -> None:
        self.service = ChatService(
            turns, environments=environments, audit=audit, service_token=service_token
        )
        self.verifier, self.audit = verifier, audit
        self.auth_failures = auth_failures or AuthFailureSampler()
        self.client_addresses = client_addresses or ClientAddresses()
        self.coalesce_s, self.heartbeat_s = coalesce_s, heartbeat_s

    def principal(self, request: Request) -> Principal:
        """The caller; AuthenticationError (401, a sampled audit record) otherwise. Every route
        runs it before its body is read (`AuthenticatedRoute`)."""
        return authenticate_request(
            request,
            self.verifier,
            self.audit,
            source=self.client_addresses.of(request),
            failures=self.auth_failures,
        )

    async def chat(
        self,
        body: ChatRequestBody,
        principal: Caller,
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
        x_request_id: RequestIdHeader = None,
    ) -> StreamingResponse:
        """POST /api/agent/chat: refusals as plain HTTP errors, then the event stream."""
        request_id = request_id_from(x_request_id)
        async with observability.subsegment("prepare_turn"):
            opened = await self.service.open(
                principal, body, request_id=request_id, last_event_id=last_event_id
            )
        return self.respond(opened, ChatMessageSSE(), request_id, body.action)

    def respond(
        self, opened: OpenedTurn, encoder: StreamEncoder, request_id: str, action: str | None
    ) -> StreamingResponse:
        """The turn streamed in `encoder`'s protocol (logged once, as it opens)."""
        logger.info(
            "turn",
            extra={
                "request_id": request_id,
                "user": opened.context.principal.subject,
                "conversation_id": opened.conversation_id,
                "action": action,
                "protocol": type(encoder).__name__,
            },
        )
        return StreamingResponse(
            self.encode(opened, encoder),
            media_type=encoder.media_type,
            headers=STREAM_HEADERS | {"X-Conversation-Id": opened.conversation_id},
        )

    async def encode(self, opened: OpenedTurn, encoder: StreamEncoder) -> AsyncIterator[bytes]:
        """The turn (or the replay) in the response's encoding, paced for the socket: tokens
        coalesced, silences broken by heartbeats (`chat.pacing`)."""
        frames = self.frames(opened, encoder)
        async for chunk in paced(frames, window_s=self.coalesce_s, heartbeat_s=self.heartbeat_s):
            yield chunk

    async def frames(self, opened: OpenedTurn, encoder: StreamEncoder) -> AsyncGenerator[Frame]:
        """Each event's bytes, and whether they are urgent (all but tokens); metrics at the end."""
        started = time.perf_counter()
        first_event_s: float | None = None
        tool_calls = 0
        try:
            async with observability.subsegment("stream_turn"):
                async for event_id, event in self.service.events(opened):
                    if first_event_s is None:
                        first_event_s = time.perf_counter() - started
                    tool_calls += event.type is EventType.TOOL_START
                    if data := encoder.frame(event_id, event):
                        yield data, event.type is not EventType.STREAM_TOKEN
                if (tail := encoder.close()) is not None:
                    yield tail, True
        finally:
            if first_event_s is not None:
                metrics.add_metric(
                    "TimeToFirstEvent", MetricUnit.Milliseconds, first_event_s * 1000
                )
            metrics.add_metric("ToolCalls", MetricUnit.Count, tool_calls)
            metrics.flush_metrics()

    async def ag_ui(
        self,
        body: RunAgentInput,
        principal: Caller,
        x_request_id: RequestIdHeader = None,
    ) -> StreamingResponse:
        """POST /api/agent/ag-ui: the same turn as AG-UI 1.0 events (docs/ag-ui.md). Refusals of
        the request itself are plain HTTP errors as on /api/agent/chat; what AG-UI's interrupt
        rules refuse is a run that ends in RUN_ERROR."""
        request_id = request_id_from(x_request_id)
        encoder = AgUiEncoder(body.thread_id, body.run_id)
        chat_body = None
        try:
            chat_body = chat_request_of(body)
            opened = await self.service.open(
                principal, chat_body, request_id=request_id, rules=rules_for(body)
            )
        except INTERRUPT_REFUSALS as refused:
            if (
                isinstance(refused, ConfirmationExpired)
                and chat_body
                and chat_body.action == "deny"
            ):
                # its expiry was told when the timer ended: a «no» to it has its answer
                return StreamingResponse(
                    iter([encoder.expiry_told()]),
                    media_type=encoder.media_type,
                    headers=STREAM_HEADERS,
                )
            _, code, detail = refusal_of(refused)
            metadata = (
                waiting_card(refused.confirmation) if isinstance(refused, CardWaits) else None
            )
            return StreamingResponse(
                iter([encoder.refusal(code, detail, metadata)]),
                media_type=encoder.media_type,
                headers=STREAM_HEADERS,
            )
        return self.respond(opened, encoder.for_turn(opened.turn), request_id, chat_body.action)

    async def cancel(self, body: CancelBody, principal: Caller) -> JSONResponse:
        """POST /api/agent/chat/cancel: stops a run that another connection (tab) holds."""
        await self.service.cancel(principal, body.conversation_id)
        return JSONResponse(
            {"conversation_id": body.conversation_id, "cancel_requested": True}, status_code=202
        )


@contextlib.asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """More threads for blocking AWS calls than asyncio's default (cores + 4): the checkpointer
    and the store run boto3 in threads, and under uvicorn many conversations share a process."""
    asyncio.get_running_loop().set_default_executor(
        concurrent.futures.ThreadPoolExecutor(max_workers=BLOCKING_THREADS)
    )
    yield


def create_app(deps: ChatDeps, *, origin_verify_secret: SecretStr | None = None) -> FastAPI:
    """The chat ASGI app over its collaborators (`sstools_agent.wiring.chat.build_chat`).

    With `origin_verify_secret` (in AWS: ORIGIN_VERIFY_SECRET) every request must carry it in
    `X-Origin-Verify`, which only CloudFront adds: 403 `FORBIDDEN` otherwise. Then, before a
    route reads a body: a body over its limit is 413 (`BodyLimit`), the caller is authenticated
    (`AuthenticatedRoute`), and only then is the body parsed."""
    endpoints = ChatEndpoints(
        turns=deps.turns,
        verifier=deps.verifier,
        service_token=deps.service_token,
        environments=deps.environments,
        audit=deps.audit,
        auth_failures=deps.auth_failures,
        client_addresses=ClientAddresses.trusting(origin_verify_secret),
        coalesce_s=deps.stream_coalesce_s,
        heartbeat_s=deps.stream_heartbeat_s,
    )
    app = FastAPI(
        title="ss-tools agent chat", version="1.0", docs_url=None, redoc_url=None, lifespan=lifespan
    )
    install_error_handlers(app)
    install_refusals(app)
    app.state.authenticator = endpoints.principal
    app.router.route_class = AuthenticatedRoute
    app.post(CHAT_PATH, response_model=None)(endpoints.chat)
    app.post(CANCEL_PATH, response_model=None)(endpoints.cancel)
    app.post(AG_UI_PATH, response_model=None)(endpoints.ag_ui)
    app.add_middleware(
        BodyLimit, limits={CHAT_PATH: CHAT_MAX_BODY_BYTES, AG_UI_PATH: AG_UI_MAX_BODY_BYTES}
    )
    if origin_verify_secret is not None:
        app.add_middleware(OriginCheck, secret=origin_verify_secret.get_secret_value())
    app.add_middleware(AuditFlush, sink=deps.audit)
    if observability.tracer is not None:
        app.add_middleware(LambdaTraceHeader)
    return app
