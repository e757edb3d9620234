"""AG-UI 1.0 on the chat function: the same turns, a second wire encoding (docs/ag-ui.md).

`chat_request_of` reads AG-UI's `RunAgentInput` as the chat request it means (a new user message,
or the answer to the open interrupt), so the turn service checks it exactly as it checks
`/api/agent/chat`. `AgUiEncoder` writes the turn's events as AG-UI events with the package's own
models and `EventEncoder`: one run per response, opened by RUN_STARTED and closed by
RUN_FINISHED (success, interrupt or cancelled) or RUN_ERROR.
"""

from __future__ import annotations

import json
import logging
import re
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any, Final

from ag_ui.core import (
    PROTOCOL_VERSION,
    BaseEvent,
    CustomEvent,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from ag_ui.encoder import EventEncoder
from fastapi.exceptions import RequestValidationError
from pydantic import ValidationError

from sstools_agent.chat.prepared_turn import PreparedTurn, ThreadRules
from sstools_agent.chat.request import ChatRequestBody
from sstools_agent.domain.chat_events import (
    ChatEvent,
    ConfirmationResult,
    ConfirmRequired,
    ConfirmResolved,
    ErrorEvent,
    PermissionDenied,
    StreamEnd,
    StreamToken,
    Text,
    ToolEnd,
    ToolError,
    ToolsRouted,
    ToolStart,
)
from sstools_agent.domain.confirmations import (
    CardWaits,
    Confirmation,
    ConfirmationDecided,
    ConfirmationExpired,
    ConfirmationNotFound,
    ConfirmationNotPermitted,
    InvalidEdit,
    InvalidResume,
    NoPendingConfirmationError,
)
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.http.refusals import refusal_of

logger = logging.getLogger(__name__)

AG_UI_THREADS: Final = ThreadRules(
    created_on_first_use=True, new_input_refused_while_a_card_waits=True
)
"""AG-UI's threads: the client names a new thread's id; a pending interrupt blocks new input."""
AG_UI_ANSWERS: Final = replace(AG_UI_THREADS, an_expired_card_refuses_answers=True)
"""For a `resolved` answer: a stale one is a RUN_ERROR. A `cancelled` one is still taken (the
client cancels an expired interrupt to go on), and resolves the card as expired."""

CUSTOM_PREFIX: Final = "ss-tools."
PERMISSION_DENIED: Final = CUSTOM_PREFIX + "permission_denied"
CONFIRM_RESOLVED: Final = CUSTOM_PREFIX + "confirm_resolved"
TOOLS_ROUTED: Final = CUSTOM_PREFIX + "tools_routed"
CALL_EDITED: Final = CUSTOM_PREFIX + "call_edited"
INTERRUPT_REASON: Final = "tool_call"
RAN_OR_ASKS_AGAIN: Final = frozenset(
    {ConfirmationResult.CONFIRMED, ConfirmationResult.SUPERSEDED, ConfirmationResult.STALE}
)
"""The answers after which the held call runs, or waits on its next interrupt."""
APPROVAL_SCHEMA: Final = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "editedArgs": {
            "type": "object",
            "description": "Full replacement of the tool args. Not merged. The tool cannot "
            "change; a riskier or re-targeted call asks again on a new interrupt.",
        },
    },
    "required": ["approved"],
}
"""The answer a confirmation interrupt takes; `editedArgs` is the approve-with-edits signal."""


INTERRUPT_REFUSALS: Final = (
    CardWaits,
    InvalidResume,
    InvalidEdit,
    ConfirmationNotFound,
    ConfirmationDecided,
    ConfirmationExpired,
    ConfirmationNotPermitted,
    NoPendingConfirmationError,
)
"""Refusals that AG-UI's interrupt rules answer with RUN_ERROR, not an HTTP status: new input
while an interrupt is open, a resume of an interrupt unknown, answered or expired, a payload
the interrupt cannot take. Each carries the chat refusal table's code and text."""


def waiting_card(confirmation: Confirmation) -> dict[str, Any]:
    """RUN_ERROR's metadata when an interrupt blocks new input: which one to answer."""
    return {
        "interruptId": confirmation.confirmation_id,
        "toolCallId": confirmation.tool_call_id,
        "tool": confirmation.tool,
        "expiresAt": confirmation.expires_iso,
    }


def rules_for(run: RunAgentInput) -> ThreadRules:
    """The thread rules the run is checked under."""
    if run.resume and all(entry.status == "resolved" for entry in run.resume):
        return AG_UI_ANSWERS
    return AG_UI_THREADS


