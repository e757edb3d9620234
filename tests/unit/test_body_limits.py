"""The body limits: the largest legitimate body of each endpoint fits its limit, and a caller
that goes away mid-body is answered for the app, so an app's own middleware (the REST API's
request log) never sees an app that returned without answering."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping

import pytest
from fastapi import FastAPI, Request, Response
from pydantic import BaseModel
from starlette.types import Message, Scope

from sstools_agent.chat.request import MAX_MESSAGE_CHARS
from sstools_agent.domain.tools.datasets import ExecuteSqlArgs
from sstools_agent.http.body_limits import (
    CHAT_MAX_BODY_BYTES,
    DEFAULT_MAX_BODY_BYTES,
    BodyLimit,
)
from sstools_agent.rest.schemas import MAX_APPENDED_CHARS

pytestmark = pytest.mark.anyio


def logged_app() -> FastAPI:
    app = FastAPI()

    @app.post("/things")
    async def things(request: Request) -> dict[str, int]:
        return {"bytes": len(await request.body())}

    async def request_log(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        return await call_next(request)  # raises "No response returned." when none is sent

    app.middleware("http")(request_log)
    app.add_middleware(BodyLimit)
    return app


async def test_a_caller_gone_mid_body_gets_an_answer_no_one_reads_and_nothing_raises():
    # Given a request that declares 1000 bytes, sends 10 and goes away
    messages: list[Message] = [
        {"type": "http.request", "body": b"0123456789", "more_body": True},
        {"type": "http.disconnect"},
    ]
    sent: list[Message] = []

    async def receive() -> Message:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/things",
        "raw_path": b"/things",
        "query_string": b"",
        "root_path": "",
        "headers": [(b"content-length", b"1000"), (b"content-type", b"application/json")],
        "client": ("127.0.0.1", 5000),
        "server": ("127.0.0.1", 80),
    }
    # When the app handles it
    await logged_app()(scope, receive, send)
    # Then it answered (400, the connection closed) and the app behind never ran
    assert sent[0]["type"] == "http.response.start"
    assert sent[0]["status"] == 400


def max_length(model: type[BaseModel], field: str) -> int:
    metadata = model.model_fields[field].metadata
    lengths = [each.max_length for each in metadata if hasattr(each, "max_length")]
    return int(lengths[0])


def encoded_size(body: Mapping[str, object]) -> int:
    """The body's bytes when every character is sent as the longest JSON escape (an emoji:
    two `\\uXXXX`, 12 bytes), as a client may send it."""
    return len(json.dumps(body).encode())


PAGE_CONTEXT = {"contextVersion": 1, "envId": "ss-dev", "route": "/x" * 2000}
EMOJI = "😀"


def test_the_largest_legitimate_bodies_fit_their_endpoints_limits():
    # A chat message at its limit, every character an emoji, with a page context
    chat = {"message": EMOJI * MAX_MESSAGE_CHARS, "ui_context": PAGE_CONTEXT}
    assert encoded_size(chat) <= CHAT_MAX_BODY_BYTES
    # An approve-with-edits whose SQL is at the tool's limit, every character Cyrillic
    sql = "ы" * max_length(ExecuteSqlArgs, "sql")
    edited = {"database_id": 1, "sql": sql}
    edit = {"action": "edit", "edited_args": edited, "ui_context": PAGE_CONTEXT}
    assert encoded_size(edit) <= CHAT_MAX_BODY_BYTES
    # An appended message at the REST API's limit, every character an emoji
    appended = {"role": "user", "content": EMOJI * MAX_APPENDED_CHARS, "ui_context": PAGE_CONTEXT}
    assert encoded_size(appended) <= DEFAULT_MAX_BODY_BYTES
