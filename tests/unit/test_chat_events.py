"""The stream's events on the wire: every type writes exactly the JSON the protocol has always
had, reads it back as the same type, and a stored event of no known type is refused.

The expected strings were taken from the events as the single `ChatEvent(content, metadata)`
class wrote them, before each type had its own class: the wire must not change.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from sstools_agent.agent.interrupts import ConfirmationAnswer, ConfirmationInterrupt
from sstools_agent.chat.encoding import ChatMessageSSE
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmationResult,
    ConfirmRequired,
    ConfirmResolved,
    ErrorEvent,
    EventType,
    OutputReference,
    PermissionDenied,
    StreamEnd,
    StreamToken,
    Text,
    ToolEnd,
    ToolError,
    ToolStart,
    WireEventError,
)
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.tool_outputs import referenced, with_reference

CARD = ConfirmRequired(
    prompt="Задеплоить?",
    thread_id="t1",
    tool_call_id="call_2",
    interrupt_id="i1",
    decision={"tool": "deploy_dashboard", "risk": "high", "environment": "ss-staging"},
    tool_input={"dashboard_id": 10},
)
BIG = ToolEnd("t", {"rows": [1, 2]}, "c9")
OUTPUT_PATH = "/api/assistant/conversations/conv1/tool-outputs/c9"

# (event, its wire JSON as the protocol has always written it)
WIRE: list[tuple[ChatEvent, str]] = [
    (
        StreamToken("При"),
        '{"role":"assistant","content":"","metadata":{"type":"stream_token","token":"При"}}',
    ),
    (Text("Готово."), '{"role":"assistant","content":"Готово.","metadata":{}}'),
    (
        ToolStart("get_dashboard", {"dashboard_id": 10}, "call_1"),
        '{"role":"assistant","content":"","metadata":{"type":"tool_start","tool":"get_dashboard",'
        '"input":{"dashboard_id":10},"tool_call_id":"call_1"}}',
    ),
    (
        ToolEnd("get_dashboard", {"id": 10, "title": "Продажи"}, "call_1"),
        '{"role":"assistant","content":"","metadata":{"type":"tool_end","tool":"get_dashboard",'
        '"output":{"id":10,"title":"Продажи"},"tool_call_id":"call_1"}}',
    ),
    (
        ToolError("get_dashboard", "boom", "call_1"),
        '{"role":"assistant","content":"","metadata":{"type":"tool_error","tool":"get_dashboard",'
        '"error":"boom","code":"TOOL_FAILURE","tool_call_id":"call_1"}}',
    ),
    (
        ToolError("run_sql", "x", "c2", ErrorCode.TOOL_NOT_RUN),
        '{"role":"assistant","content":"","metadata":{"type":"tool_error","tool":"run_sql",'
        '"error":"x","code":"TOOL_NOT_RUN","tool_call_id":"c2"}}',
    ),
    (
        CARD,
        '{"role":"assistant","content":"","metadata":{"type":"confirm_required",'
        '"prompt":"Задеплоить?","thread_id":"t1","tool_call_id":"call_2","interrupt_id":"i1",'
        '"confirmation_id":null,"expires_at":null,"decision":{"tool":"deploy_dashboard",'
        '"risk":"high","environment":"ss-staging"},"input":{"dashboard_id":10},"plan":null}}',
    ),
    (
        ConfirmRequired(
            prompt="p", thread_id="t1", tool_call_id="call_3", interrupt_id="i2", decision={}
        ).answerable_as(
            "conf2",
            "2025-01-01T00:00:00Z",
            {"title": "Деплой дашборда #10", "lines": ["…"], "unread": None, "digest": "d1"},
        ),
        '{"role":"assistant","content":"","metadata":{"type":"confirm_required","prompt":"p",'
        '"thread_id":"t1","tool_call_id":"call_3","interrupt_id":"i2","confirmation_id":"conf2",'
        '"expires_at":"2025-01-01T00:00:00Z","decision":{},"input":{},"plan":{"title":'
        '"Деплой дашборда #10","lines":["…"],"unread":null,"digest":"d1"}}}',
    ),
    (
        ConfirmRequired(
            prompt="p", thread_id="t1", tool_call_id="call_2", interrupt_id="i1", decision={}
        ).answerable_as("conf1", "2025-01-01T00:00:00Z"),
        '{"role":"assistant","content":"","metadata":{"type":"confirm_required","prompt":"p",'
        '"thread_id":"t1","tool_call_id":"call_2","interrupt_id":"i1","confirmation_id":"conf1",'
        '"expires_at":"2025-01-01T00:00:00Z","decision":{},"input":{},"plan":null}}',
    ),
    (
        ConfirmResolved(ConfirmationResult.DENIED),
        '{"role":"assistant","content":"","metadata":{"type":"confirm_resolved","result":"denied"}}',
    ),
    (
        PermissionDenied("deploy_dashboard", "engineer", "call_3", "Недостаточно прав"),
        '{"role":"assistant","content":"Недостаточно прав","metadata":{"type":"permission_denied",'
        '"tool":"deploy_dashboard","required_role":"engineer","tool_call_id":"call_3"}}',
    ),
    (
        PermissionDenied("x", None, "c", ""),
        '{"role":"assistant","content":"","metadata":{"type":"permission_denied","tool":"x",'
        '"required_role":null,"tool_call_id":"c"}}',
    ),
    (
        ErrorEvent(ErrorCode.INTERNAL_ERROR, "Внутренняя ошибка"),
        '{"role":"assistant","content":"","metadata":{"type":"error","code":"INTERNAL_ERROR",'
        '"detail":"Внутренняя ошибка"}}',
    ),
    (
        StreamEnd("conv1", "u1", "a1"),
        '{"role":"assistant","content":"","metadata":{"type":"stream_end",'
        '"conversation_id":"conv1","user_message_id":"u1","assistant_message_id":"a1"}}',
    ),
    (
        StreamEnd("conv1", None, "a1"),
        '{"role":"assistant","content":"","metadata":{"type":"stream_end",'
        '"conversation_id":"conv1","user_message_id":null,"assistant_message_id":"a1"}}',
    ),
    (
        with_reference(BIG, "conv1", 1234),
        '{"role":"assistant","content":"","metadata":{"type":"tool_end","tool":"t",'
        f'"output":{{"rows":[1,2]}},"tool_call_id":"c9","output_ref":"{OUTPUT_PATH}",'
        '"output_bytes":1234,"truncated":false}}',
    ),
    (
        referenced(BIG, "conv1", 1234, kept=True),
        '{"role":"assistant","content":"","metadata":{"type":"tool_end","tool":"t",'
        f'"output":{{"rows":[1,2]}},"tool_call_id":"c9","output_ref":"{OUTPUT_PATH}",'
        '"output_bytes":1234,"truncated":true}}',
    ),
    (
        referenced(BIG, "conv1", 1234, kept=False),
        '{"role":"assistant","content":"","metadata":{"type":"tool_end","tool":"t",'
        '"output":{"rows":[1,2]},"tool_call_id":"c9","output_ref":null,"output_bytes":1234,'
        '"truncated":true}}',
    ),
]
IDS = [f"{type(event).__name__}-{n}" for n, (event, _) in enumerate(WIRE)]


def dumps(wire: dict[str, Any]) -> str:
    return json.dumps(wire, ensure_ascii=False, separators=(",", ":"))


@pytest.mark.parametrize(("event", "expected"), WIRE, ids=IDS)
def test_every_event_writes_the_wire_the_protocol_has_always_had(event, expected):
    assert dumps(event.to_wire()) == expected


@pytest.mark.parametrize(("event", "expected"), WIRE, ids=IDS)
def test_a_stored_event_reads_back_as_its_own_type(event, expected):
    stored = json.loads(expected)  # as the conversation store gives it back: plain JSON
    replayed = ChatEvent.from_wire(stored)
    assert type(replayed) is type(event)
    assert replayed == event
    assert replayed.type == (stored["metadata"].get("type") or None)
    assert dumps(replayed.to_wire()) == expected


def test_every_event_type_has_a_class_and_is_covered_here():
    covered = {event.type for event, _ in WIRE}
    assert covered == {*EventType, None}


def test_a_stored_event_of_unknown_type_is_refused_by_name():
    with pytest.raises(WireEventError, match="'agent_thought'"):
        ChatEvent.from_wire({"role": "assistant", "metadata": {"type": "agent_thought"}})


def test_a_stored_event_missing_a_field_or_out_of_its_enum_is_refused():
    with pytest.raises(WireEventError, match="tool_end"):
        ChatEvent.from_wire({"metadata": {"type": "tool_end", "tool": "t"}})
    with pytest.raises(WireEventError, match="confirm_resolved"):
        ChatEvent.from_wire({"metadata": {"type": "confirm_resolved", "result": "maybe"}})


def test_a_tool_end_kept_by_reference_says_where_the_whole_is():
    stored = referenced(BIG, "conv1", 1234, kept=True)
    assert stored.reference == OutputReference(OUTPUT_PATH, 1234, truncated=True)
    assert stored.tool_call_id == "c9"


def test_the_sse_encoder_frames_the_wire_with_the_event_id():
    encoder = ChatMessageSSE()
    event, expected = WIRE[2]
    assert encoder.media_type == "text/event-stream"
    assert encoder.frame("conv1:3", event) == f"id: conv1:3\ndata: {expected}\n\n".encode()


def test_the_interrupt_payload_keeps_the_checkpoints_dict():
    stored = {
        "tool_call_id": "call_2",
        "tool": "deploy_dashboard",
        "args": {"dashboard_id": 10},
        "decision": {"tool": "deploy_dashboard", "risk": "high", "environment": "ss-staging"},
        "ui_context": {"objectType": "dashboard", "objectId": "10"},
    }
    card = ConfirmationInterrupt.from_dict(stored)
    assert card.to_dict() == stored
    assert list(card.to_dict()) == list(stored)
    assert ConfirmationInterrupt.from_dict(None) == ConfirmationInterrupt("", "", {}, {})


@pytest.mark.parametrize(
    ("result", "resume"),
    [
        (ConfirmationResult.CONFIRMED, {"decision": "approve"}),
        (ConfirmationResult.DENIED, {"decision": "reject", "reason": "denied"}),
        (ConfirmationResult.EXPIRED, {"decision": "reject", "reason": "expired"}),
        (ConfirmationResult.CANCELLED, {"decision": "reject", "reason": "cancelled"}),
    ],
)
def test_the_resume_answer_keeps_its_dict_and_reads_back(result, resume):
    assert ConfirmationAnswer(result).to_dict() == resume
    assert ConfirmationAnswer.from_dict(resume).result is result


def test_a_resume_answer_that_is_not_an_approval_is_a_denial():
    for odd in (None, "yes", {}, {"decision": "reject", "reason": "whatever"}):
        assert ConfirmationAnswer.from_dict(odd).result is ConfirmationResult.DENIED