def chat_request_of(run: RunAgentInput) -> ChatRequestBody:
    """The chat request an AG-UI run carries: the answer to the open interrupt when the run
    resumes, else its last message, which must be a new user message (the server keeps the
    thread's history; the client's copy of it is not read). The page context is
    `forwardedProps.uiContext`. RequestValidationError (422) for what the chat request refuses,
    InvalidResume for a resume AG-UI's rules refuse."""
    props = run.forwarded_props if run.forwarded_props is not None else {}
    if not isinstance(props, dict):
        _refuse("forwardedProps", "forwardedProps is an object (the page context is its uiContext)")
    fields: dict[str, Any] = {
        "conversation_id": run.thread_id,
        "ui_context": props.get("uiContext"),
    }
    if run.tools:
        _refuse("tools", "frontend tools are not supported: the agent offers its own tools only")
    if run.resume:
        fields |= _answer(run.resume)
    else:
        message, file_ids = _new_message(run)
        fields |= {"message": message, "files": [{"file_id": each} for each in file_ids]}
    try:
        return ChatRequestBody.model_validate(fields)
    except ValidationError as invalid:
        raise RequestValidationError(invalid.errors()) from None


def _refuse(field: str, message: str) -> None:
    raise RequestValidationError([{"loc": ("body", field), "msg": message, "type": "value_error"}])


FILE_URL: Final = re.compile(r"/api/assistant/files/(?P<file_id>[0-9a-f]{32})")
"""A part's url source that names a file uploaded through `POST /api/assistant/files`."""


def _new_message(run: RunAgentInput) -> tuple[str, list[str]]:
    """The last user message's text, and the ids of the files it attaches: image or document
    parts whose source is the url `/api/assistant/files/<file_id>` of a file uploaded through
    that endpoint (docs/attachments.md). Bytes inline, or any other url, are refused: files
    never travel in a request here, and the server fetches nothing a client names."""
    last = run.messages[-1] if run.messages else None
    if last is None or last.role != "user":
        _refuse("messages", "the run carries no new user message (the last message must be one)")
    content: Any = getattr(last, "content", "")
    if isinstance(content, str):
        return content, []
    texts: list[str] = []
    file_ids: list[str] = []
    for part in content:
        kind = getattr(part, "type", None)
        source = getattr(part, "source", None)
        by_url = getattr(source, "type", None) == "url"
        named = FILE_URL.fullmatch(str(getattr(source, "value", ""))) if by_url else None
        if kind == "text":
            texts.append(str(getattr(part, "text", "")))
        elif kind in ("image", "document") and named:
            file_ids.append(named.group("file_id"))
        else:
            _refuse(
                "messages",
                "a user message holds text parts, and image or document parts whose source is "
                "the url /api/assistant/files/<file_id> of an uploaded file (POST "
                "/api/assistant/files); inline data and other urls are not taken",
            )
    return "".join(texts), file_ids


def _answer(resume: list[ResumeEntry]) -> dict[str, Any]:
    """The chat action a resume means: `resolved` with `approved: true` confirms (with
    `editedArgs`, approves the edited call); `approved: false` or `cancelled` denies."""
    if len(resume) != 1:
        raise InvalidResume(
            f"a thread has at most one open interrupt here; the resume answers {len(resume)}"
        )
    entry = resume[0]
    fields: dict[str, Any] = {"confirmation_id": entry.interrupt_id}
    if entry.status == "cancelled":
        return fields | {"action": "deny"}
    payload = entry.payload if isinstance(entry.payload, dict) else {}
    approved = payload.get("approved")
    if not isinstance(approved, bool):
        raise InvalidResume("a resolved interrupt needs payload.approved, true or false")
    edited = payload.get("editedArgs")
    if edited is not None and not (approved and isinstance(edited, dict)):
        raise InvalidResume("payload.editedArgs is an object, and only with approved: true")
    if not approved:
        return fields | {"action": "deny"}
    if edited is not None:
        return fields | {"action": "edit", "edited_args": edited}
    return fields | {"action": "confirm"}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _new_id() -> str:
    return uuid.uuid4().hex


