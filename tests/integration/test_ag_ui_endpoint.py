"""POST /api/agent/ag-ui through a real uvicorn server: every event parsed with the
`ag-ui-protocol` package's own models, and each run's shape checked as AG-UI 1.0 requires.

The same turns as /api/agent/chat (moto, the sample upstream, a scripted model); what the
upstream received is read from its fault plan's request count.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    Event,
    EventType,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic import TypeAdapter

from local.agent_stack import AgentStack, chat_app
from local.fault_injection import Fault, FaultKind
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.chat.expired_cards import ExpiryTold
from sstools_agent.domain.audit import AuditKind
from sstools_agent.wiring.chat import build_chat
from tests.support.chat_http import confirmation_item, wait_for
from tests.support.chat_server import ChatServer
from tests.support.models import ANSWER, ScriptedChatModel
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
DEPLOY = "задеплой дашборд 10 в staging"
DEPLOYS = ("POST", "/api/dashboards/deploy")
READS = ("GET", "/api/environments/ss-dev/dashboards")


def make_chat(stack: AgentStack, model: ScriptedChatModel | None = None) -> Iterator[ChatServer]:
    audit = MemoryAuditSink()
    app, store, _ = chat_app(stack, model or ScriptedChatModel(), audit)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, stack, store, audit)


@pytest.fixture(scope="module")
def shared_chat(module_stack: AgentStack) -> Iterator[ChatServer]:
    """The module's server answers with a scripted model: these tests are of the protocol."""
    yield from make_chat(module_stack)


@pytest.fixture
def quick_expiry_chat(stack: AgentStack) -> Iterator[ChatServer]:
    stack.settings = stack.settings.model_copy(update={"confirmation_timeout_s": 1})
    yield from make_chat(stack)


@pytest.fixture
def slow_chat(stack: AgentStack) -> Iterator[ChatServer]:
    yield from make_chat(stack, ScriptedChatModel(token_delay_s=0.15))


@dataclass
class Run:
    """One AG-UI run as received: its events, parsed by the package's models."""

    thread_id: str
    run_id: str
    events: list[BaseEvent]

    @property
    def types(self) -> list[EventType]:
        return [event.type for event in self.events]

    def of(self, kind: type[Any]) -> list[Any]:
        return [event for event in self.events if isinstance(event, kind)]

    @property
    def finished(self) -> RunFinishedEvent:
        last = self.events[-1]
        assert isinstance(last, RunFinishedEvent), self.types
        return last

    @property
    def error(self) -> RunErrorEvent:
        last = self.events[-1]
        assert isinstance(last, RunErrorEvent), self.types
        return last

    @property
    def text(self) -> str:
        return "".join(getattr(e, "delta", "") for e in self.events if "TEXT" in e.type.value)

    def custom(self, name: str) -> list[Any]:
        return [e.value for e in self.of(CustomEvent) if e.name == name]


def well_formed(run: Run) -> None:
    """AG-UI's run shape: RUN_STARTED first (this run's ids and protocol version), one terminal
    event last, text messages and tool calls opened before their content and closed once."""
    first = run.events[0]
    assert isinstance(first, RunStartedEvent)
    assert (first.thread_id, first.run_id) == (run.thread_id, run.run_id)
    assert first.protocol_version == PROTOCOL_VERSION
    terminal = [e for e in run.events if e.type in (EventType.RUN_FINISHED, EventType.RUN_ERROR)]
    assert terminal == [run.events[-1]]
    open_text: set[str] = set()
    calls: set[str] = set()
    for event in run.events[1:-1]:
        match event.type:
            case EventType.TEXT_MESSAGE_START:
                assert not open_text
                open_text.add(event.message_id)  # type: ignore[attr-defined]
            case EventType.TEXT_MESSAGE_CONTENT:
                assert event.message_id in open_text  # type: ignore[attr-defined]
                assert event.delta  # type: ignore[attr-defined]
            case EventType.TEXT_MESSAGE_END:
                open_text.remove(event.message_id)  # type: ignore[attr-defined]
            case EventType.TOOL_CALL_START:
                assert not open_text
                calls.add(event.tool_call_id)  # type: ignore[attr-defined]
            case EventType.TOOL_CALL_ARGS | EventType.TOOL_CALL_END:
                assert event.tool_call_id in calls  # type: ignore[attr-defined]
    assert not open_text


