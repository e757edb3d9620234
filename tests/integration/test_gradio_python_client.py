"""The Gradio endpoint through the official Python client (`gradio_client`, pinned in
requirements-dev): the twin of test_gradio_client.py's node tests, against one chat server (the
split between two processes is the node tests'). `download_files=False`: outputs are the JSON
values as sent, and the client fetches nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from local.agent_stack import AgentStack, chat_app
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.chat.gradio import GRADIO_PATH
from sstools_agent.chat.turns import STOPPED_TEXT
from tests.support.chat_server import ChatServer
from tests.support.models import ANSWER, ScriptedChatModel
from tests.support.seed import DASHBOARD_10

gradio_client = pytest.importorskip("gradio_client", reason="requirements-dev pins gradio_client")

STATUS = {"text": "какой статус у этого дашборда?", "files": []}
DEPLOY = {"text": "задеплой дашборд 10 в staging", "files": []}
LONG = {"text": "расскажи подробно", "files": []}
LONG_ANSWER = " ".join(f"слово{i}" for i in range(200))
"""What the model says to a message its script does not name: long enough to cancel."""
DEPLOYS = ("POST", "/api/dashboards/deploy")


@pytest.fixture(scope="module")
def shared_chat(module_stack: AgentStack) -> Iterator[ChatServer]:
    """One chat server whose model pauses between words, so a cancel lands while it speaks."""
    audit = MemoryAuditSink()
    model = ScriptedChatModel(token_delay_s=0.02, answer=LONG_ANSWER)
    app, store, _ = chat_app(module_stack, model, audit)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, module_stack, store, audit)


def client_of(chat: ChatServer, role: str = "engineer") -> Any:
    return gradio_client.Client(
        chat.url + GRADIO_PATH,
        headers=chat.headers(role),
        download_files=False,
        verbose=False,
    )


def run(client: Any, message: Any = None, **inputs: Any) -> list[dict[str, Any]]:
    """One submit read to its end: the ChatMessages it delivered."""
    job = client.submit(
        message,
        inputs.get("conversation_id"),
        inputs.get("action"),
        inputs.get("ui_context"),
        api_name="/chat",
    )
    return list(job)


def of_type(said: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [m["metadata"] for m in said if m["metadata"].get("type") == kind]


def test_a_read_turn_streams_its_events(chat: ChatServer):
    said = run(client_of(chat), STATUS, ui_context=DASHBOARD_10)
    assert of_type(said, "tool_start")
    assert of_type(said, "tool_end")
    assert "".join(m["token"] for m in of_type(said, "stream_token")).startswith(ANSWER)
    assert said[-1]["metadata"]["type"] == "stream_end"


def test_a_card_confirmed_by_its_id_runs_the_deploy_once(chat: ChatServer):
    client = client_of(chat)
    asked = run(client, DEPLOY, ui_context=DASHBOARD_10)
    [card] = of_type(asked, "confirm_required")
    conversation = asked[-1]["metadata"]["conversation_id"]
    answer = run(client, conversation_id=conversation, action=f"confirm:{card['confirmation_id']}")
    [resolved] = of_type(answer, "confirm_resolved")
    assert resolved["result"] == "confirmed"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1


def test_a_cancelled_job_stops_the_run(chat: ChatServer):
    # Given a conversation, and a long answer streaming in it
    client = client_of(chat)
    first = run(client, STATUS, ui_context=DASHBOARD_10)
    conversation = first[-1]["metadata"]["conversation_id"]
    job = client.submit(LONG, conversation, None, None, api_name="/chat")
    # When the job is cancelled after three tokens
    tokens = 0
    for message in job:
        tokens += message["metadata"].get("type") == "stream_token"
        if tokens == 3:
            assert job.cancel()
            break
    # Then the run stopped where it was: its replay ends with the stop, and says so
    replay = run(client, conversation_id=conversation, action="resume")
    said = [m["content"] for m in replay if not m["metadata"].get("type")]
    assert STOPPED_TEXT in said, replay
    assert replay[-1]["metadata"]["type"] == "stream_end"