class AgUiEncoder:
    """One response's AG-UI run: RUN_STARTED, the turn's events, and the run's end.

    `resumed_call` is the tool call a resume answers: its TOOL_CALL_START went out in the run
    that asked, so its result comes back against that id and it is not started again.
    `stopped` says, when the turn ends, whether a cancel request stopped it."""

    media_type: Final = "text/event-stream"

    def __init__(
        self,
        thread_id: str,
        run_id: str,
        *,
        resumed_call: str | None = None,
        stopped: Callable[[], bool] = lambda: False,
    ) -> None:
        self.thread_id, self.run_id = thread_id, run_id
        self.resumed_call, self.stopped = resumed_call, stopped
        self._sse = EventEncoder()
        self._started = False
        self._ended = False
        self._text: str | None = None
        self._card: ConfirmRequired | None = None

    def for_turn(self, turn: PreparedTurn) -> AgUiEncoder:
        """This encoder bound to the turn it writes: the call a resume answers, and whether a
        cancel request stopped it."""
        self.resumed_call = turn.confirmation.tool_call_id if turn.confirmation else None
        self.stopped = lambda: turn.stopped
        return self

    def frame(self, event_id: str | None, event: ChatEvent) -> bytes:
        if self._ended:
            logger.warning("an event after the run ended", extra={"event": type(event).__name__})
            return b""
        return self._encode(self._opening() + self._events_of(event))

    def close(self) -> bytes | None:
        """Nothing: the turn's `stream_end` closes the run."""
        return None

    def refusal(self, code: ErrorCode, message: str, metadata: dict[str, Any] | None) -> bytes:
        """A whole run refused as AG-UI asks for interrupt errors: RUN_STARTED, RUN_ERROR."""
        error = RunErrorEvent(message=message, code=code.value, metadata=metadata)
        self._ended = True
        return self._encode([*self._opening(), error])

    def refused(self, refusal: Exception, action: str | None) -> bytes:
        """A whole run for a request AG-UI's interrupt rules refuse (`INTERRUPT_REFUSALS`):
        RUN_ERROR with the refusal table's code and text, and, for new input while an interrupt
        is open, which one to answer. A «no» to an interrupt whose expiry was told already has
        its answer instead: it is resolved, as expired (`expiry_told`)."""
        if isinstance(refusal, ConfirmationExpired) and action == "deny":
            return self.expiry_told()
        _, code, detail = refusal_of(refusal)
        metadata = waiting_card(refusal.confirmation) if isinstance(refusal, CardWaits) else None
        return self.refusal(code, detail, metadata)

    def expiry_told(self) -> bytes:
        """A whole run for a «no» to an interrupt whose expiry was told already (at expiry
        time): it is resolved, as expired, and nothing ran; the run succeeds."""
        self._ended = True
        resolved = CustomEvent(
            name=CONFIRM_RESOLVED, value={"result": ConfirmationResult.EXPIRED.value}
        )
        finished = RunFinishedEvent(
            thread_id=self.thread_id, run_id=self.run_id, outcome=RunFinishedSuccessOutcome()
        )
        return self._encode([*self._opening(), resolved, finished])

    def _encode(self, events: list[BaseEvent]) -> bytes:
        return "".join(self._sse.encode(event) for event in events).encode()

    def _opening(self) -> list[BaseEvent]:
        if self._started:
            return []
        self._started = True
        return [
            RunStartedEvent(
                thread_id=self.thread_id, run_id=self.run_id, protocol_version=PROTOCOL_VERSION
            )
        ]

    def _close_text(self) -> list[BaseEvent]:
        if self._text is None:
            return []
        message_id, self._text = self._text, None
        return [TextMessageEndEvent(message_id=message_id)]

    def _events_of(self, event: ChatEvent) -> list[BaseEvent]:
        """The AG-UI events of one of the turn's events (`_WRITERS`, one method a type)."""
        writer = _WRITERS.get(type(event))
        return writer(self, event) if writer is not None else []

    def _token(self, event: StreamToken) -> list[BaseEvent]:
        if not event.token:
            return []
        opening: list[BaseEvent] = []
        if self._text is None:
            self._text = _new_id()
            opening.append(TextMessageStartEvent(message_id=self._text, role="assistant"))
        return [*opening, TextMessageContentEvent(message_id=self._text, delta=event.token)]

    def _whole_text(self, event: Text) -> list[BaseEvent]:
        if not event.text:
            return []
        message_id = _new_id()
        return [
            *self._close_text(),
            TextMessageStartEvent(message_id=message_id, role="assistant"),
            TextMessageContentEvent(message_id=message_id, delta=event.text),
            TextMessageEndEvent(message_id=message_id),
        ]

    def _tool_start(self, event: ToolStart) -> list[BaseEvent]:
        call = event.tool_call_id
        if call == self.resumed_call:
            # The call an edit approved: its TOOL_CALL_START went out in the run that asked (a
            # second one would append to its arguments), so the arguments it runs with are said.
            edited = {"toolCallId": call, "tool": event.tool, "args": event.tool_input}
            return [*self._close_text(), CustomEvent(name=CALL_EDITED, value=edited)]
        return [
            *self._close_text(),
            ToolCallStartEvent(tool_call_id=call, tool_call_name=event.tool),
            ToolCallArgsEvent(tool_call_id=call, delta=_json(event.tool_input)),
            ToolCallEndEvent(tool_call_id=call),
        ]

    def _tool_end(self, event: ToolEnd) -> list[BaseEvent]:
        reference, metadata = event.reference, None
        if reference is not None:
            metadata = {
                "outputRef": reference.output_ref,
                "outputBytes": reference.output_bytes,
                "truncated": reference.truncated,
            }
        return [*self._close_text(), self._result(event.tool_call_id, event.output, metadata)]

    def _tool_error(self, event: ToolError) -> list[BaseEvent]:
        failure = {"error": event.error, "code": event.code.value}
        marked = {"error": True, "code": event.code.value}
        result = self._result(event.tool_call_id, failure, marked)
        return [*self._close_text(), result]

    def _permission_denied(self, event: PermissionDenied) -> list[BaseEvent]:
        denial = {
            "tool": event.tool,
            "requiredRole": event.required_role,
            "toolCallId": event.tool_call_id,
            "message": event.prompt,
        }
        failure = {"error": event.prompt, "code": ErrorCode.FORBIDDEN.value}
        marked = {"error": True, "code": ErrorCode.FORBIDDEN.value}
        return [
            *self._close_text(),
            self._result(event.tool_call_id, failure, marked),
            CustomEvent(name=PERMISSION_DENIED, value=denial),
        ]

    def _card_shown(self, event: ConfirmRequired) -> list[BaseEvent]:
        self._card = event  # the run ends with it as its interrupt
        return self._close_text()

    def _resolved(self, event: ConfirmResolved) -> list[BaseEvent]:
        resolved: list[BaseEvent] = [
            CustomEvent(name=CONFIRM_RESOLVED, value={"result": event.result.value})
        ]
        if self.resumed_call is not None and event.result not in RAN_OR_ASKS_AGAIN:
            # The call the interrupt held is closed in the client's history too: it did not run.
            not_run = {
                "error": f"not run: {event.result.value}",
                "code": ErrorCode.TOOL_NOT_RUN.value,
            }
            marked = {"error": True, "code": ErrorCode.TOOL_NOT_RUN.value}
            resolved.append(self._result(self.resumed_call, not_run, marked))
        return resolved

    def _routed(self, event: ToolsRouted) -> list[BaseEvent]:
        return [CustomEvent(name=TOOLS_ROUTED, value=event.routing)]

    def _error(self, event: ErrorEvent) -> list[BaseEvent]:
        self._ended = True
        return [*self._close_text(), RunErrorEvent(message=event.detail, code=event.code.value)]

    def _end(self, event: StreamEnd) -> list[BaseEvent]:
        self._ended = True
        return [*self._close_text(), self._finished(event)]

    def _result(self, call: str, output: Any, metadata: dict[str, Any] | None) -> BaseEvent:
        content = output if isinstance(output, str) else _json(output)
        return ToolCallResultEvent(
            message_id=_new_id(), tool_call_id=call, content=content, role="tool", metadata=metadata
        )

    def _finished(self, end: StreamEnd) -> RunFinishedEvent:
        outcome: Any = RunFinishedSuccessOutcome()
        if self._card is not None:
            outcome = RunFinishedInterruptOutcome(interrupts=[interrupt_of(self._card)])
        elif self.stopped():
            outcome = RunFinishedCancelledOutcome()
        return RunFinishedEvent(
            thread_id=self.thread_id,
            run_id=self.run_id,
            outcome=outcome,
            result={
                "conversationId": end.conversation_id,
                "userMessageId": end.user_message_id,
                "assistantMessageId": end.assistant_message_id,
            },
        )


