"""The REST API function: conversations, history, the multi-tab gate, service tokens, JWKS.

Thin by design: authenticate, validate, call one use case of `sstools_agent.rest`, encode. On
Lambda this FastAPI app runs under Mangum behind API Gateway (main.py); locally and in the tests
under uvicorn, beside the chat function on one origin.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Final

from aws_lambda_powertools import Logger, Metrics
from aws_lambda_powertools.metrics import MetricUnit
from fastapi import Depends, FastAPI, Header, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from sstools_agent.domain.attempt_limits import AuthFailureSampler, FailureLimiter
from sstools_agent.domain.conversations import (
    CONVERSATION_ID_PATTERN,
    ConversationArchived,
    ConversationBusy,
    ConversationNotFound,
    IdempotencyKeyReused,
    MessageRole,
    iso_time,
)
from sstools_agent.domain.cursors import InvalidCursor
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.identity import AuthenticationError, Principal, UserTokenVerifier
from sstools_agent.domain.ports import AuditSink, BlobStoreError
from sstools_agent.domain.ui_context import UIContextRejection, parse_ui_context
from sstools_agent.factories import (
    audit_sink_from,
    client_credentials_from,
    conversations_api_from,
    secrets_reader_from,
    service_token_issuer_from,
    user_verifier_from,
)
from sstools_agent.rest.schemas import (
    IDEMPOTENCY_KEY_PATTERN,
    TOOL_CALL_ID_PATTERN,
    AppendMessageBody,
    ArchivedConversation,
    ConversationActivity,
    ConversationCreated,
    ConversationPage,
    ConversationsQuery,
    ConversationSummary,
    CreateConversationBody,
    ErrorBody,
    HistoryMessage,
    HistoryPage,
    HistoryQuery,
    Jwks,
    ServiceTokenRequest,
    ServiceTokenResponse,
)
from sstools_agent.rest.service import (
    ConversationsApi,
    InvalidCredentials,
    ServiceTokens,
    ToolOutputNotFound,
)
from sstools_agent.settings import Settings
from sstools_agent.web import (
    TooManyAttempts,
    audit_auth_failure,
    authenticate,
    client_source,
    error,
    install_error_handlers,
    request_id_from,
    single_query_values,
    too_many_attempts,
)

logger = Logger(service="sstools-agent-api")
metrics = Metrics(namespace="SsToolsAgent", service="api")

JWKS_MAX_AGE_S: Final = 300

# Refusals of the use cases: exception type -> (HTTP status, code, what the user reads).
REFUSALS: dict[type[Exception], tuple[int, ErrorCode, str]] = {
    ConversationNotFound: (404, ErrorCode.NOT_FOUND, "No such conversation."),
    ConversationBusy: (
        409,
        ErrorCode.CONVERSATION_BUSY,
        "An answer is streaming in this conversation; append after it ends.",
    ),
    ConversationArchived: (
        409,
        ErrorCode.CONVERSATION_ARCHIVED,
        "The conversation was deleted; start a new one.",
    ),
    IdempotencyKeyReused: (
        409,
        ErrorCode.IDEMPOTENCY_KEY_REUSED,
        "This Idempotency-Key was used for a different message.",
    ),
    InvalidCursor: (400, ErrorCode.INVALID_CURSOR, "The cursor is not valid for this listing."),
    InvalidCredentials: (401, ErrorCode.UNAUTHORIZED, "Unknown client credentials."),
    ToolOutputNotFound: (404, ErrorCode.NOT_FOUND, "No kept output for this tool call."),
    BlobStoreError: (
        503,
        ErrorCode.STORAGE_FAILURE,
        "The tool output cannot be read now; try again later.",
    ),
}


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI: the error statuses an operation answers, all with the `{code, detail}` body
    (400: a bad cursor; 422: a request that does not validate, a body that is not JSON
    included; 500: an internal failure)."""
    answers: dict[int | str, dict[str, Any]] = {
        status: {"model": ErrorBody} for status in (*statuses, 400, 422, 500)
    }
    return answers


ConversationId = Annotated[str, Path(pattern=CONVERSATION_ID_PATTERN)]
ToolCallId = Annotated[str, Path(pattern=TOOL_CALL_ID_PATTERN)]
TOOL_OUTPUT_ANSWER: Final[dict[int | str, dict[str, Any]]] = {
    200: {
        "description": "The tool's full output: its JSON exactly as kept",
        "content": {"application/json": {"schema": {}}},
    }
}
bearer = HTTPBearer(auto_error=False, description="The user's JWT")


def current_principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
    x_request_id: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal:
    """The caller, from the user JWT (dependency of every user endpoint)."""
    endpoints: ApiEndpoints = request.app.state.endpoints
    authorization = f"Bearer {credentials.credentials}" if credentials else ""
    return authenticate(
        endpoints.verifier,
        endpoints.audit,
        authorization,
        request_id_from(x_request_id),
        source=client_source(request),
        failures=endpoints.auth_failures,
    )


Caller = Annotated[Principal, Depends(current_principal)]


