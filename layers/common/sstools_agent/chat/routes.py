"""The chat function's routes: POST /api/agent/chat (and /api/agent/ag-ui, AG-UI 1.0) answer
with a server-sent event stream; POST /api/agent/chat/cancel stops a run another tab holds.

Routes and encoding only: the caller authenticated (`AuthenticatedRoute`, before any body is
read), the request handed to `ChatService`, its events encoded in the route's protocol and paced
for the socket. Refusals are domain exceptions, answered by the shared refusal table; what
AG-UI's interrupt rules refuse is a run that ends in RUN_ERROR (`AgUiEncoder.refused`).
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Annotated, Final

from ag_ui.core import RunAgentInput
from aws_lambda_powertools.metrics import MetricUnit
from fastapi import APIRouter, Depends, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse

from sstools_agent.chat.ag_ui import INTERRUPT_REFUSALS, AgUiEncoder, chat_request_of, rules_for
from sstools_agent.chat.encoding import ChatMessageSSE, StreamEncoder
from sstools_agent.chat.gradio_turns import GradioTurns
from sstools_agent.chat.pacing import Frame, paced
from sstools_agent.chat.request import CancelBody, ChatRequestBody
from sstools_agent.chat.service import ChatService, OpenedTurn
from sstools_agent.chat.turn_audit import tried_log_only
from sstools_agent.domain.attempt_limits import AuthFailureSampler
from sstools_agent.domain.chat_events import EventType
from sstools_agent.domain.identity import Principal, UserTokenVerifier
from sstools_agent.domain.ports import AuditSink, GradioQueue
from sstools_agent.http.auth import (
    AuthenticatedRoute,
    authenticate_request,
    authenticated_principal,
    request_id_from,
)
from sstools_agent.http.client_address import ClientAddresses
from sstools_agent.http.observability import MetricName, Observability

CHAT_OBSERVABILITY: Final = Observability.of("chat")
"""The chat function's logger, metrics and tracer: its routes and app share them."""
logger, metrics = CHAT_OBSERVABILITY.logger, CHAT_OBSERVABILITY.metrics

STREAM_HEADERS: Final = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
CHAT_PATH: Final = "/api/agent/chat"
AG_UI_PATH: Final = "/api/agent/ag-ui"
CANCEL_PATH: Final = "/api/agent/chat/cancel"


class ChatRouteDeps:
    """What the chat routes share (as `rest.deps.ApiDeps` is the REST routes'): the chat
    service (and the Gradio endpoint's turns over it), the sign-in check, the stream's pacing.
    Kept on `app.state.chat`."""

    def __init__(
        self,
        service: ChatService,
        *,
        verifier: UserTokenVerifier,
        audit: AuditSink,
        auth_failures: AuthFailureSampler,
        client_addresses: ClientAddresses,
        coalesce_s: float,
        heartbeat_s: float,
        gradio_queue: GradioQueue,
    ) -> None:
        self.service, self.verifier, self.audit = service, verifier, audit
        self.gradio = GradioTurns(service, gradio_queue)
        self.auth_failures, self.client_addresses = auth_failures, client_addresses
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
            self._paced(opened, encoder),
            media_type=encoder.media_type,
            headers=STREAM_HEADERS | {"X-Conversation-Id": opened.conversation_id},
        )

    async def _paced(self, opened: OpenedTurn, encoder: StreamEncoder) -> AsyncIterator[bytes]:
        """The turn (or the replay) in the response's encoding, paced for the socket: tokens
        coalesced, silences broken by heartbeats (`chat.pacing`)."""
        frames = self._frames(opened, encoder)
        async for chunk in paced(frames, window_s=self.coalesce_s, heartbeat_s=self.heartbeat_s):
            yield chunk

    async def _frames(self, opened: OpenedTurn, encoder: StreamEncoder) -> AsyncGenerator[Frame]:
        """Each event's bytes, and whether they are urgent (all but tokens); metrics at the end
        (a replay's tool calls were counted when they ran, so it counts none)."""
        started = time.perf_counter()
        first_event_s: float | None = None
        tool_calls = tool_failures = log_only = 0
        try:
            async with CHAT_OBSERVABILITY.subsegment("stream_turn"):
                async for event_id, event in self.service.events(opened):
                    if first_event_s is None:
                        first_event_s = time.perf_counter() - started
                    tool_calls += event.type is EventType.TOOL_START
                    tool_failures += event.type is EventType.TOOL_ERROR
                    log_only += tried_log_only(event)
                    if data := encoder.frame(event_id, event):
                        yield data, event.type is not EventType.STREAM_TOKEN
                if (tail := encoder.close()) is not None:
                    yield tail, True
        finally:
            if first_event_s is not None:
                metrics.add_metric(
                    MetricName.TIME_TO_FIRST_EVENT, MetricUnit.Milliseconds, first_event_s * 1000
                )
            if not opened.replays:
                metrics.add_metric(MetricName.TOOL_CALLS, MetricUnit.Count, tool_calls)
                metrics.add_metric(MetricName.TOOL_FAILURES, MetricUnit.Count, tool_failures)
                metrics.add_metric(MetricName.LOG_ONLY_DECISIONS, MetricUnit.Count, log_only)
            metrics.flush_metrics()