async def run_agent(
    chat: ChatServer,
    thread_id: str,
    *,
    message: str | None = None,
    resume: list[dict[str, Any]] | None = None,
    ui_context: dict[str, Any] | None = DASHBOARD_10,
    role: str = "engineer",
    headers: dict[str, str] | None = None,
) -> Run | httpx.Response:
    """One AG-UI run as HttpAgent sends it; the refusal when the server answers no stream."""
    run_id = str(uuid.uuid4())
    messages = [{"id": str(uuid.uuid4()), "role": "user", "content": message}] if message else []
    body: dict[str, Any] = {
        "threadId": thread_id,
        "runId": run_id,
        "protocolVersion": PROTOCOL_VERSION,
        "messages": messages,
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {"uiContext": ui_context} if ui_context else {},
    }
    if resume is not None:
        body["resume"] = resume
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            "POST",
            f"{chat.url}/api/agent/ag-ui",
            json=body,
            headers=headers if headers is not None else chat.headers(role),
        ) as response,
    ):
        if response.status_code != 200:
            await response.aread()
            return response
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [
            EVENTS.validate_json(line.removeprefix("data: "))
            async for line in response.aiter_lines()
            if line.startswith("data: ")
        ]
    run = Run(thread_id, run_id, events)
    well_formed(run)
    return run


async def a_run(chat: ChatServer, thread_id: str, **kwargs: Any) -> Run:
    run = await run_agent(chat, thread_id, **kwargs)
    assert isinstance(run, Run), (run.status_code, run.text)
    return run


def new_thread() -> str:
    return str(uuid.uuid4())


def approve(interrupt_id: str, **payload: Any) -> list[dict[str, Any]]:
    return [
        {
            "interruptId": interrupt_id,
            "status": "resolved",
            "payload": {"approved": True, **payload},
        }
    ]


async def asked(chat: ChatServer, role: str = "engineer", message: str = DEPLOY) -> tuple[str, Any]:
    """A thread whose run ended on an interrupt (a deploy's unless `message` asks for another
    write), and that interrupt."""
    thread = new_thread()
    run = await a_run(chat, thread, message=message, role=role)
    outcome = run.finished.outcome
    assert outcome is not None
    assert outcome.type == "interrupt", (outcome, run.text)
    (interrupt,) = outcome.interrupts
    return thread, interrupt


# --- Runs ---------------------------------------------------------------------------------


async def test_a_read_turn_streams_text_and_a_tool_call_with_its_result(chat: ChatServer):
    thread = new_thread()
    run = await a_run(chat, thread, message="какой статус у этого дашборда?")
    (start,) = run.of(ToolCallStartEvent)
    (result,) = run.of(ToolCallResultEvent)
    assert start.tool_call_name == "search_dashboards"
    assert result.tool_call_id == start.tool_call_id
    assert json.loads(result.content)["total"] == 1
    assert ANSWER in run.text  # the answer after the tool's result
    finished = run.finished
    assert finished.outcome is not None
    assert finished.outcome.type == "success"
    assert (finished.result or {})["conversationId"] == thread
    # The thread is a conversation of the caller's, with the same history as the chat's
    record = await chat.store.get(thread)
    assert record is not None
    assert record.owner == "user.engineer"
    assert [m.role.value for m in await chat.store.messages(thread)] == ["user", "assistant"]


async def test_a_failing_tool_is_a_tool_result_marked_as_an_error(chat: ChatServer):
    chat.stack.upstream.plan.add(*READS, Fault(FaultKind.STATUS, status=503, times=None))
    run = await a_run(chat, new_thread(), message="какой статус у этого дашборда?")
    (result,) = run.of(ToolCallResultEvent)
    assert result.metadata is not None
    assert result.metadata["error"] is True
    assert result.metadata["code"] == "TOOL_FAILURE"
    assert run.finished.outcome is not None


