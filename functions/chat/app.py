"""The chat function: POST /api/agent/chat answers with a server-sent event stream.

Thin by design: authenticate, validate, hand the turn to `ChatTurns`, encode events as SSE.
On Lambda this ASGI app runs under the Lambda Web Adapter (response streaming); locally and in the
tests under uvicorn, which is exactly what the adapter proxies to.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit
from fastapi import FastAPI, Header, Request
from fastapi.responses import JSONResponse, StreamingResponse

from sstools_agent.adapters.audit import AuditSink
from sstools_agent.adapters.confirmations import (
    ConfirmationDecided,
    ConfirmationExpired,
    ConfirmationForbidden,
    ConfirmationNotFound,
)
from sstools_agent.adapters.conversation_store import (
    ConversationArchived,
    ConversationBusy,
    ConversationNotFound,
)
from sstools_agent.adapters.service_tokens import ServiceTokenSource, ServiceTokenUnavailable
from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent_factories import chat_turns
from sstools_agent.chat.encoding import ChatMessageSSE, StreamEncoder
from sstools_agent.chat.request import CancelBody, ChatRequestBody
from sstools_agent.chat.turns import ChatTurns, ConfirmationNotPermitted, PreparedTurn
from sstools_agent.domain.attempt_limits import AuthFailureSampler
from sstools_agent.domain.audit import AuditKind, AuditRecord
from sstools_agent.domain.chat_events import EventType
from sstools_agent.domain.confirmations import NoPendingConfirmationError
from sstools_agent.domain.conversations import parse_event_id
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.identity import AuthenticationError, Principal, UserTokenVerifier
from sstools_agent.domain.ui_context import UIContext, UIContextRejection, parse_ui_context
from sstools_agent.factories import audit_sink, service_token, user_verifier
from sstools_agent.settings import Settings
from sstools_agent.web import (
    authenticate,
    client_source,
    error,
    install_error_handlers,
    request_id_from,
)

BLOCKING_THREADS = 32
logger = Logger(service="sstools-agent-chat")
metrics = Metrics(namespace="SsToolsAgent", service="chat")
tracer = Tracer(service="sstools-agent-chat")  # X-Ray on Lambda; a no-op elsewhere

# Refusals before the stream: exception type -> (HTTP status, code, what the user reads).
REFUSALS: dict[type[Exception], tuple[int, ErrorCode, str]] = {
    ConversationBusy: (
        409,
        ErrorCode.CONVERSATION_BUSY,
        "The conversation is answering in another tab; wait or cancel it.",
    ),
    ConversationNotFound: (404, ErrorCode.NOT_FOUND, "No such conversation."),
    ConversationArchived: (
        409,
        ErrorCode.CONVERSATION_ARCHIVED,
        "The conversation was deleted; start a new one.",
    ),
    NoPendingConfirmationError: (
        404,
        ErrorCode.NO_PENDING_CONFIRMATION,
        "Nothing waits for confirmation in this conversation.",
    ),
    ConfirmationNotFound: (404, ErrorCode.NOT_FOUND, "No such confirmation."),
    ConfirmationForbidden: (403, ErrorCode.FORBIDDEN, "This confirmation is another user's."),
    ConfirmationDecided: (409, ErrorCode.ALREADY_DECIDED, "This confirmation was answered."),
    ConfirmationNotPermitted: (403, ErrorCode.FORBIDDEN, "Недостаточно прав; ничего не выполнено."),
    ConfirmationExpired: (
        409,
        ErrorCode.CONFIRMATION_EXPIRED,
        "This confirmation expired; nothing was run. Ask again for a new card.",
    ),
}


class ChatEndpoints:
    """The chat function's two endpoints over their collaborators."""

    def __init__(
        self,
        *,
        turns: ChatTurns,
        verifier: UserTokenVerifier,
        service_token: ServiceTokenSource,
        environments: EnvironmentRegistry,
        audit: AuditSink,
        auth_failures: AuthFailureSampler | None = None,
    ) -> None:
        self.turns = turns
        self.verifier = verifier
        self.service_token = service_token
        self.environments = environments
        self.audit = audit
        self.auth_failures = auth_failures or AuthFailureSampler()

    def authenticate(self, request: Request, authorization: str, request_id: str) -> Principal:
        """The caller's principal; AuthenticationError (and a sampled audit record) otherwise."""
        return authenticate(
            self.verifier,
            self.audit,
            authorization,
            request_id,
            source=client_source(request),
            failures=self.auth_failures,
        )

    def ui_context(
        self, body: ChatRequestBody, principal: Principal
    ) -> UIContext | UIContextRejection | None:
        """The validated page context; a rejection is audited."""
        if body.ui_context is None:
            return None
        parsed = parse_ui_context(body.ui_context, self.environments)
        if isinstance(parsed, UIContextRejection):
            self.audit.emit(
                AuditRecord(
                    AuditKind.CONTEXT_REJECTED,
                    principal.subject,
                    "refused",
                    body.conversation_id,
                    parsed.to_error_body(),
                )
            )
        return parsed

    async def chat(
        self,
        request: Request,
        body: ChatRequestBody,
        authorization: Annotated[str, Header()] = "",
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID")] = None,
        x_request_id: Annotated[str | None, Header()] = None,
    ) -> StreamingResponse | JSONResponse:
        """POST /api/agent/chat: refusals as plain HTTP errors, then the event stream."""
        request_id = request_id_from(x_request_id)
        try:
            principal = self.authenticate(request, authorization, request_id)
        except AuthenticationError as failure:
            return error(401, ErrorCode.UNAUTHORIZED, failure.detail)
        ui_context = self.ui_context(body, principal)
        if isinstance(ui_context, UIContextRejection):
            return JSONResponse(ui_context.to_error_body(), status_code=422)
        try:  # before the lock is taken: a refusal here leaves nothing behind
            service_token = await self.service_token()
        except ServiceTokenUnavailable as failure:
            logger.error("no service token", extra={"reason": str(failure)})
            return error(
                503,
                ErrorCode.TOOL_FAILURE,
                "Ассистент не может подключиться к ss-tools, попробуйте позже.",
            )
        resume_from = last_event_id or body.last_event_id
        resume_after = 0
        if body.action == "resume" and resume_from and body.conversation_id:
            resume_after = parse_event_id(resume_from, body.conversation_id) or 0
        try:
            async with tracer.provider.in_subsegment_async("prepare_turn"):
                turn = await self.turns.prepare(
                    owner=principal.subject,
                    conversation_id=body.conversation_id,
                    action=body.action,
                    message=body.message,
                    confirmation_id=body.confirmation_id,
                    ui_context=ui_context.to_payload() if ui_context else None,
                    resume_after=resume_after,
                    role=principal.role,
                )
        except tuple(REFUSALS) as refusal:
            status, code, detail = REFUSALS[type(refusal)]
            return error(status, code, getattr(refusal, "detail", detail))
        # A confirm or deny resumes in the card's own page context, whatever this request says.
        context = AgentRunContext(principal, ui_context, service_token, request_id)
        logger.info(
            "turn",
            extra={
                "request_id": request_id,
                "user": principal.subject,
                "conversation_id": turn.conversation.conversation_id,
                "action": body.action,
            },
        )
        encoder = ChatMessageSSE()
        return StreamingResponse(
            self.encode(turn, context, encoder),
            media_type=encoder.media_type,
            headers={
                "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
                "X-Conversation-Id": turn.conversation.conversation_id,
            },
        )

    async def encode(
        self, turn: PreparedTurn, context: AgentRunContext, encoder: StreamEncoder
    ) -> AsyncIterator[bytes]:
        """The turn (or the replay) in the response's encoding; metrics when it ends."""
        started = time.perf_counter()
        first_event_s: float | None = None
        tool_calls = 0
        if turn.action == "resume":
            events = self.turns.follow(turn)
        else:
            events = self.turns.stream(turn, context)
        try:
            async with tracer.provider.in_subsegment_async("stream_turn"):
                async for event_id, event in events:
                    if first_event_s is None:
                        first_event_s = time.perf_counter() - started
                    tool_calls += event.type is EventType.TOOL_START
                    yield encoder.frame(event_id, event)
                if (tail := encoder.close()) is not None:
                    yield tail
        finally:
            if first_event_s is not None:
                metrics.add_metric(
                    "TimeToFirstEvent", MetricUnit.Milliseconds, first_event_s * 1000
                )
            metrics.add_metric("ToolCalls", MetricUnit.Count, tool_calls)
            metrics.flush_metrics()

    async def cancel(
        self,
        request: Request,
        body: CancelBody,
        authorization: Annotated[str, Header()] = "",
        x_request_id: Annotated[str | None, Header()] = None,
    ) -> JSONResponse:
        """POST /api/agent/chat/cancel: stops a run that another connection (tab) holds."""
        try:
            principal = self.authenticate(request, authorization, request_id_from(x_request_id))
        except AuthenticationError as failure:
            return error(401, ErrorCode.UNAUTHORIZED, failure.detail)
        if not await self.turns.store.request_cancel(body.conversation_id, principal.subject):
            return error(409, ErrorCode.NOT_RUNNING, "No answer is running in this conversation.")
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


def create_app(**collaborators: Any) -> FastAPI:
    """The chat ASGI app over ChatEndpoints' collaborators (factories build them)."""
    endpoints = ChatEndpoints(**collaborators)
    app = FastAPI(
        title="ss-tools agent chat", version="1.0", docs_url=None, redoc_url=None, lifespan=lifespan
    )
    install_error_handlers(app)
    app.post("/api/agent/chat", response_model=None)(endpoints.chat)
    app.post("/api/agent/chat/cancel", response_model=None)(endpoints.cancel)
    return app


def app_from_settings(settings: Settings) -> FastAPI:
    """The app wired as configured (Lambda's main.py and the local stack use this)."""
    return create_app(
        turns=chat_turns(),
        verifier=user_verifier(),
        service_token=service_token(),
        environments=settings.environments(),
        audit=audit_sink(),
        auth_failures=settings.auth_failure_sampler(),
    )
