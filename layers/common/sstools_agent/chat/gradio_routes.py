"""The chat function's Gradio routes (docs/gradio.md): what `@gradio/client` calls under
`Client.connect(origin + "/api/agent/gradio")`. Every one authenticates its caller first (the
client sends `Client.connect`'s headers on each request); the turns are `GradioTurns`'."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.responses import JSONResponse, StreamingResponse

from sstools_agent.chat.gradio import (
    CANCEL_PATH,
    CONFIG_PATH,
    DATA_PATH,
    HEARTBEAT,
    INFO_PATH,
    JOIN_PATH,
    RESET_PATH,
    SESSION_HASH_PATTERN,
    GradioCancelBody,
    JoinBody,
    api_info,
    gradio_config,
)
from sstools_agent.chat.gradio_turns import GradioTurns
from sstools_agent.chat.pacing import paced
from sstools_agent.chat.routes import STREAM_HEADERS, Caller, ChatRoute, RequestIdHeader
from sstools_agent.http.auth import AuthenticatedRoute, request_id_from


def gradio_turns(deps: ChatRoute) -> GradioTurns:
    """The app's Gradio turns."""
    return deps.gradio


Turns = Annotated[GradioTurns, Depends(gradio_turns)]

router = APIRouter(route_class=AuthenticatedRoute)


@router.get(CONFIG_PATH)
async def config(principal: Caller) -> dict[str, Any]:
    """GET …/config: the app's one dependency and its components (static)."""
    return gradio_config()


@router.get(INFO_PATH)
async def info(principal: Caller) -> dict[str, Any]:
    """GET …/gradio_api/info: the `/chat` endpoint's named inputs (static)."""
    return api_info()


@router.post(JOIN_PATH)
async def join(
    body: JoinBody, principal: Caller, turns: Turns, x_request_id: RequestIdHeader = None
) -> dict[str, str]:
    """POST …/queue/join: the inputs checked (422 `{code, detail}`), the turn queued."""
    event_id = await turns.join(principal, body, request_id_from(x_request_id))
    return {"event_id": event_id}


@router.get(DATA_PATH, response_model=None)
async def data(
    principal: Caller,
    deps: ChatRoute,
    turns: Turns,
    session_hash: Annotated[str, Query(pattern=SESSION_HASH_PATTERN)],
) -> StreamingResponse:
    """GET …/queue/data: the session's stream (the caller's turns only), paced as the chat's,
    with Gradio's heartbeat message in silences."""
    frames = turns.stream(principal, session_hash)
    return StreamingResponse(
        paced(frames, window_s=deps.coalesce_s, heartbeat_s=deps.heartbeat_s, heartbeat=HEARTBEAT),
        media_type="text/event-stream",
        headers=STREAM_HEADERS,
    )


@router.post(CANCEL_PATH)
async def cancel(body: GradioCancelBody, principal: Caller, turns: Turns) -> dict[str, bool]:
    """POST …/cancel: stops the caller's turn wherever it runs (404 if it has none such)."""
    await turns.cancel(principal, body.session_hash, body.event_id)
    return {"success": True}


@router.post(RESET_PATH)
async def reset(principal: Caller) -> JSONResponse:
    """POST …/reset, which the client sends after a cancel: nothing is kept per session in a
    process, so there is nothing to reset."""
    return JSONResponse({"success": True})