async def test_a_confirmation_ends_the_run_with_an_interrupt(chat: ChatServer):
    thread = new_thread()
    run = await a_run(chat, thread, message=DEPLOY)
    (start,) = run.of(ToolCallStartEvent)
    outcome = run.finished.outcome
    assert outcome is not None
    assert outcome.type == "interrupt"
    (interrupt,) = outcome.interrupts
    assert interrupt.reason == "tool_call"
    assert interrupt.tool_call_id == start.tool_call_id
    assert interrupt.expires_at is not None
    assert interrupt.expires_at.endswith("Z")
    decision = (interrupt.metadata or {})["decision"]
    assert (decision["tool"], decision["environment"], decision["risk"]) == (
        "deploy_dashboard",
        "staging",
        "guarded",
    )
    assert interrupt.message == decision["prompt"]
    assert "editedArgs" in (interrupt.response_schema or {})["properties"]
    # The same plan as the chat stream's card: a standard client can show what will change
    plan = (interrupt.metadata or {})["plan"]
    assert plan["title"].startswith("Деплой дашборда #10 «Отчёт по энергопотреблению»")
    assert plan["title"].endswith("ss-dev → staging")
    assert len(plan["lines"]) == 1
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_resuming_with_approval_runs_the_call_once(chat: ChatServer):
    thread, interrupt = await asked(chat)
    run = await a_run(chat, thread, resume=approve(interrupt.id))
    assert run.custom("ss-tools.confirm_resolved") == [{"result": "confirmed"}]
    assert not run.of(ToolCallStartEvent)  # the call was proposed in the run that asked
    (result,) = run.of(ToolCallResultEvent)
    assert result.tool_call_id == interrupt.tool_call_id
    assert run.finished.outcome is not None
    assert run.finished.outcome.type == "success"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1
    # The same resume again is safe: a RUN_ERROR, and nothing runs twice
    again = await a_run(chat, thread, resume=approve(interrupt.id))
    assert again.error.code == "ALREADY_DECIDED"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 1


@pytest.mark.parametrize(
    "answer",
    [
        {"status": "resolved", "payload": {"approved": False}},
        {"status": "cancelled"},
    ],
)
async def test_a_denial_or_a_cancelled_interrupt_runs_nothing(
    chat: ChatServer, answer: dict[str, Any]
):
    thread, interrupt = await asked(chat)
    run = await a_run(chat, thread, resume=[{"interruptId": interrupt.id, **answer}])
    assert run.custom("ss-tools.confirm_resolved") == [{"result": "denied"}]
    assert "ничего не изменено" in run.text
    assert run.finished.outcome is not None
    assert run.finished.outcome.type == "success"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_an_expired_interrupt_is_a_run_error_and_the_thread_goes_on(
    quick_expiry_chat: ChatServer,
):
    chat = quick_expiry_chat
    thread, interrupt = await asked(chat)
    await asyncio.sleep(1.5)
    run = await a_run(chat, thread, resume=approve(interrupt.id))
    assert run.error.code == "CONFIRMATION_EXPIRED"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    # Cancelling it (as HttpAgent asks for an expired interrupt) settles it: nothing ran
    cancelled = await a_run(
        chat, thread, resume=[{"interruptId": interrupt.id, "status": "cancelled"}]
    )
    assert cancelled.custom("ss-tools.confirm_resolved") == [{"result": "expired"}]
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0
    after = await a_run(chat, thread, message="какой статус у этого дашборда?")
    assert after.finished.outcome is not None
    assert after.finished.outcome.type == "success"


