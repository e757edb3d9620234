"""Gradio's client protocol (`sse_v3`) on the chat function: the same turns, a third wire encoding
(docs/gradio.md).

What `@gradio/client` reads: a static config (one dependency, `api_name: "chat"`, a generator
with four named inputs and one JSON output) and its API info; a join answered with an event id;
one SSE stream per session whose messages carry each chat event as the output's value
(`event.data[0]`). Here: those documents, the join's inputs read as the chat request they mean
(`chat_request_of`), and `GradioMessages`, the stream's messages. Where the turns are kept
between the join and the stream is `chat.gradio_turns`.
"""

from __future__ import annotations

import json
from typing import Any, Final

from fastapi.exceptions import RequestValidationError
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from sstools_agent.chat.ag_ui import FILE_URL
from sstools_agent.chat.request import ChatRequestBody
from sstools_agent.domain.chat_events import ChatEvent, Notice
from sstools_agent.domain.errors import ErrorCode

GRADIO_PATH: Final = "/api/agent/gradio"
"""What the page passes to `Client.connect` (after its origin)."""
API_PREFIX: Final = "/gradio_api"
CONFIG_PATH: Final = f"{GRADIO_PATH}/config"
INFO_PATH: Final = f"{GRADIO_PATH}{API_PREFIX}/info"
JOIN_PATH: Final = f"{GRADIO_PATH}{API_PREFIX}/queue/join"
DATA_PATH: Final = f"{GRADIO_PATH}{API_PREFIX}/queue/data"
CANCEL_PATH: Final = f"{GRADIO_PATH}{API_PREFIX}/cancel"
RESET_PATH: Final = f"{GRADIO_PATH}{API_PREFIX}/reset"
PROTOCOL: Final = "sse_v3"
API_NAME: Final = "chat"
FN_INDEX: Final = 0
INPUTS: Final = ("message", "conversation_id", "action", "ui_context")
"""The endpoint's named inputs, in the order `data` carries them."""
SESSION_HASH_PATTERN: Final = r"^[A-Za-z0-9_-]{1,64}$"
CARD_ANSWERS: Final = ("confirm", "deny")
CALL_FORM: Final = 'submit("/chat", {message: {text, files}, conversation_id, action, ui_context})'
"""The working call, which refusals of the seed's forms quote."""

_JSON: Final = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def _component(component_id: int, kind: str, label: str) -> dict[str, Any]:
    return {
        "id": component_id,
        "type": kind,
        "props": {"label": label, "visible": True, "interactive": True},
        "skip_api": False,
        "component_class_id": kind,
        "key": None,
    }


COMPONENTS: Final = [
    _component(1, "multimodaltextbox", "message"),
    _component(2, "textbox", "conversation_id"),
    _component(3, "textbox", "action"),
    _component(4, "json", "ui_context"),
    _component(5, "json", "event"),
]
"""The inputs, and the one output: each of the turn's events, a ChatMessage-shaped value."""


def gradio_config() -> dict[str, Any]:
    """GET …/config: what the client needs to submit. `connect_heartbeat: false` (else every open
    tab holds a streaming request), `run_history: false` (else 2.5+ clients keep every chat in
    the browser's localStorage); no `root`: the client takes the URL it connected to."""
    return {
        "version": "6.31.0",
        "mode": "blocks",
        "app_id": 1,
        "dev_mode": False,
        "analytics_enabled": False,
        "is_space": False,
        "space_id": None,
        "username": None,
        "auth_required": False,
        "protocol": PROTOCOL,
        "api_prefix": API_PREFIX,
        "enable_queue": True,
        "connect_heartbeat": False,
        "run_history": False,
        "show_api": True,
        "components": COMPONENTS,
        "dependencies": [
            {
                "id": FN_INDEX,
                "targets": [[1, "submit"]],
                "inputs": [1, 2, 3, 4],
                "outputs": [5],
                "api_name": API_NAME,
                "api_visibility": "public",
                "show_api": True,
                "queue": True,
                "backend_fn": True,
                "js": None,
                "trigger_mode": "once",
                "connection": "sse",
                "types": {"generator": True, "cancel": False},
            }
        ],
        "layout": {"id": 0, "children": [{"id": each["id"]} for each in COMPONENTS]},
        "page": {
            "": {
                "layout": {"id": 0, "children": [{"id": each["id"]} for each in COMPONENTS]},
                "components": [each["id"] for each in COMPONENTS],
                "dependencies": [FN_INDEX],
            }
        },
        "pages": [["", "Home"]],
    }


