"""Policy middleware: the per-turn tool set and prompt, and the checks before every tool call.

Why not HumanInTheLoopMiddleware: its card must be the GuardrailDecision, the permission check must
come before any card (a denied user sees «Недостаточно прав», never a confirm button), and a
reject must carry why (denied, expired, cancelled). One `interrupt()` inside `awrap_tool_call` does
all three, and runs again identically on resume (the policy is deterministic).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final, cast

import anyio
from langchain.agents.middleware import (
    AgentMiddleware,
    AgentState,
    ModelRequest,
    ModelResponse,
    ToolCallRequest,
)
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langgraph.types import Command, interrupt

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.interrupts import ConfirmationAnswer, ConfirmationInterrupt
from sstools_agent.agent.prompts import system_prompt
from sstools_agent.domain.confirmations import ExecutionState, fingerprint
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.guardrails import GuardrailDecision, edit_asks_again, policy_record
from sstools_agent.domain.tool_calls import InvalidToolCall
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.tool_runs import ToolCallFailed

# `artifact["event"]` of the ToolMessages this middleware writes, read by the event mapping.
PERMISSION_DENIED: Final = "permission_denied"
CANCELLED: Final = "cancelled"
FAILED: Final = "failed"
EDITED_ARGS: Final = "edited_args"
POLICY: Final = "policy"
"""The artifact key of a call run without a card: the policies that allowed it (and a log-only
trial), for its `tool_called` record (a card's call is audited with its card)."""
"""`artifact[EDITED_ARGS]`: the arguments a call confirmed with edits was confirmed with. The
model is told of them when it reads the message (`with_edit_notes`); the message's content, the
text the user is shown and the history keeps, stays the outcome alone."""


class ModelUnavailableError(Exception):
    """The chat model could not answer (network, quota, provider error): LLM_UNAVAILABLE."""


def _refusal(request: ToolCallRequest, content: str, artifact: dict[str, Any]) -> ToolMessage:
    call = request.tool_call
    return ToolMessage(
        content=content,
        name=call["name"],
        tool_call_id=call["id"] or "",
        status="error",
        artifact=artifact,
    )


def cancelled_message(
    tool: str, tool_call_id: str, args: dict[str, Any], reason: str
) -> ToolMessage:
    """The result of a call whose card was not confirmed (`reason`: denied, expired, …): the
    model reads that nothing ran; the user's text is written from `args` (the card's)."""
    return ToolMessage(
        content=(
            f"CANCELLED ({reason}): the user did not confirm {tool}; nothing was changed. "
            "Do not retry unless the user asks."
        ),
        name=tool,
        tool_call_id=tool_call_id,
        status="error",
        artifact={"event": CANCELLED, "reason": reason, "args": args},
    )


def with_file_blocks(
    messages: Sequence[AnyMessage], blocks: Sequence[dict[str, Any]]
) -> list[AnyMessage]:
    """`messages` with `blocks` (images, PDFs) after the last user message's text, as the model
    is sent them; the stored messages are left as they are."""
    shown = list(messages)
    if not blocks:
        return shown
    for index in range(len(shown) - 1, -1, -1):
        message = shown[index]
        if isinstance(message, HumanMessage):
            content = [{"type": "text", "text": message.text}, *blocks]
            shown[index] = message.model_copy(update={"content": content})
            break
    return shown


def with_edit_notes(messages: Sequence[AnyMessage]) -> list[AnyMessage]:
    """`messages` as the model is sent them: the result of a call confirmed with edits opens
    with a note of the arguments it was confirmed with (the model's own message proposed
    others); the stored messages are left as they are."""
    shown = list(messages)
    for index, message in enumerate(shown):
        artifact = message.artifact if isinstance(message, ToolMessage) else None
        if isinstance(artifact, dict) and isinstance(artifact.get(EDITED_ARGS), dict):
            content = f"{edited_call_note(artifact[EDITED_ARGS])}\n{_text_of(message.content)}"
            shown[index] = message.model_copy(update={"content": content})
    return shown


def mark_edited(message: ToolMessage, edited_args: dict[str, Any]) -> ToolMessage:
    """`message`, the result of a call confirmed with `edited_args`, marked so that the model
    is told of the edit (see EDITED_ARGS); its content, what the user reads, is unchanged."""
    artifact = message.artifact if isinstance(message.artifact, dict) else {}
    message.artifact = {**artifact, EDITED_ARGS: edited_args}
    return message


class PolicyMiddleware(AgentMiddleware[AgentState[Any], AgentRunContext]):
    """Applies the ToolPolicy to every model call and every tool call."""

    def __init__(self, policy: ToolPolicy) -> None:
        super().__init__()
        self.policy = policy

    async def awrap_model_call(
        self,
        request: ModelRequest[AgentRunContext],
        handler: Callable[[ModelRequest[AgentRunContext]], Awaitable[ModelResponse]],
    ) -> ModelResponse:
        """Binds only the tools this user may use on this page; puts the context in the prompt;
        shows this turn's images and PDFs (`AgentRunContext.file_blocks`) and the edits calls
        were confirmed with."""
        context = request.runtime.context
        selection = self.policy.select_tools(context.who, context.ui_context)
        tools = [t for t in request.tools if selection.offers(getattr(t, "name", ""))]
        if context.routing is not None:  # the router only narrows what the policy allows
            routed = set(context.routing.offered)
            tools = [t for t in tools if getattr(t, "name", "") in routed]
        narrowed = request.override(
            tools=tools,
            system_message=SystemMessage(
                content=system_prompt(context.ui_context, context.prefetched, selection.removed)
            ),
            messages=with_file_blocks(with_edit_notes(request.messages), context.file_blocks),
        )
        try:
            return await handler(narrowed)
        except Exception as error:
            raise ModelUnavailableError(f"{type(error).__name__}: {error}") from error

    def _checked(
        self, request: ToolCallRequest, context: AgentRunContext
    ) -> ToolMessage | GuardrailDecision:
        """The call's decision, or a refusal: bad arguments, no permission, not on this page."""
        name, args = request.tool_call["name"], request.tool_call["args"]
        try:
            decision = self.policy.evaluate(context.who, name, args, context.ui_context)
        except InvalidToolCall as invalid:
            return _refusal(
                request,
                f"{invalid.code}: {invalid.detail}",
                {"event": FAILED, "code": invalid.code.value},
            )
        if not decision.permission.allowed:
            tell = (
                f"Tell the user: {decision.permission.notice}"
                if decision.permission.notice
                else "Tell the user which role is required"
            )
            return _refusal(
                request,
                f"PERMISSION_DENIED: {decision.permission.reason}. The tool was not run. "
                f"{tell}; do not retry.",
                {"event": PERMISSION_DENIED, "decision": decision.to_payload()},
            )
        if not self.policy.select_tools(context.who, context.ui_context).offers(name):
            return _refusal(
                request,
                f"{name} is not available on this page; the tool was not run.",
                {"event": FAILED, "code": ErrorCode.FORBIDDEN.value},
            )
        return decision

    def _gate(
        self, request: ToolCallRequest
    ) -> ToolMessage | tuple[ToolCallRequest, GuardrailDecision] | GuardrailDecision:
        """A refusal for a call that must not run now; the call the user just confirmed (with
        the arguments they confirmed) and its decision; the decision alone for a call that may
        run without a card."""
        context = cast(AgentRunContext, request.runtime.context)
        decision = self._checked(request, context)
        if isinstance(decision, ToolMessage) or not decision.requires_confirmation:
            return decision
        name, args = request.tool_call["name"], request.tool_call["args"]
        earlier = self._earlier_card(request, context)
        if earlier is not None:
            return _refusal(
                request,
                f"NOT RUN: {earlier} in the same step waits for the user's confirmation first; "
                f"one confirmation at a time, so {name} was not run and nothing was changed. "
                "Ask for it again once that one is decided.",
                {"event": FAILED, "code": ErrorCode.TOOL_NOT_RUN.value},
            )
        # The page context goes with the card: a resume runs the call where the card said.
        page = context.ui_context.to_payload() if context.ui_context is not None else None
        call_id = request.tool_call["id"] or ""
        card = ConfirmationInterrupt(call_id, name, args, decision.to_payload(), page)
        answer = ConfirmationAnswer.from_dict(interrupt(card.to_dict()))
        # An approval with edits replaces the arguments in full (the tool stays the card's): the
        # edited call is checked as a call of its own, and asks again on a card of its own when
        # the card's approval does not cover it. Each card is one `interrupt()`, so a resume
        # passes the earlier answers again and arrives at the same card (LangGraph's rule).
        # A confirm the chat function found stale (the world changed since the card's plan was
        # read) runs nothing: the same call asks again, on a card whose plan is read afresh.
        while answer.stale or (answer.approved and answer.edited_args is not None):
            edited_args = answer.edited_args
            if answer.stale or edited_args is None:
                answer = ConfirmationAnswer.from_dict(interrupt(card.to_dict()))
                continue
            edited_request = request.override(tool_call={**request.tool_call, "args": edited_args})
            edited = self._checked(edited_request, context)
            if isinstance(edited, ToolMessage):
                return edited
            request, decision = edited_request, edited
            spec = self.policy.catalog.get(name)
            if not edit_asks_again(spec, card.args, card.decision, edited_args, edited):
                return request, decision
            card = ConfirmationInterrupt(call_id, name, edited_args, edited.to_payload(), page)
            answer = ConfirmationAnswer.from_dict(interrupt(card.to_dict()))
        if answer.approved:
            return request, decision
        # the card's arguments: what the user is told was not run names them
        return cancelled_message(name, call_id, request.tool_call["args"], answer.result.value)

    def _earlier_card(self, request: ToolCallRequest, context: AgentRunContext) -> str | None:
        """The tool of an earlier call of the same model message that needs a confirmation too.

        One card at a time: each card is the one call its confirmation runs, and a resume must
        never reach a sibling card's call (it would get a second card and could run twice)."""
        call_id = request.tool_call["id"]
        for message in reversed(request.state.get("messages", [])):
            calls = getattr(message, "tool_calls", None) or []
            if not any(call["id"] == call_id for call in calls):
                continue
            for call in calls:
                if call["id"] == call_id:
                    return None
                try:
                    sibling = self.policy.evaluate(
                        context.who, call["name"], call["args"], context.ui_context
                    )
                except InvalidToolCall:
                    continue
                if sibling.requires_confirmation:
                    return str(call["name"])
        return None

    async def _run_confirmed(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
        decision: GuardrailDecision,
    ) -> ToolMessage | Command[Any]:
        """Runs the confirmed call only if it is the card's call, journaling its execution:
        `started` is stored before the call leaves, its outcome after, even when cancelled."""
        confirmed = cast(AgentRunContext, request.runtime.context).confirmed_call
        call = request.tool_call
        shown = fingerprint(call["name"], call["args"], decision.environment, decision.risk.value)
        if confirmed is None or confirmed.tool_call_id != call["id"]:
            return _not_run(request, "no confirmation was given for this call")
        if confirmed.fingerprint != shown:
            return _not_run(request, "the call differs from the one the card showed")
        with anyio.CancelScope(shield=True):
            started = await confirmed.started()
        if not started:
            return _not_run(request, "this confirmation was already used")
        outcome = ExecutionState.UNKNOWN
        try:
            result = await self._run(request, handler)
            outcome = _outcome_of(result)
            return result
        finally:
            with anyio.CancelScope(shield=True):
                await confirmed.finished(outcome)

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """Role, page and confirmation checks before the tool runs; failures become messages."""
        verdict = self._gate(request)
        if isinstance(verdict, ToolMessage):
            return verdict
        if isinstance(verdict, GuardrailDecision):
            ran = await self._run(request, handler)
            if isinstance(ran, ToolMessage):
                artifact = ran.artifact if isinstance(ran.artifact, dict) else {}
                ran.artifact = {**artifact, POLICY: policy_record(verdict.to_payload())}
            return ran
        confirmed_request, decision = verdict
        result = await self._run_confirmed(confirmed_request, handler, decision)
        edited_args = confirmed_request.tool_call["args"]
        if edited_args is not request.tool_call["args"] and isinstance(result, ToolMessage):
            # The model's own message still names the arguments it proposed: it is told what ran.
            mark_edited(result, edited_args)
        return result

    @staticmethod
    async def _run(
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        try:
            return await handler(request)
        except ToolCallFailed as failed:
            return _refusal(
                request,
                f"{failed.code}: {failed.detail}",
                {
                    "event": FAILED,
                    "code": failed.code.value,
                    "attempts": failed.attempts,
                    "status_unknown": failed.status_unknown,
                },
            )
        except InvalidToolCall as invalid:
            return _refusal(
                request,
                f"{invalid.code}: {invalid.detail}",
                {"event": FAILED, "code": invalid.code.value},
            )


def _not_run(request: ToolCallRequest, why: str) -> ToolMessage:
    return _refusal(
        request,
        f"NOT RUN: {why}; nothing was changed. Do not retry unless the user asks.",
        {"event": FAILED, "code": ErrorCode.NO_PENDING_CONFIRMATION.value},
    )


def edited_call_note(edited_args: dict[str, Any]) -> str:
    """What the model reads before the result of a call the user confirmed with edits: its own
    message names the arguments it proposed, not the ones that were sent."""
    note = json.dumps(edited_args, ensure_ascii=False, sort_keys=True)
    return (
        f"The user edited the arguments on the card before confirming, to {note}; this result "
        "is of the call with those arguments, not with the arguments you proposed."
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False, default=str)


def _outcome_of(result: ToolMessage | Command[Any]) -> ExecutionState:
    if not isinstance(result, ToolMessage) or result.status != "error":
        return ExecutionState.SUCCEEDED
    artifact = result.artifact if isinstance(result.artifact, dict) else {}
    return ExecutionState.UNKNOWN if artifact.get("status_unknown") else ExecutionState.FAILED
