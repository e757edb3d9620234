"""Conversations: create, list, history, append, a kept tool output, soft delete, the gate."""

from __future__ import annotations

from typing import Annotated, Any, Final

from aws_lambda_powertools.metrics import MetricUnit
from fastapi import APIRouter, Header, Query, Response

from sstools_agent.domain.conversations import MessageRole, iso_time
from sstools_agent.domain.private_responses import PRIVATE_RESPONSE_HEADERS
from sstools_agent.http.auth import AuthenticatedRoute
from sstools_agent.http.observability import MetricName
from sstools_agent.rest.deps import (
    API_OBSERVABILITY,
    Api,
    Caller,
    ConversationId,
    ToolCallId,
    responses,
)
from sstools_agent.rest.schemas import (
    IDEMPOTENCY_KEY_PATTERN,
    AppendMessageBody,
    ArchivedConversation,
    ConversationActivity,
    ConversationCreated,
    ConversationPage,
    ConversationsQuery,
    ConversationSummary,
    CreateConversationBody,
    HistoryMessage,
    HistoryPage,
    HistoryQuery,
    SubjectView,
)

CONVERSATIONS: Final = "/api/assistant/conversations"
CONVERSATION: Final = "/api/assistant/conversations/{id}"
REPLAYED: Final[dict[int | str, dict[str, Any]]] = {
    200: {"description": "A retry: the message appended first", "model": HistoryMessage}
}
TOOL_OUTPUT_ANSWER: Final[dict[int | str, dict[str, Any]]] = {
    200: {
        "description": "The tool's full output: its JSON exactly as kept",
        "content": {"application/json": {"schema": {}}},
    }
}

router = APIRouter(route_class=AuthenticatedRoute)


@router.post(CONVERSATIONS, status_code=201, responses=responses(401))
async def create(body: CreateConversationBody, caller: Caller, api: Api) -> ConversationCreated:
    """Starts an empty conversation (the chat's first message may also create one)."""
    conversation = await api.conversations.create(
        caller.subject, body.title, api.checked_context(body.ui_context, caller)
    )
    API_OBSERVABILITY.metrics.add_metric(MetricName.CONVERSATIONS_CREATED, MetricUnit.Count, 1)
    return ConversationCreated(
        id=conversation.conversation_id,
        title=conversation.title,
        created_at=conversation.created_at,
        subject=SubjectView.of(conversation),
    )


@router.get(CONVERSATIONS, name="list", responses=responses(401))
async def list_conversations(
    caller: Caller, api: Api, query: Annotated[ConversationsQuery, Query()]
) -> ConversationPage:
    """The caller's conversations, most recently active first."""
    search = query.q.strip() if query.q else ""
    listing = await api.conversations.list(
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


@router.get("/api/assistant/history", responses=responses(401, 404))
async def history(
    caller: Caller, api: Api, query: Annotated[HistoryQuery, Query()], response: Response
) -> HistoryPage:
    """A conversation's messages in order, with tool calls and confirmations (kept by no
    cache: `PRIVATE_RESPONSE_HEADERS`)."""
    conversation, listing = await api.conversations.history(
        caller.subject, query.conversation_id, limit=query.limit, cursor=query.cursor
    )
    response.headers.update(PRIVATE_RESPONSE_HEADERS)
    return HistoryPage(
        conversation_id=conversation.conversation_id,
        is_archived=conversation.is_archived,
        items=[HistoryMessage.of(m) for m in listing.items],
        next_cursor=listing.next_cursor,
    )


@router.post(
    f"{CONVERSATION}/messages", status_code=201, responses=responses(401, 404, 409) | REPLAYED
)
async def append(
    *,
    id: ConversationId,
    body: AppendMessageBody,
    caller: Caller,
    api: Api,
    response: Response,
    idempotency_key: Annotated[str, Header(pattern=IDEMPOTENCY_KEY_PATTERN)],
) -> HistoryMessage:
    """Appends a message after the stream ended; a retry with the same key adds nothing."""
    message, replayed = await api.conversations.append(
        caller.subject,
        id,
        role=MessageRole(body.role),
        content=body.content,
        ui_context=api.checked_context(body.ui_context, caller, id),
        idempotency_key=idempotency_key,
    )
    response.status_code = 200 if replayed else 201
    response.headers["Idempotent-Replayed"] = str(replayed).lower()
    return HistoryMessage.of(message)


@router.get(
    f"{CONVERSATION}/tool-outputs/{{tool_call_id}}",
    responses=responses(401, 404, 503) | TOOL_OUTPUT_ANSWER,
)
async def tool_output(
    id: ConversationId,
    tool_call_id: ToolCallId,
    caller: Caller,
    api: Api,
) -> Response:
    """A tool output too large for the history, whole (the history holds its summary and this
    path as `output_ref`), kept by no cache; another user's is 404 like a missing one."""
    kept = await api.conversations.tool_output(caller.subject, id, tool_call_id)
    return Response(kept, media_type="application/json", headers=PRIVATE_RESPONSE_HEADERS)


@router.delete(CONVERSATION, responses=responses(401, 404))
async def archive(
    id: ConversationId,
    caller: Caller,
    api: Api,
) -> ArchivedConversation:
    """Soft delete: the conversation is kept, hidden from the list and closed to new turns."""
    conversation = await api.conversations.archive(caller.subject, id)
    return ArchivedConversation(id=conversation.conversation_id, is_archived=True)


@router.get("/api/agent/conversations/{id}/active", responses=responses(401, 404))
async def activity(
    id: ConversationId,
    caller: Caller,
    api: Api,
) -> ConversationActivity:
    """The multi-tab gate: is an answer running in this conversation, since when."""
    conversation, running = await api.conversations.activity(caller.subject, id)
    return ConversationActivity(
        conversation_id=conversation.conversation_id,
        active=running,
        since=iso_time(conversation.locked_at) if running and conversation.locked_at else None,
        lease_until=(
            iso_time(conversation.locked_until) if running and conversation.locked_until else None
        ),
        pending_confirmation_id=conversation.pending_confirmation_id,
    )