def _parameter(name: str, component: str, python_type: str, example: Any) -> dict[str, Any]:
    return {
        "label": name,
        "parameter_name": name,
        "parameter_has_default": True,
        "parameter_default": None,
        "type": {},
        "python_type": {"type": python_type, "description": ""},
        "component": component,
        "example_input": example,
    }


def api_info() -> dict[str, Any]:
    """GET …/gradio_api/info: the one endpoint, `/chat`, and its named inputs. Every input has a
    default (null), so a call names only what it sends; an unknown name is the client's error."""
    return {
        "named_endpoints": {
            f"/{API_NAME}": {
                "parameters": [
                    _parameter(
                        "message",
                        "Multimodaltextbox",
                        "Dict(text: str, files: List[Dict(file_id: str)])",
                        {"text": "Какой статус у этого дашборда?", "files": []},
                    ),
                    _parameter("conversation_id", "Textbox", "str | None", None),
                    _parameter(
                        "action", "Textbox", "confirm:<id> | deny:<id> | resume | None", None
                    ),
                    _parameter("ui_context", "Json", "Dict[str, Any] | None", None),
                ],
                "returns": [
                    {
                        "label": "event",
                        "type": {},
                        "python_type": {"type": "Dict[str, Any]", "description": "ChatMessage"},
                        "component": "Json",
                    }
                ],
                "api_visibility": "public",
                "show_api": True,
            }
        },
        "unnamed_endpoints": {},
    }


class JoinBody(BaseModel):
    """POST …/queue/join: `{data, event_data, fn_index, trigger_id, session_hash}` (the client
    may add fields of its own, which mean nothing here)."""

    model_config = ConfigDict(extra="ignore")

    data: list[Any]
    event_data: Any = None
    fn_index: int
    trigger_id: Any = None
    session_hash: str = Field(pattern=SESSION_HASH_PATTERN)


class GradioCancelBody(BaseModel):
    """POST …/cancel: `{event_id, session_hash, fn_index}`."""

    model_config = ConfigDict(extra="ignore")

    event_id: str = Field(max_length=64)
    session_hash: str = Field(pattern=SESSION_HASH_PATTERN)
    fn_index: int | None = None


class BareCardAnswer(Exception):
    """`action` "confirm" or "deny" without the card's id: the route names the card it means."""

    def __init__(self, action: str, conversation_id: str | None) -> None:
        super().__init__(action)
        self.action, self.conversation_id = action, conversation_id


def refuse(field: str, message: str, **extra: Any) -> RequestValidationError:
    """A 422 of the join (`{code, detail}`; the client shows `detail`)."""
    return RequestValidationError(
        [{"loc": ("body", field), "msg": message, "type": "value_error", **extra}]
    )


def chat_request_of(join: JoinBody) -> ChatRequestBody:
    """The chat request the join's inputs mean, refused (422) in words that show the working
    call where a form is the seed's: `event_data` carrying the inputs, a message that is not
    `{text, files}`, a card answered without its id (BareCardAnswer)."""
    if join.fn_index != FN_INDEX:
        raise refuse("fn_index", f"the only endpoint is /{API_NAME} (fn_index {FN_INDEX})")
    if join.event_data is not None:
        raise refuse(
            "event_data",
            "the third argument of submit is event_data, not the inputs: pass conversation_id "
            f"and action by name, {CALL_FORM}",
        )
    if len(join.data) != len(INPUTS):
        raise refuse("data", f"/{API_NAME} takes {len(INPUTS)} inputs: {', '.join(INPUTS)}")
    message, conversation_id, action, ui_context = join.data
    fields: dict[str, Any] = {"conversation_id": conversation_id, "ui_context": ui_context}
    fields |= _message(message)
    fields |= _action(action, conversation_id)
    try:
        return ChatRequestBody.model_validate(fields)
    except ValidationError as invalid:
        raise RequestValidationError(invalid.errors()) from None


