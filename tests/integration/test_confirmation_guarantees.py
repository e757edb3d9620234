"""What runs after a confirm is what the card showed; what the user is told is the truth.

Through the chat function over HTTP, with the real state machine in moto and the sample upstream:
the card's call is bound (a confirm cannot move it to another environment), a confirmed call that
was interrupted is reported as «статус неизвестен», never as «отменено, ничего не изменено», and a
cancel stops a run that waits on a tool.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from typing import Any, Final

import httpx
import pytest
from langchain_core.messages import ToolMessage

from local.agent_stack import AgentStack, chat_app, user_issuer
from local.fault_injection import Fault, FaultKind
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.chat.turns import STOPPED_TEXT
from sstools_agent.domain.audit import AuditKind
from sstools_agent.domain.catalog_types import EnvironmentSource, Operation, ToolSpec
from sstools_agent.domain.confirmations import ConfirmationStatus
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.ui_context import ObjectType
from sstools_agent.wiring.adapters import confirmation_store_from
from tests.support.chat_http import confirmation_item, in_flight, sse_events, wait_for
from tests.support.chat_server import ChatServer, post_stream
from tests.support.models import ScriptedModel
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.anyio

PAGE_ENV, OTHER_ENV = "ss-dev", "prod"
PAGES: dict[ObjectType | None, dict[str, Any]] = {
    ObjectType.DASHBOARD: DASHBOARD_10,
    ObjectType.DATASET: {
        "contextVersion": 1,
        "objectType": "dataset",
        "objectId": "15",
        "objectName": "energy_daily",
        "envId": PAGE_ENV,
        "route": "/datasets/15",
    },
    None: {
        "contextVersion": 1,
        "objectType": None,
        "objectId": None,
        "envId": PAGE_ENV,
        "route": "/",
    },
}
PAGE_ENV_WRITES = [
    spec
    for spec in CATALOG
    if spec.environment_source is EnvironmentSource.UI_CONTEXT
    and (spec.operation is Operation.WRITE or spec.sql_argument is not None)
]


WRITE_SQL = "DELETE FROM energy WHERE day < '2020-01-01'"


def arguments(spec: ToolSpec) -> dict[str, Any]:
    """What a model would send: the declaration's example call, an SQL tool's statement a write."""
    args = dict(spec.example_args)
    if spec.sql_argument:
        args[spec.sql_argument] = WRITE_SQL
    return args


def page_for(spec: ToolSpec) -> dict[str, Any]:
    for object_type in (ObjectType.DASHBOARD, ObjectType.DATASET):
        if object_type in spec.affinity:
            return PAGES[object_type]
    return PAGES[None]


def upstream_path(spec: ToolSpec, env_id: str) -> str:
    assert spec.path is not None
    return spec.path.format(env_id=env_id, **arguments(spec))


class ScriptedChat(ChatServer):
    model: ScriptedModel


def scripted_chat(stack: AgentStack, model: ScriptedModel) -> Iterator[ScriptedChat]:
    """The chat function under uvicorn over `stack`, answered by `model`."""
    audit = MemoryAuditSink()
    app, store, _ = chat_app(stack, model, audit)
    with serve(app, lifespan="on") as url:
        server = ScriptedChat(url, stack, store, audit)
        server.model = model
        yield server


@pytest.fixture
def chat(stack: AgentStack) -> Iterator[ScriptedChat]:
    yield from scripted_chat(stack, ScriptedModel(calls=[]))


CANCEL_BOUND_S: Final = 30.0
"""How long a cancelled stream may take to end: half the patient tool's timeout, so a stream
that ends within it was stopped by the cancel. It is a bound, not a speed target (the stop
takes about 0.4 s on an idle machine; CI's shared machines once took 6.7 s)."""


@pytest.fixture
def patient_chat(stack: AgentStack) -> Iterator[ScriptedChat]:
    """A chat whose tools wait on the upstream for a minute: a call in flight ends by a cancel
    or a dropped connection (the upstream's hang is longer still), never by its own deadline."""
    yield from scripted_chat(stack.patient(), ScriptedModel(calls=[]))


async def card_for(
    chat: ScriptedChat, tool: str, args: dict[str, Any], page: dict[str, Any], role: str = "admin"
) -> tuple[str, dict[str, Any]]:
    """Given the model calls `tool` on `page`, the card the user is shown."""
    chat.model.calls = [{"name": tool, "args": args, "id": f"call-{tool}"}]
    status, events, refused = await post_stream(
        chat, {"message": f"сделай {tool}", "ui_context": page}, role=role
    )
    assert status == 200, refused
    card = next(e for e in events if e.type == "confirm_required").data["metadata"]
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    return events[-1].data["metadata"]["conversation_id"], card


def confirm_body(
    conversation: str,
    card: dict[str, Any],
    ui_context: dict[str, Any] | None,
    action: str = "confirm",
) -> dict[str, Any]:
    body = {
        "action": action,
        "conversation_id": conversation,
        "confirmation_id": card["confirmation_id"],
    }
    if ui_context is not None:
        body["ui_context"] = ui_context
    return body


@pytest.mark.parametrize("confirm_context", ["same env", "other env", "no context"])
@pytest.mark.parametrize("spec", PAGE_ENV_WRITES, ids=lambda spec: spec.name)
async def test_a_confirm_runs_the_call_in_the_environment_the_card_showed(
    chat: ScriptedChat, spec: ToolSpec, confirm_context: str
):
    # Given an admin on a ss-dev page is shown a card for a write in ss-dev
    page = page_for(spec)
    conversation, card = await card_for(chat, spec.name, arguments(spec), page)
    assert card["decision"]["environment"] == PAGE_ENV
    # When the confirm arrives with the same page, another environment, or no page at all
    sent = {
        "same env": page,
        "other env": {**page, "envId": OTHER_ENV},
        "no context": None,
    }[confirm_context]
    status, events, refused = await post_stream(
        chat, confirm_body(conversation, card, sent), role="admin"
    )
    # Then the call runs once, in the card's environment, never in the one the confirm named
    assert status == 200, refused
    assert events[0].data["metadata"]["result"] == "confirmed"
    assert received(chat, spec, PAGE_ENV) == 1
    assert received(chat, spec, OTHER_ENV) == 0


def received(chat: ChatServer, spec: ToolSpec, env_id: str) -> int:
    """How many of `spec`'s calls the upstream received in `env_id` (of a SQL tool, its writes:
    a card's plan counts rows with reads to the same path)."""
    if spec.sql_argument is not None:
        return len(chat.stack.upstream.sql_writes(env_id))
    return chat.stack.upstream.plan.requests(spec.method, upstream_path(spec, env_id))


async def test_a_role_lost_after_the_card_refuses_the_confirm_and_keeps_the_card(
    chat: ScriptedChat,
):
    # Given an engineer was shown a card for a ss-dev branch
    spec = CATALOG.get("create_branch")
    assert spec is not None
    conversation, card = await card_for(
        chat, spec.name, arguments(spec), DASHBOARD_10, role="engineer"
    )
    # When the same user confirms with a token that now says analyst
    chat.tokens["engineer"] = chat_token(chat, "user.engineer", "analyst")
    status, _, refused = await post_stream(chat, confirm_body(conversation, card, DASHBOARD_10))
    # Then nothing runs, the user is told which role is needed, and the card still waits
    assert (status, refused and refused["code"]) == (403, "FORBIDDEN")
    assert refused is not None
    assert "«инженер»" in refused["detail"]
    assert chat.stack.upstream.plan.requests("POST", upstream_path(spec, PAGE_ENV)) == 0
    assert confirmation_item(chat, card["confirmation_id"])["status"] == "pending"


def chat_token(chat: ChatServer, subject: str, role: str) -> str:
    return user_issuer(chat.stack.settings).issue(subject, 600, {"roles": [role]}).token


# --- After a drop: the truth about a confirmed call ------------------------------------------

DEPLOY_CALL = {
    "name": "deploy_dashboard",
    "args": {"dashboard_ids": ["10"], "source_env_id": "ss-dev", "target_env_id": "staging"},
    "id": "call-deploy",
}


async def follow_up(chat: ScriptedChat, conversation: str, message: str) -> list[Any]:
    """The user writes again in the conversation (the model answers without a tool)."""
    chat.model.calls = []
    status, events, refused = await post_stream(
        chat, {"message": message, "conversation_id": conversation, "ui_context": DASHBOARD_10}
    )
    assert status == 200, refused
    return events


def deploys(chat: ChatServer) -> int:
    return chat.stack.upstream.plan.requests("POST", "/api/dashboards/deploy")


async def deploy_card(chat: ScriptedChat) -> tuple[str, dict[str, Any]]:
    chat.model.calls = [DEPLOY_CALL]
    status, events, _ = await post_stream(
        chat, {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
    )
    assert status == 200
    card = next(e for e in events if e.type == "confirm_required").data["metadata"]
    await wait_for(lambda: "task_token" in confirmation_item(chat, card["confirmation_id"]))
    return events[-1].data["metadata"]["conversation_id"], card


async def confirm_and_drop_in_flight(
    chat: ChatServer, conversation: str, card: dict[str, Any]
) -> None:
    """Confirms, then goes away once the upstream has received the call (it is in flight)."""
    body = confirm_body(conversation, card, DASHBOARD_10)
    async with in_flight(chat.url, body, chat.headers(), lambda: deploys(chat) == 1) as events:
        assert (await anext(events)).type == "confirm_resolved"
        # Leaving the block closes the connection with the call in flight


async def wait_unlocked(chat: ChatServer, conversation: str) -> None:
    deadline = time.monotonic() + CANCEL_BOUND_S
    while True:
        record = await chat.store.get(conversation)
        if record is not None and record.locked_by is None:
            return
        assert time.monotonic() < deadline, "the dropped run never released the conversation"
        await asyncio.sleep(0.1)


def told(events: list[Any]) -> str:
    return " ".join(
        e.data["content"]
        + e.data["metadata"].get("token", "")
        + e.data["metadata"].get("error", "")
        for e in events
    )


async def test_a_confirmed_write_dropped_in_flight_is_reported_as_status_unknown(
    patient_chat: ScriptedChat,
):
    chat = patient_chat
    # Given a confirmed deploy whose upstream call does not answer, and a client that goes away
    # while it is in flight (the upstream may still apply it: nobody can know)
    conversation, card = await deploy_card(chat)
    chat.stack.upstream.plan.add("POST", "/api/dashboards/deploy", Fault(FaultKind.HANG))
    await confirm_and_drop_in_flight(chat, conversation, card)
    await wait_unlocked(chat, conversation)
    # Then the confirmation records that the call started, the retry is refused as answered
    item = confirmation_item(chat, card["confirmation_id"])
    assert item["status"] == "confirmed"
    assert item["execution"] in {"started", "unknown"}
    status, _, refused = await post_stream(chat, confirm_body(conversation, card, DASHBOARD_10))
    assert (status, refused and refused["code"]) == (409, "ALREADY_DECIDED")
    # And a reconnect tells the truth instead of re-offering a card without an id
    status, replay, _ = await post_stream(
        chat,
        {
            "action": "resume",
            "conversation_id": conversation,
            "last_event_id": f"{conversation}:999",
        },
    )
    assert status == 200
    assert not [e for e in replay if e.type == "confirm_required"]
    assert "статус операции неизвестен" in told(replay).lower()
    # When the user sends a new message
    events = await follow_up(chat, conversation, "ну что там?")
    # Then the deploy's card says its status is unknown, never «отменена… ничего не изменено»
    text = told(events).lower()
    assert "статус операции неизвестен" in text
    assert "ничего не изменено" not in text
    [unknown] = [e.data["metadata"] for e in events if e.type == "tool_error"]
    assert (unknown["tool"], unknown["tool_call_id"], unknown["code"]) == (
        "deploy_dashboard",
        "call-deploy",
        "TOOL_OUTCOME_UNKNOWN",
    )
    assert deploys(chat) == 1
    # And the audit log says so exactly once, with no tool_called for that call
    about_the_call = [
        r.kind
        for r in chat.audit.records
        if r.kind in (AuditKind.TOOL_CALLED, AuditKind.TOOL_OUTCOME_UNKNOWN)
        and r.detail.get("tool_call_id") == "call-deploy"
    ]
    assert about_the_call == [AuditKind.TOOL_OUTCOME_UNKNOWN]
    # And a later message does not say it again: the call is settled
    later = await follow_up(chat, conversation, "спасибо")
    assert "статус операции неизвестен" not in told(later).lower()


async def test_a_confirmed_call_that_never_left_is_reported_as_not_run(chat: ScriptedChat):
    # Given a confirm that was recorded but whose run died before the call left
    conversation, card = await deploy_card(chat)
    store = confirmation_store_from(chat.stack.settings)
    await store.decide(card["confirmation_id"], "user.engineer", ConfirmationStatus.CONFIRMED)
    # When the user comes back with a new message
    events = await follow_up(chat, conversation, "ну что там?")
    # Then they are told it did not run and nothing changed, and nothing ran
    [closed] = [e.data["metadata"] for e in events if e.type == "tool_error"]
    assert (closed["tool"], closed["tool_call_id"], closed["code"]) == (
        "deploy_dashboard",
        "call-deploy",
        "TOOL_NOT_RUN",
    )
    text = told(events).lower()
    assert "не выполнена" in text
    assert "статус операции неизвестен" not in text
    assert deploys(chat) == 0
    assert confirmation_item(chat, card["confirmation_id"])["execution"] == "not_run"


async def test_a_confirmed_call_that_finished_is_not_reported_again(chat: ScriptedChat):
    conversation, card = await deploy_card(chat)
    status, events, _ = await post_stream(chat, confirm_body(conversation, card, DASHBOARD_10))
    assert status == 200
    assert [e.type for e in events].count("tool_end") == 1
    assert confirmation_item(chat, card["confirmation_id"])["execution"] == "succeeded"
    events = await follow_up(chat, conversation, "спасибо")
    assert not [e for e in events if e.type in ("tool_error", "confirm_resolved")]
    calls = [r.kind for r in chat.audit.records if r.detail.get("tool_call_id") == "call-deploy"]
    assert calls.count(AuditKind.TOOL_CALLED) == 1


# --- Cancel while a tool call is in flight ----------------------------------------------------


async def cancel_in_flight(
    chat: ScriptedChat, body: dict[str, Any], seen: str, path: str
) -> list[Any]:
    """Runs `body`, asks for a cancel from another connection once an event of type `seen`
    arrived and the upstream received the call to `path` (which hangs); returns the rest of the
    stream, which must end within `CANCEL_BOUND_S` of the cancel."""
    async with (
        httpx.AsyncClient(timeout=30) as client,
        client.stream(
            "POST", f"{chat.url}/api/agent/chat", json=body, headers=chat.headers()
        ) as tab_a,
    ):
        stream = sse_events(tab_a)
        async for event in stream:
            if event.type == seen:
                conversation = event.id.split(":")[0]
                break
        await wait_for(lambda: chat.stack.upstream.plan.requests(None, path) == 1)
        cancel = await client.post(
            f"{chat.url}/api/agent/chat/cancel",
            headers=chat.headers(),
            json={"conversation_id": conversation},
        )
        assert cancel.status_code == 202
        async with asyncio.timeout(CANCEL_BOUND_S):
            return [event async for event in stream]


async def test_a_cancel_stops_a_run_waiting_on_a_read(patient_chat: ScriptedChat):
    chat = patient_chat
    # Given a read whose upstream never answers (and whose tool would wait a minute)
    chat.model.calls = [{"name": "get_health_summary", "args": {"dashboard_id": "10"}, "id": "h1"}]
    chat.stack.upstream.plan.add("GET", "/api/environments/ss-dev/health", Fault(FaultKind.HANG))
    # When another tab cancels while the call is in flight
    rest = await cancel_in_flight(
        chat,
        {"message": "здоровье", "ui_context": DASHBOARD_10},
        "tool_start",
        "/api/environments/ss-dev/health",
    )
    # Then the run stops (within CANCEL_BOUND_S: only the cancel can end it), says the read was
    # dropped, not timed out or answered, and ends the stream
    read = [e for e in rest if e.type in ("tool_end", "tool_error")]
    assert [e.data["metadata"]["code"] for e in read] == ["TOOL_NOT_RUN"]
    assert any(e.data["content"] == STOPPED_TEXT for e in rest)
    assert rest[-1].type == "stream_end"


async def test_a_cancel_during_a_confirmed_write_records_and_tells_status_unknown(
    patient_chat: ScriptedChat,
):
    chat = patient_chat
    conversation, card = await deploy_card(chat)
    chat.stack.upstream.plan.add("POST", "/api/dashboards/deploy", Fault(FaultKind.HANG))
    rest = await cancel_in_flight(
        chat,
        confirm_body(conversation, card, DASHBOARD_10),
        "confirm_resolved",
        "/api/dashboards/deploy",
    )
    assert not [e for e in rest if e.type == "tool_end"]
    assert "статус операции неизвестен" in told(rest).lower()
    assert any(e.data["content"] == STOPPED_TEXT for e in rest)
    assert confirmation_item(chat, card["confirmation_id"])["execution"] == "unknown"


class ModelFailingAfterTheTool(ScriptedModel):
    """Calls the scripted tool, then cannot answer (the provider is down)."""

    def _generate(self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any):
        if isinstance(messages[-1], ToolMessage):
            raise ConnectionError("model endpoint unreachable")
        return super()._generate(messages, stop, run_manager, **kwargs)


@pytest.fixture
def failing_chat(stack: AgentStack) -> Iterator[ScriptedChat]:
    yield from scripted_chat(stack, ModelFailingAfterTheTool(calls=[DEPLOY_CALL]))


async def test_a_confirmed_call_whose_run_failed_afterwards_is_never_called_cancelled(
    failing_chat: ScriptedChat,
):
    # Given a confirmed deploy that ran, after which the model failed
    chat = failing_chat
    conversation, card = await deploy_card(chat)
    status, events, _ = await post_stream(chat, confirm_body(conversation, card, DASHBOARD_10))
    assert status == 200
    assert [e.data["metadata"].get("code") for e in events if e.type == "error"] == [
        "LLM_UNAVAILABLE"
    ]
    assert deploys(chat) == 1
    # When the user writes again
    events = await follow_up(chat, conversation, "ну что там?")
    # Then nobody says the deploy was cancelled or changed nothing
    text = told(events).lower()
    assert "отменена" not in text
    assert "ничего не изменено" not in text
    assert deploys(chat) == 1


# --- Two writes in one model message: one card at a time -------------------------------------

BRANCH_CALL = {
    "name": "create_branch",
    "args": {"dashboard_id": "10", "branch_name": "rt-x"},
    "id": "call-branch",
}
BRANCHES = "/api/environments/ss-dev/dashboards/10/git/branches"


def outcome_records(chat: ScriptedChat, call_id: str) -> list[AuditKind]:
    kinds = (AuditKind.TOOL_CALLED, AuditKind.TOOL_OUTCOME_UNKNOWN, AuditKind.TOOL_NOT_RUN)
    return [
        r.kind
        for r in chat.audit.records
        if r.kind in kinds and r.detail.get("tool_call_id") == call_id
    ]


async def test_two_writes_in_one_message_get_one_card_and_the_other_is_not_run(
    patient_chat: ScriptedChat,
):
    chat = patient_chat
    # Given the model asks for a deploy and a branch in one message
    chat.model.calls = [DEPLOY_CALL, BRANCH_CALL]
    status, events, _ = await post_stream(
        chat, {"message": "задеплой и создай ветку", "ui_context": DASHBOARD_10}
    )
    assert status == 200
    # Then only the first gets a card; the second is told not run, nothing changed
    cards = [e.data["metadata"] for e in events if e.type == "confirm_required"]
    assert [card["tool_call_id"] for card in cards] == ["call-deploy"]
    [refused] = [e.data["metadata"] for e in events if e.type == "tool_error"]
    assert (refused["tool_call_id"], refused["code"]) == ("call-branch", "TOOL_NOT_RUN")
    conversation = events[-1].data["metadata"]["conversation_id"]
    await wait_for(lambda: "task_token" in confirmation_item(chat, cards[0]["confirmation_id"]))
    # When the card is confirmed, after the connection dropped once mid-call and a retry
    chat.stack.upstream.plan.add("POST", "/api/dashboards/deploy", Fault(FaultKind.HANG))
    await confirm_and_drop_in_flight(chat, conversation, cards[0])
    await wait_unlocked(chat, conversation)
    status, _, refused_again = await post_stream(
        chat, confirm_body(conversation, cards[0], DASHBOARD_10)
    )
    # Then the deploy ran once, the branch never, and no second card ever appeared
    assert (status, refused_again and refused_again["code"]) == (409, "ALREADY_DECIDED")
    later = await follow_up(chat, conversation, "ну что там?")
    assert not [e for e in later if e.type == "confirm_required"]
    assert deploys(chat) == 1
    assert chat.stack.upstream.plan.requests("POST", BRANCHES) == 0
    assert outcome_records(chat, "call-deploy") == [AuditKind.TOOL_OUTCOME_UNKNOWN]


@pytest.mark.parametrize("resume_from", [None, 1], ids=["from the start", "from the card"])
async def test_a_reconnect_from_before_the_card_still_says_status_unknown(
    patient_chat: ScriptedChat, resume_from: int | None
):
    chat = patient_chat
    # Given a confirmed deploy dropped in flight
    conversation, card = await deploy_card(chat)
    chat.stack.upstream.plan.add("POST", "/api/dashboards/deploy", Fault(FaultKind.HANG))
    await confirm_and_drop_in_flight(chat, conversation, card)
    await wait_unlocked(chat, conversation)
    # When the page reconnects and replays from the start (a fresh load) or from the card
    body: dict[str, Any] = {"action": "resume", "conversation_id": conversation}
    if resume_from is not None:
        body["last_event_id"] = f"{conversation}:{resume_from}"
    status, replay, _ = await post_stream(chat, body)
    # Then after the replayed (spent) card it says the deploy's status is unknown
    assert status == 200
    assert "статус операции неизвестен" in told(replay).lower()
    assert deploys(chat) == 1
    # and says it so that a client sees it: in an event without an id (a client drops an id it
    # has seen), before the stream's last event, its end
    unknown = [e for e in replay if "статус операции неизвестен" in e.data["content"].lower()]
    assert [e.id for e in unknown] == [""]
    assert replay[-1].type == "stream_end"
    assert replay.index(unknown[0]) < len(replay) - 1
    stored = [int(e.id.rsplit(":", 1)[1]) for e in replay if e.id]
    assert stored == sorted(set(stored))  # stored events keep their own, increasing ids
