"""The AG-UI encoder on its own: what each of the turn's events becomes, read back with the
`ag-ui-protocol` package's models (the endpoint's runs are tested in
tests/integration/test_ag_ui_endpoint.py and with HttpAgent in test_ag_ui_http_agent.py)."""

from __future__ import annotations

from typing import Any

from ag_ui.core import Event, EventType
from pydantic import TypeAdapter

from sstools_agent.chat.ag_ui import AgUiEncoder
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmationResult,
    ConfirmResolved,
    ErrorEvent,
    StreamEnd,
    StreamToken,
    Text,
    ToolsRouted,
    ToolStart,
)
from sstools_agent.domain.errors import ErrorCode

EVENTS: TypeAdapter[Any] = TypeAdapter(Event)
END = StreamEnd("t1", "u1", "a1")


def encoded(events: list[ChatEvent], **options: Any) -> list[Any]:
    encoder = AgUiEncoder("t1", "r1", **options)
    wire = b"".join(encoder.frame(None, event) for event in events).decode()
    return [EVENTS.validate_json(frame.removeprefix("data: ")) for frame in wire.split("\n\n")[:-1]]


def types(events: list[Any]) -> list[str]:
    return [event.type.value for event in events]


def test_the_tool_routing_is_a_custom_event():
    routing = {"intent": "read", "offered": ["search_dashboards"], "removed": {}}
    events = encoded([ToolsRouted(routing), END])
    assert types(events) == ["RUN_STARTED", "CUSTOM", "RUN_FINISHED"]
    assert (events[1].name, events[1].value) == ("ss-tools.tools_routed", routing)


def test_tokens_are_one_message_closed_before_a_whole_text_and_before_the_run_ends():
    events = encoded([StreamToken("Да"), StreamToken(""), StreamToken("."), Text("Готово"), END])
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert events[1].message_id == events[4].message_id != events[5].message_id


def test_an_error_closes_the_open_text_ends_the_run_and_nothing_follows_it():
    events = encoded(
        [StreamToken("Начинаю"), ErrorEvent(ErrorCode.LLM_UNAVAILABLE, "Модель недоступна"), END]
    )
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_ERROR",
    ]
    assert (events[-1].code, events[-1].message) == ("LLM_UNAVAILABLE", "Модель недоступна")


def test_an_edited_call_is_not_started_again_its_arguments_are_said():
    events = encoded(
        [
            ConfirmResolved(ConfirmationResult.CONFIRMED),
            ToolStart("deploy_dashboard", {"dashboard_ids": [11]}, "c1"),
            END,
        ],
        resumed_call="c1",
    )
    assert types(events) == ["RUN_STARTED", "CUSTOM", "CUSTOM", "RUN_FINISHED"]
    assert (events[2].name, events[2].value) == (
        "ss-tools.call_edited",
        {"toolCallId": "c1", "tool": "deploy_dashboard", "args": {"dashboard_ids": [11]}},
    )


def test_a_denial_closes_the_resumed_call_as_not_run():
    events = encoded([ConfirmResolved(ConfirmationResult.DENIED), END], resumed_call="c1")
    assert types(events) == ["RUN_STARTED", "CUSTOM", "TOOL_CALL_RESULT", "RUN_FINISHED"]
    assert events[2].tool_call_id == "c1"
    assert events[2].metadata == {"error": True, "code": "TOOL_NOT_RUN"}


def test_a_stopped_run_finishes_as_cancelled():
    events = encoded([StreamToken("…"), END], stopped=lambda: True)
    finished = events[-1]
    assert finished.type is EventType.RUN_FINISHED
    assert finished.outcome.type == "cancelled"
    assert finished.result == {
        "conversationId": "t1",
        "userMessageId": "u1",
        "assistantMessageId": "a1",
    }
