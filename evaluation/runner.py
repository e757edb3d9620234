"""Runs scenarios through the real turn service on the local stack and observes each turn.

moto (in its own process) holds the template's resources, the sample upstream serves the tools
over HTTP (its seeded data reset before every scenario), and the chat function's app runs under
uvicorn: every turn is a `POST /api/agent/chat` whose SSE stream is read back into typed events,
exactly as the page reads it. The app is the chat function's own composition (router, prefetch,
stores); the model is the configured one (`MODEL_PROVIDER`, the stand-in unless
set), so the same run scores a real model when one is reachable.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import httpx

from evaluation.scenarios import Scenario, Turn
from evaluation.scoring import Call, Observed, needs_card
from functions.chat.app import create_app as create_chat_app
from local.agent_stack import (
    AgentStack,
    local_aws_and_upstream,
    minted_service_tokens,
    user_issuer,
)
from local.demo_users import DEMO_USERS
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmRequired,
    ErrorEvent,
    PermissionDenied,
    StreamEnd,
    StreamToken,
    Text,
    ToolEnd,
    ToolError,
    ToolStart,
)
from sstools_agent.domain.roles import Role
from sstools_agent.domain.ui_context import UIContext, parse_ui_context
from sstools_agent.settings import Settings
from sstools_agent.wiring.chat import build_chat

TURN_TIMEOUT_S = 120.0
"""A real model may take a while; the stand-in answers in well under a second."""


@dataclass(frozen=True, slots=True)
class ScenarioRun:
    """A scenario and what each of its turns showed the user."""

    scenario: Scenario
    observed: tuple[Observed, ...]


def card_text(card: ConfirmRequired) -> str:
    """What a confirmation card says, line by line as the page shows it: the badge, the plan's
    title, the warning, the plan, the impact."""
    plan = card.plan or {}
    lines = [
        card.decision.get("badge"),
        plan.get("title"),
        card.prompt,
        *(plan.get("lines") or []),
        plan.get("unread"),
        card.decision.get("impact"),
    ]
    return " ".join(str(line) for line in lines if line)


def answer_of(events: list[ChatEvent]) -> str:
    """What the user reads: the streamed answer, plain messages, card and refusal texts."""
    parts: list[str] = []
    for event in events:
        if isinstance(event, StreamToken):
            parts.append(event.token)
        elif isinstance(event, Text):
            parts.append(f" {event.text} ")
        elif isinstance(event, ConfirmRequired):
            parts.append(f" {card_text(event)} ")
        elif isinstance(event, PermissionDenied):
            parts.append(f" {event.prompt} ")
        elif isinstance(event, ErrorEvent):
            parts.append(f" {event.detail} ")
    return "".join(parts).strip()


def calls_of(events: list[ChatEvent], card: ConfirmRequired | None = None) -> tuple[Call, ...]:
    """The tools a turn called, once per call: those the model started (unless the policy
    denied them), and, after a confirm, the confirmed call (`card`) when it ran."""
    started: dict[str, Call] = {}
    denied: set[str] = set()
    for event in events:
        if isinstance(event, ToolStart):
            started.setdefault(event.tool_call_id, Call(event.tool, event.tool_input))
        elif isinstance(event, PermissionDenied):
            denied.add(event.tool_call_id)
        elif isinstance(event, ToolEnd | ToolError) and event.tool_call_id not in started:
            confirmed = card is not None and card.tool_call_id == event.tool_call_id
            args = card.tool_input if card is not None and confirmed else {}
            started[event.tool_call_id] = Call(event.tool, args)
    return tuple(call for call_id, call in started.items() if call_id not in denied)


def uncarded_calls(
    events: list[ChatEvent], card: ConfirmRequired | None = None
) -> tuple[Call, ...]:
    """The calls that needed a card and ran (their result came back) with none: neither the call
    the user confirmed (`card`) nor one whose card this turn shows (a call starts, then its card
    interrupts it before it runs)."""
    carded = {e.tool_call_id for e in events if isinstance(e, ConfirmRequired)}
    if card is not None:
        carded.add(card.tool_call_id)
    ran = {e.tool_call_id for e in events if isinstance(e, ToolEnd)}
    return tuple(
        call
        for event in events
        if isinstance(event, ToolStart)
        and event.tool_call_id in ran
        and event.tool_call_id not in carded
        for call in (Call(event.tool, event.tool_input),)
        if needs_card(call)
    )


async def _events(response: httpx.Response) -> AsyncIterator[ChatEvent]:
    data = ""
    async for line in response.aiter_lines():
        if line.startswith("data: "):
            data = line[6:]
        elif line == "" and data:
            yield ChatEvent.from_wire(json.loads(data))
            data = ""


class ScenarioRunner:
    """Plays scenarios against one chat app; each scenario is a new conversation."""

    def __init__(self, stack: AgentStack, url: str) -> None:
        self._stack = stack
        self._url = url
        self._issuer = user_issuer(stack.settings)

    def _allowed(self, role: str, page: dict[str, Any] | None) -> frozenset[str]:
        policy = self._stack.policy
        context = parse_ui_context(page, policy.environments) if page is not None else None
        parsed = context if isinstance(context, UIContext) else None
        return frozenset(policy.select_tools(Role(role), parsed).offered_names)

    async def run(self, scenario: Scenario) -> ScenarioRun:
        self._stack.upstream.reset()
        token = self._issuer.issue(DEMO_USERS[scenario.role], 600, {"roles": [scenario.role]})
        headers = {"Authorization": f"Bearer {token.token}"}
        allowed = self._allowed(scenario.role, scenario.page)
        conversation: str | None = None
        card: ConfirmRequired | None = None
        observed: list[Observed] = []
        async with httpx.AsyncClient(timeout=TURN_TIMEOUT_S) as client:
            for turn in scenario.turns:
                body = self._body(turn, scenario.page, conversation, card)
                async with client.stream(
                    "POST", f"{self._url}/api/agent/chat", json=body, headers=headers
                ) as response:
                    if response.status_code != 200:
                        refused = json.loads(await response.aread())
                        observed.append(
                            Observed(
                                (),
                                False,
                                refused.get("detail", ""),
                                allowed,
                                refused.get("code", ""),
                            )
                        )
                        continue
                    events = [event async for event in _events(response)]
                calls, uncarded = calls_of(events, card), uncarded_calls(events, card)
                cards = [e for e in events if isinstance(e, ConfirmRequired)]
                card = cards[-1] if cards else None
                ends = [e for e in events if isinstance(e, StreamEnd)]
                conversation = ends[-1].conversation_id if ends else conversation
                reply = "".join(e.token for e in events if isinstance(e, StreamToken))
                observed.append(
                    Observed(
                        calls,
                        bool(cards),
                        answer_of(events),
                        allowed,
                        reply=reply.strip(),
                        uncarded=uncarded,
                    )
                )
        return ScenarioRun(scenario, tuple(observed))

    @staticmethod
    def _body(
        turn: Turn,
        page: dict[str, Any] | None,
        conversation: str | None,
        card: ConfirmRequired | None,
    ) -> dict[str, Any]:
        body: dict[str, Any]
        if turn.action is not None:
            # A confirm with no card shown is sent anyway: the service's refusal is observed
            shown = card.confirmation_id if card is not None else None
            body = {"action": turn.action, "confirmation_id": shown or "no-card-was-shown"}
        else:
            body = {"message": turn.say}
        if conversation is not None:
            body["conversation_id"] = conversation
        if page is not None:
            body["ui_context"] = page
        return body


def chat_function_app(settings: Settings) -> Any:
    """The chat function's own composition (its model, router, prefetch, stores), with two
    parts swapped for a run without the REST API: service tokens are minted directly, and
    nothing is audited."""
    deps = replace(
        build_chat(settings), audit=MemoryAuditSink(), service_token=minted_service_tokens(settings)
    )
    router = deps.agent().router
    if router is not None:
        router.warm()  # the scores must not depend on how soon the encoder loaded
    return create_chat_app(deps)


@contextmanager
def local_stack() -> Iterator[ScenarioRunner]:
    """moto, the sample upstream and the chat function with the configured model, for one run."""
    with (
        local_aws_and_upstream("eval") as stack,
        serve(chat_function_app(stack.settings), lifespan="on") as url,
    ):
        yield ScenarioRunner(stack, url)