async def test_a_cancel_after_the_expiry_was_told_at_expiry_time_resolves_the_interrupt(
    quick_expiry_chat: ChatServer,
):
    # Given an interrupt whose timer ended and whose expiry the expiry function told
    chat = quick_expiry_chat
    thread, interrupt = await asked(chat)
    await wait_for(lambda: confirmation_item(chat, interrupt.id)["status"] == "expired")
    deps = build_chat(chat.stack.settings)
    assert await deps.expiry_recorder().tell(interrupt.id) == ExpiryTold.TOLD
    # When HttpAgent cancels it, as it does an expired interrupt
    cancelled = await a_run(
        chat, thread, resume=[{"interruptId": interrupt.id, "status": "cancelled"}]
    )
    # Then the run succeeds: the interrupt is resolved as expired, nothing ran
    assert cancelled.custom("ss-tools.confirm_resolved") == [{"result": "expired"}]
    assert cancelled.finished.outcome is not None
    assert cancelled.finished.outcome.type == "success"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_new_input_while_an_interrupt_is_open_is_a_run_error_naming_it(chat: ChatServer):
    thread, interrupt = await asked(chat)
    run = await a_run(chat, thread, message="какой статус у этого дашборда?")
    assert run.error.code == "CONFIRMATION_PENDING"
    assert run.error.metadata is not None
    assert run.error.metadata["interruptId"] == interrupt.id
    # The interrupt still waits: it can be answered
    answered = await a_run(chat, thread, resume=approve(interrupt.id))
    assert answered.custom("ss-tools.confirm_resolved") == [{"result": "confirmed"}]


@pytest.mark.parametrize(
    ("resume", "code"),
    [
        ("empty", None),  # an empty resume is no resume: new input, which is refused
        ("unknown", "NOT_FOUND"),
        ("two", "INVALID_RESUME"),
        ("no-payload", "INVALID_RESUME"),
    ],
)
async def test_a_resume_that_does_not_answer_the_open_interrupt_is_a_run_error(
    chat: ChatServer, resume: str, code: str | None
):
    thread, interrupt = await asked(chat)
    entries = {
        "empty": [],
        "unknown": approve("no-such-interrupt"),
        "two": approve(interrupt.id) + approve("another"),
        "no-payload": [{"interruptId": interrupt.id, "status": "resolved"}],
    }[resume]
    run = await a_run(chat, thread, resume=entries, message=None if entries else "ещё")
    assert run.error.code == (code or "CONFIRMATION_PENDING")
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_approve_with_edits_the_card_covers_runs_the_edited_call(chat: ChatServer):
    # Given a commit's interrupt; its plan is about dashboard 10
    thread, interrupt = await asked(chat, message="закоммить изменения дашборда")
    assert interrupt.metadata["plan"]["title"].startswith("Коммит дашборда #10")
    # When it is approved with another message
    edited = {**interrupt.metadata["input"], "message": "исправлены цвета"}
    run = await a_run(chat, thread, resume=approve(interrupt.id, editedArgs=edited))
    # Then the edited call runs, once
    assert run.custom("ss-tools.confirm_resolved") == [{"result": "confirmed"}]
    (said,) = run.custom("ss-tools.call_edited")
    assert (said["toolCallId"], said["args"]) == (interrupt.tool_call_id, edited)
    assert run.finished.outcome is not None
    assert run.finished.outcome.type == "success"
    assert [c["message"] for c in chat.stack.upstream.state.commits] == ["исправлены цвета"]


async def test_an_edit_to_another_dashboard_ends_the_run_with_its_own_interrupt(
    chat: ChatServer,
):
    thread, interrupt = await asked(chat)
    edited = {**interrupt.metadata["input"], "dashboard_ids": [11]}
    run = await a_run(chat, thread, resume=approve(interrupt.id, editedArgs=edited))
    assert run.custom("ss-tools.confirm_resolved") == [{"result": "superseded"}]
    outcome = run.finished.outcome
    assert outcome is not None
    assert outcome.type == "interrupt"
    (again,) = outcome.interrupts
    assert (again.metadata or {})["plan"]["title"].startswith("Деплой дашборда #11")
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_an_edit_to_prod_ends_the_run_with_a_new_interrupt(chat: ChatServer):
    thread, interrupt = await asked(chat, "admin")
    edited = {**interrupt.metadata["input"], "target_env_id": "prod"}
    run = await a_run(chat, thread, resume=approve(interrupt.id, editedArgs=edited), role="admin")
    assert run.custom("ss-tools.confirm_resolved") == [{"result": "superseded"}]
    outcome = run.finished.outcome
    assert outcome is not None
    assert outcome.type == "interrupt"
    (again,) = outcome.interrupts
    assert again.id != interrupt.id
    assert again.tool_call_id == interrupt.tool_call_id
    assert (again.metadata or {})["decision"]["risk"] == "dangerous"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_an_edit_the_tool_does_not_take_is_a_run_error(chat: ChatServer):
    thread, interrupt = await asked(chat)
    edited = {**interrupt.metadata["input"], "tool": "run_backup"}
    run = await a_run(chat, thread, resume=approve(interrupt.id, editedArgs=edited))
    assert run.error.code == "VALIDATION_ERROR"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_a_permission_denial_is_a_tool_result_and_a_custom_event(chat: ChatServer):
    run = await a_run(chat, new_thread(), message="задеплой дашборд 10 в prod")
    (denial,) = run.custom("ss-tools.permission_denied")
    assert (denial["tool"], denial["requiredRole"]) == ("deploy_dashboard", "admin")
    (result,) = run.of(ToolCallResultEvent)
    assert result.tool_call_id == denial["toolCallId"]
    assert run.finished.outcome is not None
    assert run.finished.outcome.type == "success"
    assert chat.stack.upstream.plan.requests(*DEPLOYS) == 0


