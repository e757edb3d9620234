"""A caller that goes away mid-body: the body limit answers for the app, so an app's own
middleware (the REST API's request log) never sees an app that returned without answering."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from fastapi import FastAPI, Request, Response
from starlette.types import Message, Scope

from sstools_agent.http.body_limits import BodyLimit

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