def _message(message: Any) -> dict[str, Any]:
    """`{text, files}` (gr.MultimodalTextbox's value) or null; files by id (uploaded through
    POST /api/assistant/files): `{file_id}`, or a FileData whose url or path names it."""
    if message is None:
        return {}
    if not isinstance(message, dict) or not set(message) <= {"text", "files"}:
        hint = ""
        if isinstance(message, str) and message.strip().lower() in CARD_ANSWERS:
            hint = (
                "; a card is answered by action confirm:<confirmation_id> or "
                "deny:<confirmation_id> (the id its confirm_required event carries)"
            )
        raise refuse("message", f"message is {{text, files}} or null{hint}: {CALL_FORM}")
    text = message.get("text") or None
    files = message.get("files") or []
    if not isinstance(files, list):
        raise refuse("message.files", "files is a list")
    return {"message": text, "files": [{"file_id": _file_id(each)} for each in files]}


def _file_id(file: Any) -> str:
    if isinstance(file, dict) and "file_id" in file:
        return str(file["file_id"])
    if isinstance(file, dict):
        for where in (file.get("url"), file.get("path")):
            named = FILE_URL.search(str(where or ""))
            if named:
                return named.group("file_id")
    raise refuse(
        "message.files",
        "a file is {file_id} of a file uploaded through POST /api/assistant/files (or a "
        "FileData whose url is /api/assistant/files/<file_id>); uploads through Gradio are "
        "not taken",
    )


def _action(action: Any, conversation_id: Any) -> dict[str, Any]:
    """`confirm:<id>`, `deny:<id>` (bound to that card, so a stale tab cannot approve a newer
    call), `resume`, or null."""
    if action is None or action == "":
        return {}
    if not isinstance(action, str):
        raise refuse("action", "action is a string: confirm:<id>, deny:<id> or resume")
    name, _, confirmation_id = action.partition(":")
    if name in CARD_ANSWERS and not confirmation_id:
        raise BareCardAnswer(name, conversation_id if isinstance(conversation_id, str) else None)
    if name in CARD_ANSWERS:
        return {"action": name, "confirmation_id": confirmation_id}
    if action == "resume":
        return {"action": "resume"}
    if name == "edit":
        raise refuse(
            "action",
            "approve-with-edits is not part of the Gradio endpoint: it is on /api/agent/chat "
            "(action edit) and /api/agent/ag-ui (editedArgs)",
        )
    raise refuse("action", "action is confirm:<id>, deny:<id>, resume or null")


def sse(message: dict[str, Any]) -> bytes:
    """One message of the stream."""
    return f"data: {_JSON.encode(message)}\n\n".encode()


HEARTBEAT: Final = sse({"msg": "heartbeat"})
CLOSE_STREAM: Final = sse({"msg": "close_stream"})
SESSION_NOT_FOUND: Final = sse(
    {
        "msg": "unexpected_error",
        "message": "Session not found: nothing of yours is queued in this session; submit again.",
        "session_not_found": True,
    }
)


class GradioMessages:
    """One queued turn's messages on the session's stream: `process_starts`, each event as
    `process_generating` (the first with the whole value, the next ones as a `replace` diff of
    it, as sse_v3 sends a generator's outputs), and `process_completed`, which repeats the last
    value as Gradio does."""

    media_type: Final = "text/event-stream"

    def __init__(self, event_id: str) -> None:
        self.event_id = event_id
        self._last: dict[str, Any] | None = None

    def starts(self) -> bytes:
        return sse({"msg": "process_starts", "event_id": self.event_id, "eta": None})

    def frame(self, event_id: str | None, event: ChatEvent) -> bytes:
        if isinstance(event, Notice):
            return b""
        value = event.to_wire()
        first = self._last is None
        self._last = value
        output = [value] if first else [[["replace", [], value]]]
        return sse(
            {
                "msg": "process_generating",
                "event_id": self.event_id,
                "output": {"data": output, "is_generating": True},
                "success": True,
            }
        )

    def close(self) -> bytes:
        return sse(
            {
                "msg": "process_completed",
                "event_id": self.event_id,
                "output": {"data": [self._last], "is_generating": False},
                "success": True,
            }
        )

    def failed(self, code: ErrorCode, detail: str) -> bytes:
        """The turn refused before it ran (a busy conversation, a card already answered): the
        client's status is an error with `detail` as its message and `code`."""
        return sse(
            {
                "msg": "process_completed",
                "event_id": self.event_id,
                "code": code.value,
                "output": {"error": detail, "title": code.value},
                "success": False,
            }
        )
