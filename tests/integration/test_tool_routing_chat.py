"""Routing and prefetch in whole turns: the chat function's turn service with the offline router
(USE embeddings), the sample upstream over HTTP, moto behind."""

from __future__ import annotations

import time
from typing import Any

import pytest

from local.agent_stack import AgentStack, RecordingStandinModel, answer
from local.fault_injection import Fault, FaultKind
from sstools_agent.adapters.embeddings import OfflineEmbedder
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.chat.attachments import ChatAttachments
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.attachments import AttachmentLimits
from sstools_agent.domain.audit import AuditKind
from sstools_agent.domain.chat_events import ChatEvent, EventType, PermissionDenied
from sstools_agent.domain.tool_routing import ToolRouter
from sstools_agent.wiring.adapters import (
    attachment_store_from,
    confirmation_store_from,
    confirmation_workflow_from,
    conversation_store_from,
    tool_output_store_from,
)
from tests.support.seed import DASHBOARD_10, DATASET_15

pytestmark = pytest.mark.anyio
DASHBOARDS_OF_SS_DEV = "/api/environments/ss-dev/dashboards"


@pytest.fixture(scope="module")
def router() -> ToolRouter:
    router = ToolRouter(OfflineEmbedder())
    router.warm()
    return router


def chat_turns(
    stack: AgentStack,
    model: RecordingStandinModel,
    router: ToolRouter,
    audit: MemoryAuditSink,
    prefetch_timeout_s: float = 1.5,
) -> ChatTurns:
    """The chat function's turn sequencing over this stack, with this model and router."""
    agent = stack.agent(model, router=router)
    settings = stack.settings
    return ChatTurns(
        lambda: agent,
        conversation_store_from(settings),
        confirmation_store_from(settings),
        confirmation_workflow_from(settings),
        audit=audit,
        prefetch_timeout_s=prefetch_timeout_s,
        outputs=tool_output_store_from(settings),
        attachments=ChatAttachments(attachment_store_from(settings), AttachmentLimits()),
    )


async def turn(
    stack: AgentStack,
    router: ToolRouter,
    message: str,
    role: str,
    ui_context: dict[str, Any],
    *,
    prefetch_timeout_s: float = 10,
) -> tuple[list[ChatEvent], RecordingStandinModel, MemoryAuditSink, float]:
    """One new-message turn as the chat function runs it; its events, model, audit, seconds.
    The prefetch's budget is one no busy machine misses (at the product's 1.5 s a loaded CI
    machine missed it once); the test of the budget itself sets its own."""
    model, audit = RecordingStandinModel(), MemoryAuditSink()
    turns = chat_turns(stack, model, router, audit, prefetch_timeout_s)
    context = stack.context(role, ui_context)
    started = time.monotonic()
    prepared = await turns.prepare(
        owner=context.principal.subject,
        conversation_id=None,
        action=None,
        message=message,
        confirmation_id=None,
        ui_context=ui_context,
    )
    events = [event async for _, event in turns.stream(prepared, context)]
    return events, model, audit, time.monotonic() - started


def routed(audit: MemoryAuditSink) -> dict[str, Any]:
    records = [r for r in audit.records if r.kind is AuditKind.TOOLS_ROUTED]
    assert len(records) == 1
    return records[0].detail


async def test_the_status_of_this_dashboard_is_answered_from_the_prefetch(
    stack: AgentStack, router: ToolRouter
):
    events, model, audit, _ = await turn(
        stack, router, "какой статус у этого дашборда?", "engineer", DASHBOARD_10
    )
    # No tool round trip: the summary was read while the turn started
    assert not [e for e in events if e.type is EventType.TOOL_START]
    assert stack.upstream.plan.requests("GET", DASHBOARDS_OF_SS_DEV) == 1
    text = answer(events)
    for fact in ("Отчёт по энергопотреблению", "git-статус", "отстаёт", "валидация"):
        assert fact in text, text
    assert "search_dashboards" not in model.bindings[0]
    assert "show_capabilities" in model.bindings[0]
    record = routed(audit)
    assert record["intent"] == "dashboard_query"
    assert record["prefetch_available"] is True
    assert record["removed"]["search_dashboards"] == "router"
    assert record["removed"]["superset_execute_sql"] == "affinity"
    assert set(record["offered"]) == set(model.bindings[0])