async def test_a_cancel_ends_the_run_as_cancelled(slow_chat: ChatServer):
    chat, thread = slow_chat, new_thread()
    running = asyncio.create_task(a_run(chat, thread, message="найди дашборды", ui_context=None))
    deadline = time.monotonic() + 15
    async with httpx.AsyncClient() as client:
        while True:
            assert time.monotonic() < deadline, "the run never started"
            cancel = await client.post(
                f"{chat.url}/api/agent/chat/cancel",
                headers=chat.headers(),
                json={"conversation_id": thread},
            )
            if cancel.status_code == 202:
                break
            await asyncio.sleep(0.1)
    run = await running
    assert run.finished.outcome is not None
    assert run.finished.outcome.type == "cancelled"


# --- Refusals of the request itself: HTTP errors, before any stream -------------------------


async def test_an_invalid_page_context_is_a_422_with_an_audit_record_and_nothing_written(
    chat: ChatServer,
):
    thread = new_thread()
    bad = {**DASHBOARD_10, "objectId": "10; DROP TABLE"}
    response = await run_agent(chat, thread, message="привет", ui_context=bad)
    assert isinstance(response, httpx.Response)
    assert response.status_code == 422
    assert response.json()["code"] == "INVALID_CONTEXT"
    assert [r.kind for r in chat.audit.records] == [AuditKind.CONTEXT_REJECTED]
    assert await chat.store.get(thread) is None


@pytest.mark.parametrize("authorization", ["", "Bearer not-a-jwt"])
async def test_no_valid_token_is_a_401(chat: ChatServer, authorization: str):
    headers = {"Authorization": authorization} if authorization else {}
    response = await run_agent(chat, new_thread(), message="привет", headers=headers)
    assert isinstance(response, httpx.Response)
    assert (response.status_code, response.json()["code"]) == (401, "UNAUTHORIZED")


async def test_another_users_thread_is_a_404(chat: ChatServer):
    thread = new_thread()
    await a_run(chat, thread, message="какой статус у этого дашборда?")
    response = await run_agent(chat, thread, message="а мне?", role="admin")
    assert isinstance(response, httpx.Response)
    assert (response.status_code, response.json()["code"]) == (404, "NOT_FOUND")


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"messages": []}, "no new user message"),
        ({"tools": [{"name": "x", "description": "y"}]}, "frontend tools"),
        ({"threadId": "../etc"}, "conversation_id"),
        ({"forwardedProps": "junk"}, "forwardedProps"),
    ],
)
async def test_a_run_the_chat_cannot_take_is_a_422(
    chat: ChatServer, change: dict[str, Any], needle: str
):
    body = {
        "threadId": new_thread(),
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "привет"}],
    } | change
    async with httpx.AsyncClient() as client:
        response = await client.post(
            f"{chat.url}/api/agent/ag-ui", json=body, headers=chat.headers()
        )
    assert response.status_code == 422
    assert response.json()["code"] == "VALIDATION_ERROR"
    assert needle in response.json()["detail"]
