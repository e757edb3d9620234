"""The agent as the chat function uses it: send a message, resolve a confirmation, see what waits.

`ChatAgent` builds a LangChain v1 agent (`create_agent`) with the policy middleware, the catalog's
tools and a checkpointer. Each call is independent of the instance that made the previous one:
state lives in the checkpoint, the runtime context is passed again on every call (LangGraph does
not checkpoint it), so a confirmation raised in one Lambda invocation is resumed in another.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Final, Literal, Protocol, runtime_checkable

from langchain.agents import create_agent
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.types import Checkpointer, Command, Interrupt, StreamMode

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.event_mapping import MODEL_NODE, EventMapper, map_agent_stream
from sstools_agent.agent.interrupts import ConfirmationAnswer, ConfirmationInterrupt
from sstools_agent.agent.middleware import (
    CANCELLED,
    FAILED,
    PolicyMiddleware,
    cancelled_message,
    mark_edited,
)
from sstools_agent.agent.plan_reads import PlanReader
from sstools_agent.agent.prefetch import PrefetchedObject, prefetch_object
from sstools_agent.agent.tools import build_tools
from sstools_agent.domain.attachment_content import (
    ModelAttachment,
    user_turn_text,
    without_attachment_blocks,
)
from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmationResult,
    ConfirmRequired,
    ConfirmResolved,
    Text,
    ToolStart,
)
from sstools_agent.domain.confirmation_outcomes import cancellation_text, outcome_text
from sstools_agent.domain.confirmations import (
    ExecutionState,
    NoPendingConfirmationError,
)
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.guardrails import GuardrailDecision
from sstools_agent.domain.plan_types import ChangePlan
from sstools_agent.domain.ports import ToolRunner
from sstools_agent.domain.read_retries import (
    NOT_A_FAILED_READ,
    FailedCall,
    RetryRefused,
    refuse_unless_read,
)
from sstools_agent.domain.role_policy import PermissionResult
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_calls import InvalidToolCall
from sstools_agent.domain.tool_output_summary import DEFAULT_BUDGET_CHARS
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.tool_routing import FOLLOW_UP, Intent, RoutingDecision, ToolRouter
from sstools_agent.domain.ui_context import UIContext, parse_ui_context
from sstools_agent.settings import DEFAULT_PLAN_TIMEOUT_S, DEFAULT_PREFETCH_TIMEOUT_S

STREAM_MODES: Final[list[StreamMode]] = ["messages", "updates", "custom"]
Durability = Literal["sync", "async", "exit"]
# Checkpoint at the end of a run (and at an interrupt) rather than at every step: measured
# 4 writes per turn instead of about 16 (make bench); a run that dies midway is retried whole.
DEFAULT_DURABILITY: Final[Durability] = "exit"


@dataclass(frozen=True, slots=True, kw_only=True)
class PendingConfirmation(ConfirmationInterrupt):
    """A tool call that waits for the user's decision: the interrupt's payload and its id."""

    interrupt_id: str

    @classmethod
    def of(cls, pending: Interrupt) -> PendingConfirmation:
        card = ConfirmationInterrupt.from_dict(pending.value)
        return cls(
            interrupt_id=pending.id,
            tool_call_id=card.tool_call_id,
            tool=card.tool,
            args=card.args,
            decision=card.decision,
            ui_context=card.ui_context,
        )


@dataclass
class InMemoryConfirmedCall:
    """A `ConfirmedCall` journaled in memory: for running the agent alone (tests, benchmarks);
    the chat function journals on the confirmation item."""

    tool_call_id: str
    fingerprint: str
    states: list[ExecutionState] = field(default_factory=list)

    @classmethod
    def of(cls, pending: PendingConfirmation) -> InMemoryConfirmedCall:
        return cls(pending.tool_call_id, pending.fingerprint)

    async def started(self) -> bool:
        if self.states:
            return False
        self.states.append(ExecutionState.STARTED)
        return True

    async def finished(self, outcome: ExecutionState) -> None:
        self.states.append(outcome)


# What the model reads in place of a confirmed call's result when its run was interrupted.
_INTERRUPTED_CODES: Final = {
    ExecutionState.SUCCEEDED: None,
    ExecutionState.FAILED: ErrorCode.TOOL_FAILURE,
    ExecutionState.UNKNOWN: ErrorCode.TOOL_OUTCOME_UNKNOWN,
    ExecutionState.STARTED: ErrorCode.TOOL_OUTCOME_UNKNOWN,
    ExecutionState.NOT_RUN: ErrorCode.TOOL_NOT_RUN,
}


def interrupted_call_message(
    tool: str,
    tool_call_id: str,
    outcome: ExecutionState,
    card_args: dict[str, Any] | None = None,
    edited_args: dict[str, Any] | None = None,
) -> ToolMessage:
    """The result of a confirmed call whose run was interrupted, as the model reads it (and,
    its text, the user): named by the arguments it was sent with (`outcome_text`)."""
    code = _INTERRUPTED_CODES[outcome]
    text = outcome_text(tool, outcome, card_args, edited_args)
    artifact: dict[str, Any] = {"output": {"outcome": outcome.value, "detail": text}}
    if code is not None:
        artifact = {"event": FAILED, "code": code.value}
    return ToolMessage(
        content=text,
        name=tool,
        tool_call_id=tool_call_id,
        status="success" if code is None else "error",
        artifact=artifact,
    )


def interrupted_call_events(
    tool: str,
    tool_call_id: str,
    outcome: ExecutionState,
    card_args: dict[str, Any] | None = None,
    edited_args: dict[str, Any] | None = None,
) -> list[ChatEvent]:
    """The tool card of a confirmed call whose run was interrupted."""
    message = interrupted_call_message(tool, tool_call_id, outcome, card_args, edited_args)
    return EventMapper("").on_tool_message(message)


@runtime_checkable
class HeldThreadReads(Protocol):
    """A checkpointer that reads a thread once while its turn holds it (TurnCheckpointer)."""

    def hold(self, thread_id: str, for_s: float) -> None: ...

    def release(self, thread_id: str) -> None: ...


class ChatAgent:
    """The LangGraph agent with ss-tools' policy, tools and checkpoints."""

    def __init__(
        self,
        model: BaseChatModel,
        checkpointer: Checkpointer,
        policy: ToolPolicy,
        upstream: ToolRunner,
        *,
        output_budget_chars: int = DEFAULT_BUDGET_CHARS,
        durability: Durability = DEFAULT_DURABILITY,
        router: ToolRouter | None = None,
        plan_timeout_s: float = DEFAULT_PLAN_TIMEOUT_S,
    ) -> None:
        self.durability = durability
        self.policy = policy
        self.upstream = upstream
        self.router = router
        self.plans = PlanReader(policy, upstream, plan_timeout_s)
        self.graph = create_agent(
            model,
            build_tools(policy, upstream, output_budget_chars),
            middleware=[PolicyMiddleware(policy)],
            context_schema=AgentRunContext,
            checkpointer=checkpointer,
        )

    @staticmethod
    def _config(thread_id: str) -> RunnableConfig:
        return {"configurable": {"thread_id": thread_id}}

    @contextmanager
    def holding(self, thread_id: str, for_s: float) -> Iterator[None]:
        """While the caller holds the conversation's lock (nothing else writes its thread), for
        at most `for_s` (its lease), the thread's checkpoint is read once, not once per question
        asked of it."""
        saver = self.graph.checkpointer
        if not isinstance(saver, HeldThreadReads):
            yield
            return
        saver.hold(thread_id, for_s)
        try:
            yield
        finally:
            saver.release(thread_id)

    async def prefetch(
        self, context: AgentRunContext, timeout_s: float = DEFAULT_PREFETCH_TIMEOUT_S
    ) -> PrefetchedObject | None:
        """The page object's summary, within `timeout_s` (None when there is none to have)."""
        return await prefetch_object(
            self.policy,
            self.upstream,
            context.who,
            context.ui_context,
            context.credentials,
            timeout_s=timeout_s,
            request_id=context.request_id,
        )

    async def plan(
        self, card: ConfirmationInterrupt, context: AgentRunContext
    ) -> ChangePlan | None:
        """The plan of the write (or the call with a cost) a card asks about, read as the user
        (None: a read the deployment asks to confirm, or a tool that declares no plan)."""
        spec = self.policy.catalog.get(card.tool)
        paid = spec is not None and bool(spec.cost)
        if card.decision.get("operation") != Operation.WRITE and not paid:
            return None
        environment = card.decision.get("environment")
        return await self.plans.read(
            card.tool,
            card.args,
            None if environment is None else str(environment),
            who=context.who,
            credentials=context.credentials,
            request_id=context.request_id,
        )

    async def route(
        self, message: str, context: AgentRunContext, thread_id: str | None = None
    ) -> RoutingDecision | None:
        """The router's tools for a new message, within what the policy allows (None without a
        router). A message that points at no tool of its own (a follow-up such as «тогда в прод»),
        or repeats the previous request («то же самое для датасета 4»), is routed together with
        the conversation's previous user message (`thread_id`). Embedding
        runs in a worker thread: the event loop keeps streaming."""
        if self.router is None:
            return None
        decision = await self._route(self.router, message, context)
        # A message whose own tools the policy keeps out here («failed» on a migration page)
        # points at no tool of its own either
        own = set(decision.ranked) & set(decision.offered)
        if (own and not FOLLOW_UP.search(message)) or thread_id is None:
            return decision
        previous = await self._previous_user_message(thread_id)
        if previous is None:
            return decision
        return await self._route(self.router, f"{previous}\n{message}", context)

    async def _route(
        self, router: ToolRouter, message: str, context: AgentRunContext
    ) -> RoutingDecision:
        selection = self.policy.select_tools(context.who, context.ui_context)
        page = context.ui_context
        return await asyncio.to_thread(
            router.route,
            message,
            selection.offered_names,
            prefetch_available=context.prefetched is not None,
            page_object=page.object_type.value if page and page.object_type else None,
            policy_removed={removal.tool: removal.rule.value for removal in selection.removed},
        )

    async def _previous_user_message(self, thread_id: str) -> str | None:
        state = await self.graph.aget_state(self._config(thread_id))
        messages = (state.values or {}).get("messages", [])
        earlier = [m for m in messages if isinstance(m, HumanMessage)]
        # The user's own words: the files' blocks would route by what a file holds
        return without_attachment_blocks(earlier[-1].text) if earlier else None

    async def pending_confirmation(self, thread_id: str) -> PendingConfirmation | None:
        """The confirmation this conversation waits for, if any."""
        state = await self.graph.aget_state(self._config(thread_id))
        for pending in state.interrupts:
            return PendingConfirmation.of(pending)
        return None

    def card_page(self, pending: PendingConfirmation) -> UIContext | None:
        """The page context the card was created in."""
        return self._page(pending.ui_context)

    def _page(self, payload: dict[str, Any] | None) -> UIContext | None:
        """A stored page context, parsed again (None for none, or one no longer valid)."""
        if payload is None:
            return None
        parsed = parse_ui_context(payload, self.policy.environments)
        return parsed if isinstance(parsed, UIContext) else None

    def check_read(self, call: FailedCall, role: Role | None) -> None:
        """RetryRefused unless `call` is a read: the guardrails decide, for this call where it
        was made, whether it reads or writes."""
        try:
            decision = self.policy.evaluate(role, call.tool, call.args, self._page(call.ui_context))
        except InvalidToolCall:
            raise RetryRefused(NOT_A_FAILED_READ) from None
        refuse_unless_read(call, decision.operation)

    async def retry_read(
        self, thread_id: str, call: FailedCall, context: AgentRunContext
    ) -> AsyncGenerator[ChatEvent]:
        """Runs the read `call` (a failed read again, or a write's status check) as a new call of
        the conversation: the model's
        request for it is added to the thread and the graph goes on from there, so the call
        passes the same checks as any (role, page, confirmation) and the model answers from
        its result with no tool to call (a repeat never leads on to a write). The call runs
        in the page context it was made in, whatever page asks for the repeat."""
        call_id = f"retry_{uuid.uuid4().hex[:24]}"
        request = AIMessage(
            content="",
            tool_calls=[{"name": call.tool, "args": call.args, "id": call_id, "type": "tool_call"}],
        )
        await self.graph.aupdate_state(
            self._config(thread_id), {"messages": [request]}, as_node=MODEL_NODE
        )
        yield ToolStart(call.tool, call.args, call_id)
        answer_only = RoutingDecision(Intent.UNKNOWN, (), (), (), ())
        page = self._page(call.ui_context)
        async for event in self._stream(
            thread_id, None, replace(context, ui_context=page, routing=answer_only, prefetched=None)
        ):
            yield event

    def permission_for(self, pending: PendingConfirmation, role: Role | None) -> PermissionResult:
        """Whether `role` may make the card's call now (a role can change after the card)."""
        return self.policy.check_invocation(
            role, pending.tool, pending.args, self.card_page(pending)
        )

    def decide_edit(
        self, pending: PendingConfirmation, edited_args: dict[str, Any], role: Role | None
    ) -> tuple[GuardrailDecision, dict[str, Any]]:
        """The decision for the card's call with `edited_args` in place of its arguments, made
        where the card was made, and the arguments as the tool takes them (validated, with its
        defaults: what is shown, fingerprinted and run). Raises InvalidToolCall for arguments the
        tool does not take, or for a tool the card's page no longer offers (FORBIDDEN)."""
        page = self.card_page(pending)
        call = self.policy.resolve(pending.tool, edited_args, page)
        if call is None:
            raise InvalidToolCall(pending.tool, "the tool is not known", ErrorCode.FORBIDDEN)
        decision = self.policy.evaluate(role, pending.tool, call.arguments, page)
        if decision.permission.allowed and not self.policy.select_tools(role, page).offers(
            pending.tool
        ):
            raise InvalidToolCall(
                pending.tool, "not available on the card's page", ErrorCode.FORBIDDEN
            )
        return decision, call.arguments

    async def close_interrupted(
        self,
        thread_id: str,
        pending: PendingConfirmation,
        outcome: ExecutionState,
        edited_args: dict[str, Any] | None = None,
    ) -> list[ChatEvent]:
        """Closes a confirmed call whose run was interrupted with what is known of it, so the
        model and the user hear the truth: not run, done, failed, or status unknown.

        A call confirmed with `edited_args` is closed as the call that was sent: the model is
        told so (its own message proposed the card's arguments), and a call that left opens
        its tool card again with the edited input (the stream that showed it may have died
        with its run), so the page and the history name the object that was sent."""
        message = interrupted_call_message(
            pending.tool, pending.tool_call_id, outcome, pending.args, edited_args
        )
        events: list[ChatEvent] = []
        if edited_args is not None:
            mark_edited(message, edited_args)
            if outcome is not ExecutionState.NOT_RUN:
                events.append(ToolStart(pending.tool, edited_args, pending.tool_call_id))
        await self.graph.aupdate_state(
            self._config(thread_id), {"messages": [message]}, as_node="tools"
        )
        return events + EventMapper(thread_id).on_tool_message(message)

    async def close_expired(self, thread_id: str, pending: PendingConfirmation) -> list[ChatEvent]:
        """Closes the call an expired card waits on, without running the model: the call is
        cancelled in the checkpoint (the model reads so at the next message) and the user is
        told `confirm_resolved(expired)` and the cancellation text. Nothing can run: no tool,
        no model turn."""
        reason = ConfirmationResult.EXPIRED
        message = cancelled_message(pending.tool, pending.tool_call_id, pending.args, reason.value)
        await self.graph.aupdate_state(
            self._config(thread_id), {"messages": [message]}, as_node="tools"
        )
        return [ConfirmResolved(reason), *EventMapper(thread_id).on_tool_message(message)]

    @staticmethod
    def card_of(thread_id: str, pending: PendingConfirmation) -> ConfirmRequired:
        """The `confirm_required` event of a pending confirmation, to show it again."""
        return EventMapper(thread_id).card(pending.interrupt_id, pending)

    async def _stream(
        self, thread_id: str, graph_input: Any, context: AgentRunContext
    ) -> AsyncIterator[ChatEvent]:
        mapper = EventMapper(thread_id)
        parts = self.graph.astream(
            graph_input,
            self._config(thread_id),
            context=context,
            stream_mode=STREAM_MODES,
            version="v2",
            durability=self.durability,
        )
        async for event in map_agent_stream(parts, mapper):
            yield event

    async def send(
        self,
        thread_id: str,
        message: str,
        context: AgentRunContext,
        attachments: Sequence[ModelAttachment] = (),
    ) -> AsyncGenerator[ChatEvent]:
        """Runs a turn for a new user message (and the files it attaches: each file's data
        block after the user's words; the bytes of an image or PDF, when the model takes them,
        go to this run's model calls as content blocks, never into the checkpoint).

        A confirmation still pending is cancelled first: its tool call gets an error ToolMessage
        (so no call dangles in the history) and the user is told, before the new message is taken.
        """
        pending = await self.pending_confirmation(thread_id)
        if pending is not None:
            await self.graph.aupdate_state(
                self._config(thread_id),
                {
                    "messages": [
                        ToolMessage(
                            content=f"CANCELLED (cancelled): the user sent a new message "
                            f"instead of confirming {pending.tool}; nothing was changed.",
                            name=pending.tool,
                            tool_call_id=pending.tool_call_id,
                            status="error",
                            artifact={
                                "event": CANCELLED,
                                "reason": ConfirmationResult.CANCELLED.value,
                            },
                        )
                    ]
                },
                as_node="tools",
            )
            yield ConfirmResolved(ConfirmationResult.CANCELLED)
            yield Text(cancellation_text(pending.tool, ConfirmationResult.CANCELLED, pending.args))
        text = user_turn_text(message, attachments)
        blocks = tuple(block for each in attachments for block in each.content_blocks())
        async for event in self._stream(
            thread_id,
            {"messages": [HumanMessage(content=text)]},
            replace(context, file_blocks=blocks) if blocks else context,
        ):
            yield event

    async def resolve(
        self,
        thread_id: str,
        result: ConfirmationResult,
        context: AgentRunContext,
        pending: PendingConfirmation | None = None,
        edited_args: dict[str, Any] | None = None,
    ) -> AsyncGenerator[ChatEvent]:
        """Resumes a pending confirmation: confirmed runs the tool; anything else rejects it.

        With `edited_args` the card's call is approved with those arguments instead (`result`
        is then confirmed, when the call runs, or superseded, when the edit asks again on a
        card of its own); the call's tool card shows the arguments it runs with.
        `pending` is the waiting call when the caller has just read it (else it is read here).
        Streams `confirm_resolved` first, then the rest of the turn. Raises
        NoPendingConfirmationError.
        """
        pending = pending or await self.pending_confirmation(thread_id)
        if pending is None:
            raise NoPendingConfirmationError(thread_id)
        answer = ConfirmationAnswer(result)
        edited = result in (ConfirmationResult.CONFIRMED, ConfirmationResult.SUPERSEDED)
        if edited_args is not None and edited:
            answer = ConfirmationAnswer(ConfirmationResult.CONFIRMED, edited_args)
        yield ConfirmResolved(result)
        if edited_args is not None and result is ConfirmationResult.CONFIRMED:
            yield ToolStart(pending.tool, edited_args, pending.tool_call_id)
        async for event in self._stream(
            thread_id,
            Command(resume={pending.interrupt_id: answer.to_dict()}),
            # Whatever page the request came from, the card's call runs where the card said.
            replace(context, ui_context=self.card_page(pending)),
        ):
            yield event