def chat_route_deps(request: Request) -> ChatRouteDeps:
    """The app's chat route collaborators."""
    deps: ChatRouteDeps = request.app.state.chat
    return deps


ChatRoute = Annotated[ChatRouteDeps, Depends(chat_route_deps)]
Caller = Annotated[Principal, Depends(authenticated_principal)]
RequestIdHeader = Annotated[str | None, Header(alias="X-Request-ID")]

router = APIRouter(route_class=AuthenticatedRoute)


@router.post(CHAT_PATH, response_model=None)
async def chat(
    body: ChatRequestBody,
    principal: Caller,
    deps: ChatRoute,
    last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
    x_request_id: RequestIdHeader = None,
) -> StreamingResponse:
    """POST /api/agent/chat: refusals as plain HTTP errors, then the event stream."""
    request_id = request_id_from(x_request_id)
    async with CHAT_OBSERVABILITY.subsegment("prepare_turn"):
        opened = await deps.service.open(
            principal, body, request_id=request_id, last_event_id=last_event_id
        )
    return deps.respond(opened, ChatMessageSSE(), request_id, body.action)


@router.post(AG_UI_PATH, response_model=None)
async def ag_ui(
    body: RunAgentInput,
    principal: Caller,
    deps: ChatRoute,
    x_request_id: RequestIdHeader = None,
) -> StreamingResponse:
    """POST /api/agent/ag-ui: the same turn as AG-UI 1.0 events (docs/ag-ui.md). Refusals of
    the request itself are plain HTTP errors as on /api/agent/chat; what AG-UI's interrupt
    rules refuse is a run that ends in RUN_ERROR."""
    request_id = request_id_from(x_request_id)
    encoder = AgUiEncoder(body.thread_id, body.run_id)
    action = None
    try:
        chat_body = chat_request_of(body)
        action = chat_body.action
        opened = await deps.service.open(
            principal, chat_body, request_id=request_id, rules=rules_for(body)
        )
    except INTERRUPT_REFUSALS as refused:
        whole_run = encoder.refused(refused, action)
        return StreamingResponse(
            iter([whole_run]), media_type=encoder.media_type, headers=STREAM_HEADERS
        )
    return deps.respond(opened, encoder.for_turn(opened.turn), request_id, action)


@router.post(CANCEL_PATH, response_model=None)
async def cancel(body: CancelBody, principal: Caller, deps: ChatRoute) -> JSONResponse:
    """POST /api/agent/chat/cancel: stops a run that another connection (tab) holds."""
    await deps.service.cancel(principal, body.conversation_id)
    return JSONResponse(
        {"conversation_id": body.conversation_id, "cancel_requested": True}, status_code=202
    )
