"""The exported JSON Schema of the stream events is what the backend writes: every event type's
wire object validates against its declaration (no field more, none missing), and the committed
file the /agent page generates its types from is current."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from scripts.export_event_schema import main as export_main
from sstools_agent.domain.chat_event_schema import WIRE_MESSAGES, chat_event_schema
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
)
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.ui_context import UIContext


def _prod_deploy_decision() -> dict[str, Any]:
    page = UIContext.model_validate(
        {"contextVersion": 1, "objectType": "dashboard", "objectId": "10", "envId": "ss-dev"},
        context={"environments": DEFAULT_ENVIRONMENTS},
    )
    policy = ToolPolicy(CATALOG, DEFAULT_ENVIRONMENTS)
    arguments = {"dashboard_ids": [10, 11], "source_env_id": "ss-dev", "target_env_id": "prod"}
    return policy.evaluate(Role.ADMIN, "deploy_dashboard", arguments, page).to_payload()


def _every_event() -> list[ChatEvent]:
    card = ConfirmRequired(
        prompt="Задеплоить?",
        thread_id="t1",
        tool_call_id="call_2",
        interrupt_id="i1",
        decision=_prod_deploy_decision(),
        tool_input={"dashboard_ids": [10, 11]},
    )
    return [
        StreamToken("При"),
        Text("Готово."),
        ToolStart("search_dashboards", {"query": "энерг"}, "call_1"),
        ToolEnd("search_dashboards", {"items": []}, "call_1"),
        ToolEnd(
            "search_dashboards",
            {"items": [], "total": 900},
            "call_1",
            OutputReference("/api/assistant/conversations/c/tool-outputs/call_1", 90000, True),
        ),
        ToolEnd("t", "text", "call_1", OutputReference(None, 90000, True)),
        ToolError("deploy_dashboard", "timeout", "call_2", ErrorCode.TOOL_OUTCOME_UNKNOWN),
        card,
        card.answerable_as("conf-1", "2026-12-01T12:00:00+00:00"),
        *(ConfirmResolved(result) for result in ConfirmationResult),
        PermissionDenied("deploy_dashboard", "admin", "call_3", "Недостаточно прав"),
        PermissionDenied("unknown_tool", None, "call_3", "Недостаточно прав"),
        ErrorEvent(ErrorCode.LLM_UNAVAILABLE, "model down"),
        StreamEnd("c", "m1", "m2"),
        StreamEnd("c", None, "m2"),
    ]


@pytest.mark.parametrize("event", _every_event(), ids=lambda event: type(event).__name__)
def test_every_wire_object_validates_against_its_declaration(event: ChatEvent) -> None:
    # Given an event as the stream writes it (enum members as the encoder serialises them)
    wire = json.loads(json.dumps(event.to_wire()))
    # Then its declaration accepts it with no field left over
    TypeAdapter(WIRE_MESSAGES[event.type]).validate_python(wire)


def test_every_event_type_has_a_declaration_and_every_declaration_an_event() -> None:
    assert set(WIRE_MESSAGES) == {*EventType, None}
    assert {type(event).type for event in _every_event()} == {*EventType, None}


def test_a_field_the_declaration_does_not_have_is_refused() -> None:
    # The check above can fail: a wire object with one field more than declared is invalid.
    wire = StreamToken("x").to_wire()
    wire["metadata"]["extra"] = 1
    with pytest.raises(ValidationError):
        TypeAdapter(WIRE_MESSAGES[EventType.STREAM_TOKEN]).validate_python(wire)


def test_the_schema_names_every_wire_object_and_the_guardrail_decision() -> None:
    schema = chat_event_schema()
    names = {ref["$ref"].rsplit("/", 1)[1] for ref in schema["oneOf"]}
    assert names == {message.__name__ for message in WIRE_MESSAGES.values()}
    decision = schema["$defs"]["GuardrailDecision"]
    assert set(decision["required"]) >= {"tone", "badge", "impact", "operation", "permission"}
    assert schema["$defs"]["Tone"]["enum"] == ["success", "info", "warning", "destructive"]


def test_the_committed_schema_is_what_the_models_export() -> None:
    assert export_main(["--check"]) == 0, "run `make schema`"