_WRITERS: Final[dict[type[ChatEvent], Callable[[AgUiEncoder, Any], list[BaseEvent]]]] = {
    StreamToken: AgUiEncoder._token,
    Text: AgUiEncoder._whole_text,
    ToolStart: AgUiEncoder._tool_start,
    ToolEnd: AgUiEncoder._tool_end,
    ToolError: AgUiEncoder._tool_error,
    PermissionDenied: AgUiEncoder._permission_denied,
    ConfirmRequired: AgUiEncoder._card_shown,
    ConfirmResolved: AgUiEncoder._resolved,
    ToolsRouted: AgUiEncoder._routed,
    ErrorEvent: AgUiEncoder._error,
    StreamEnd: AgUiEncoder._end,
}
"""How each of the turn's event types is written in AG-UI."""


def interrupt_of(card: ConfirmRequired) -> Interrupt:
    """A confirmation card as an AG-UI interrupt: answered by the confirmation's id."""
    return Interrupt(
        id=card.confirmation_id or card.interrupt_id,
        reason=INTERRUPT_REASON,
        message=card.prompt,
        tool_call_id=card.tool_call_id,
        expires_at=card.expires_at,
        response_schema=APPROVAL_SCHEMA,
        metadata={
            "decision": card.decision,
            "tool": card.tool,
            "input": card.tool_input,
            "confirmationId": card.confirmation_id,
            "plan": card.plan,
        },
    )