class ApiEndpoints:
    """The REST endpoints over their collaborators."""

    def __init__(
        self,
        *,
        conversations: ConversationsApi,
        service_tokens: ServiceTokens,
        jwks: Callable[[], dict[str, Any]],
        verifier: UserTokenVerifier,
        environments: EnvironmentRegistry,
        audit: AuditSink,
        auth_failures: AuthFailureSampler | None = None,
        service_token_failures: FailureLimiter | None = None,
    ) -> None:
        self.auth_failures = auth_failures or AuthFailureSampler()
        self.service_token_failures = service_token_failures or FailureLimiter()
        self.conversations = conversations
        self.service_tokens = service_tokens
        self.jwks_document = jwks
        self.verifier = verifier
        self.environments = environments
        self.audit = audit

    def checked_context(self, ui_context: dict[str, Any] | None) -> dict[str, Any] | None:
        """A page context validated as the chat validates it; ContextRejected (422) otherwise."""
        if ui_context is None:
            return None
        parsed = parse_ui_context(ui_context, self.environments)
        if isinstance(parsed, UIContextRejection):
            raise ContextRejected(parsed)
        return parsed.to_payload()

    async def create(self, body: CreateConversationBody, caller: Caller) -> ConversationCreated:
        """Starts an empty conversation (the chat's first message may also create one)."""
        conversation = await self.conversations.create(
            caller.subject, body.title, self.checked_context(body.ui_context)
        )
        metrics.add_metric("ConversationsCreated", MetricUnit.Count, 1)
        return ConversationCreated(
            id=conversation.conversation_id,
            title=conversation.title,
            created_at=conversation.created_at,
        )

    async def list(
        self, caller: Caller, query: Annotated[ConversationsQuery, Query()]
    ) -> ConversationPage:
        """The caller's conversations, most recently active first."""
        search = query.q.strip() if query.q else ""
        listing = await self.conversations.list(
            caller.subject,
            limit=query.limit,
            cursor=query.cursor,
            search=search or None,
            include_archived=query.include_archived,
        )
        return ConversationPage(
            items=[ConversationSummary.of(c) for c in listing.items],
            next_cursor=listing.next_cursor,
        )

    async def history(self, caller: Caller, query: Annotated[HistoryQuery, Query()]) -> HistoryPage:
        """A conversation's messages in order, with tool calls and confirmations."""
        conversation, listing = await self.conversations.history(
            caller.subject, query.conversation_id, limit=query.limit, cursor=query.cursor
        )
        return HistoryPage(
            conversation_id=conversation.conversation_id,
            is_archived=conversation.is_archived,
            items=[HistoryMessage.of(m) for m in listing.items],
            next_cursor=listing.next_cursor,
        )

    async def append(
        self,
        id: ConversationId,
        body: AppendMessageBody,
        caller: Caller,
        response: Response,
        idempotency_key: Annotated[str, Header(pattern=IDEMPOTENCY_KEY_PATTERN)],
    ) -> HistoryMessage:
        """Appends a message after the stream ended; a retry with the same key adds nothing."""
        message, replayed = await self.conversations.append(
            caller.subject,
            id,
            role=MessageRole(body.role),
            content=body.content,
            ui_context=self.checked_context(body.ui_context),
            idempotency_key=idempotency_key,
        )
        response.status_code = 200 if replayed else 201
        response.headers["Idempotent-Replayed"] = str(replayed).lower()
        return HistoryMessage.of(message)

    async def tool_output(
        self, id: ConversationId, tool_call_id: ToolCallId, caller: Caller
    ) -> Response:
        """A tool output too large for the history, whole (the history holds its summary and
        this path as `output_ref`); another user's is 404 like a missing one."""
        kept = await self.conversations.tool_output(caller.subject, id, tool_call_id)
        return Response(kept, media_type="application/json")

    async def archive(
        self,
        id: ConversationId,
        caller: Caller,
    ) -> ArchivedConversation:
        """Soft delete: the conversation is kept, hidden from the list and closed to new turns."""
        conversation = await self.conversations.archive(caller.subject, id)
        return ArchivedConversation(id=conversation.conversation_id, is_archived=True)

    async def activity(
        self,
        id: ConversationId,
        caller: Caller,
    ) -> ConversationActivity:
        """The multi-tab gate: is an answer running in this conversation, since when."""
        conversation, running = await self.conversations.activity(caller.subject, id)
        return ConversationActivity(
            conversation_id=conversation.conversation_id,
            active=running,
            since=iso_time(conversation.locked_at) if running and conversation.locked_at else None,
            lease_until=(
                iso_time(conversation.locked_until)
                if running and conversation.locked_until
                else None
            ),
            pending_confirmation_id=conversation.pending_confirmation_id,
        )

    def service_token(
        self,
        request: Request,
        body: ServiceTokenRequest,
        x_request_id: Annotated[str | None, Header(include_in_schema=False)] = None,
    ) -> ServiceTokenResponse:
        """A short-lived service JWT for the agent service holding the client credentials.

        A source that failed `SERVICE_TOKEN_MAX_FAILURES` times in the window is refused (429)
        until the window ends, right credentials or not, so guessing gains nothing; each
        failure is audited (sampled like every anonymous failure)."""
        source = client_source(request)
        retry_after = self.service_token_failures.retry_after(source)
        if retry_after is not None:
            audit_auth_failure(
                self.audit,
                self.auth_failures,
                source,
                {"reason": "too many failed attempts", "endpoint": "service-token"},
                outcome="rate_limited",
            )
            raise TooManyAttempts(retry_after)
        try:
            minted = self.service_tokens.issue(body.client_id, body.client_secret)
        except InvalidCredentials:
            self.service_token_failures.failed(source)
            audit_auth_failure(
                self.audit,
                self.auth_failures,
                source,
                {
                    "reason": "unknown client credentials",
                    "endpoint": "service-token",
                    "client_id": body.client_id,
                    "request_id": request_id_from(x_request_id),
                },
            )
            raise
        logger.info("service token issued", extra={"client_id": body.client_id})
        return ServiceTokenResponse(
            access_token=minted.token,
            expires_in=self.service_tokens.ttl_s,
            expires_at=minted.expires_at,
        )

    def jwks(self, response: Response) -> Jwks:
        """The public keys that verify service tokens."""
        response.headers["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE_S}"
        return Jwks(keys=self.jwks_document()["keys"])


class ContextRejected(Exception):
    """A page context that failed validation (422 with its reasons, like the chat's)."""

    def __init__(self, rejection: UIContextRejection) -> None:
        super().__init__(rejection.to_error_body()["detail"])
        self.rejection = rejection


def refusal_handler(
    status: int, code: ErrorCode, detail: str
) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handle(request: Request, exc: Exception) -> JSONResponse:
        return error(status, code, detail)

    return handle


async def unauthenticated(request: Request, exc: Exception) -> JSONResponse:
    detail = exc.detail if isinstance(exc, AuthenticationError) else "unauthorized"
    return error(401, ErrorCode.UNAUTHORIZED, detail)


async def context_rejected(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ContextRejected)  # noqa: S101 (registered for this type only)
    return JSONResponse(exc.rejection.to_error_body(), status_code=422)


async def log_request(
    request: Request, call_next: Callable[[Request], Awaitable[Response]]
) -> Response:
    """One log line a request (with the Lambda's correlation id) and its latency as a metric."""
    started = time.perf_counter()
    response = await call_next(request)
    elapsed_ms = (time.perf_counter() - started) * 1000
    logger.info(
        "request",
        extra={
            "method": request.method,
            "path": request.url.path,
            "status": response.status_code,
            "elapsed_ms": round(elapsed_ms, 1),
        },
    )
    metrics.add_metric("RequestLatency", MetricUnit.Milliseconds, elapsed_ms)
    return response


def create_app(**collaborators: Any) -> FastAPI:
    """The REST ASGI app over ApiEndpoints' collaborators (factories build them)."""
    endpoints = ApiEndpoints(**collaborators)
    app = FastAPI(
        title="ss-tools agent REST API",
        version="1.0",
        docs_url=None,
        redoc_url=None,
        dependencies=[Depends(single_query_values)],
    )
    install_error_handlers(app)
    app.add_exception_handler(AuthenticationError, unauthenticated)
    app.add_exception_handler(ContextRejected, context_rejected)
    app.add_exception_handler(TooManyAttempts, too_many_attempts)
    for exception, (status, code, detail) in REFUSALS.items():
        app.add_exception_handler(exception, refusal_handler(status, code, detail))
    app.state.endpoints = endpoints
    app.middleware("http")(log_request)
    conversations, conversation = (
        "/api/assistant/conversations",
        "/api/assistant/conversations/{id}",
    )
    replayed = {
        200: {"description": "A retry: the message appended first", "model": HistoryMessage}
    }
    for method, path, handler, answers, status in (
        ("POST", conversations, endpoints.create, responses(401), 201),
        ("GET", conversations, endpoints.list, responses(401), 200),
        ("GET", "/api/assistant/history", endpoints.history, responses(401, 404), 200),
        (
            "POST",
            f"{conversation}/messages",
            endpoints.append,
            responses(401, 404, 409) | replayed,
            201,
        ),
        ("DELETE", conversation, endpoints.archive, responses(401, 404), 200),
        (
            "GET",
            f"{conversation}/tool-outputs/{{tool_call_id}}",
            endpoints.tool_output,
            responses(401, 404, 503) | TOOL_OUTPUT_ANSWER,
            200,
        ),
        (
            "GET",
            "/api/agent/conversations/{id}/active",
            endpoints.activity,
            responses(401, 404),
            200,
        ),
        ("POST", "/api/auth/service-token", endpoints.service_token, responses(401, 429), 200),
    ):
        app.add_api_route(path, handler, methods=[method], status_code=status, responses=answers)
    app.add_api_route("/.well-known/jwks.json", endpoints.jwks, methods=["GET"])
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