async def test_a_slow_prefetch_falls_back_to_the_tool_within_its_budget(
    stack: AgentStack, router: ToolRouter
):
    stack.upstream.plan.add("GET", DASHBOARDS_OF_SS_DEV, Fault(FaultKind.HANG, seconds=60, times=1))
    events, model, audit, elapsed = await turn(
        stack,
        router,
        "какой статус у этого дашборда?",
        "engineer",
        DASHBOARD_10,
        prefetch_timeout_s=0.5,
    )
    assert routed(audit)["prefetch_available"] is False
    assert "search_dashboards" in model.bindings[0]
    starts = [e.metadata for e in events if e.type is EventType.TOOL_START]
    assert [s["tool"] for s in starts] == ["search_dashboards"]
    assert "git-статус" in answer(events)
    assert elapsed < 30  # the hung prefetch cost its budget (0.5 s), not the hang (60 s)


async def test_a_failed_prefetch_falls_back_to_the_tool(stack: AgentStack, router: ToolRouter):
    stack.upstream.plan.add(
        "GET", DASHBOARDS_OF_SS_DEV, Fault(FaultKind.STATUS, status=500, times=2)
    )
    events, _model, audit, _ = await turn(
        stack, router, "какой статус у этого дашборда?", "engineer", DASHBOARD_10
    )
    assert routed(audit)["prefetch_available"] is False
    assert [e.metadata["tool"] for e in events if e.type is EventType.TOOL_START] == [
        "search_dashboards"
    ]


async def test_another_dashboard_by_id_still_gets_search(stack: AgentStack, router: ToolRouter):
    events, model, _, _ = await turn(
        stack, router, "найди дашборд 12 и покажи его статус", "engineer", DASHBOARD_10
    )
    assert "search_dashboards" in model.bindings[0]
    starts = [e.metadata for e in events if e.type is EventType.TOOL_START]
    assert starts[0]["input"] == {"dashboard_ids": [12]}


async def test_the_router_never_offers_what_the_role_or_page_removed(
    stack: AgentStack, router: ToolRouter
):
    # An analyst on a dataset page asks for a deploy and a backup: both are out by role/affinity
    events, model, audit, _ = await turn(
        stack, router, "задеплой дашборд в прод и сделай бэкап", "analyst", DATASET_15
    )
    record = routed(audit)
    assert record["removed"]["deploy_dashboard"] in {"role", "affinity"}
    assert record["removed"]["run_backup"] in {"role", "affinity"}
    for binding in model.bindings:
        assert "deploy_dashboard" not in binding
        assert "run_backup" not in binding
    assert not [e for e in events if e.type is EventType.TOOL_START]


async def test_a_dataset_question_offers_few_tools(stack: AgentStack, router: ToolRouter):
    _events, model, audit, _ = await turn(
        stack, router, "какие колонки в этом датасете?", "engineer", DATASET_15
    )
    assert len(model.bindings[0]) <= 5
    assert "superset_explore_database" in model.bindings[0]
    assert routed(audit)["intent"] in {"specific", "dashboard_query"}


async def test_an_answer_to_a_clarifying_question_keeps_the_tool_it_was_about(
    stack: AgentStack, router: ToolRouter
):
    # Given the agent asked where to deploy this dashboard
    model, audit = RecordingStandinModel(), MemoryAuditSink()
    turns = chat_turns(stack, model, router, audit)
    context = stack.context("engineer", DASHBOARD_10)

    async def say(message: str, conversation_id: str | None) -> list[ChatEvent]:
        prepared = await turns.prepare(
            owner=context.principal.subject,
            conversation_id=conversation_id,
            action=None,
            message=message,
            confirmation_id=None,
            ui_context=DASHBOARD_10,
        )
        return [event async for _, event in turns.stream(prepared, context)]

    asked = await say("выкати этот дашборд", None)
    question = answer(asked)  # one question, with the environments it may mean
    assert question.strip().endswith("?")
    assert "staging" in question
    assert "prod" in question
    assert not [e for e in asked if e.type is EventType.CONFIRM_REQUIRED]
    conversation = asked[-1].metadata["conversation_id"]
    # When the user answers with the environment alone
    answered = await say("тогда в прод", conversation)
    # Then the deploy it was about is what the agent reaches for: to prod, which needs an admin
    [denied] = [e for e in answered if isinstance(e, PermissionDenied)]
    assert (denied.tool, denied.required_role) == ("deploy_dashboard", "admin")
    assert "«администратор»" in answer(answered)
