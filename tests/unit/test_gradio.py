"""The Gradio join's inputs read as the chat request they mean, the seed's forms refused in words
that show the working call (`chat.gradio.chat_request_of`), and the stream's messages."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fastapi.exceptions import RequestValidationError

from sstools_agent.chat.gradio import (
    BareCardAnswer,
    GradioMessages,
    JoinBody,
    api_info,
    chat_request_of,
    gradio_config,
)
from sstools_agent.domain.chat_events import StreamEnd, StreamToken, ToolsRouted

FILE_ID = "a" * 32
CARD = "b" * 32
CONVERSATION = "c" * 32


def join(*data: Any, event_data: Any = None, fn_index: int = 0) -> JoinBody:
    return JoinBody(
        data=list(data), event_data=event_data, fn_index=fn_index, session_hash="abc123"
    )


def refusal(body: JoinBody) -> str:
    with pytest.raises(RequestValidationError) as refused:
        chat_request_of(body)
    return str(refused.value.errors())


def test_a_message_with_files_by_id_or_by_their_url():
    files = [{"file_id": FILE_ID}, {"url": f"https://x/api/assistant/files/{FILE_ID}", "meta": {}}]
    body = chat_request_of(join({"text": "что тут?", "files": files}, None, None, None))
    assert body.message == "что тут?"
    assert [ref.file_id for ref in body.files] == [FILE_ID, FILE_ID]


def test_a_card_is_answered_by_its_id():
    body = chat_request_of(join(None, CONVERSATION, f"deny:{CARD}", None))
    assert (body.action, body.confirmation_id, body.conversation_id) == ("deny", CARD, CONVERSATION)


def test_resume_needs_only_the_conversation():
    body = chat_request_of(join(None, CONVERSATION, "resume", None))
    assert (body.action, body.conversation_id) == ("resume", CONVERSATION)


def test_a_bare_confirm_asks_for_the_card():
    with pytest.raises(BareCardAnswer) as bare:
        chat_request_of(join({"text": "confirm", "files": []}, CONVERSATION, "confirm", None))
    assert (bare.value.action, bare.value.conversation_id) == ("confirm", CONVERSATION)


def test_inputs_in_event_data_are_refused_with_the_working_call():
    said = refusal(join({"text": "привет", "files": []}, None, None, None, event_data=["x", None]))
    assert "event_data" in said
    assert "conversation_id" in said


def test_a_string_message_is_refused_and_confirm_is_pointed_to_the_action():
    assert "{text, files}" in refusal(join("привет", None, None, None))
    assert "confirm:<confirmation_id>" in refusal(join("confirm", CONVERSATION, None, None))


@pytest.mark.parametrize(
    ("action", "words"),
    [("edit", "/api/agent/chat"), ("approve", "confirm:<id>"), (7, "string")],
)
def test_actions_the_endpoint_does_not_take(action: Any, words: str):
    assert words in refusal(join(None, CONVERSATION, action, None))


def test_a_file_uploaded_through_gradio_is_refused():
    upload = {"path": "gradio/uploads/x.png", "meta": {"_type": "gradio.FileData"}}
    assert "POST /api/assistant/files" in refusal(
        join({"text": "", "files": [upload]}, None, None, None)
    )


def test_another_fn_index_or_input_count_is_refused():
    assert "fn_index" in refusal(join(None, None, None, None, fn_index=3))
    assert "4 inputs" in refusal(join({"text": "x", "files": []}))


def test_the_config_and_info_name_the_same_inputs():
    config, info = gradio_config(), api_info()
    [dependency] = config["dependencies"]
    labels = {c["id"]: c["props"]["label"] for c in config["components"]}
    parameters = info["named_endpoints"]["/chat"]["parameters"]
    assert [labels[i] for i in dependency["inputs"]] == [p["parameter_name"] for p in parameters]
    assert (config["connect_heartbeat"], config["run_history"]) == (False, False)


def test_the_stream_sends_the_first_value_whole_then_replace_diffs_then_repeats_the_last():
    messages = GradioMessages("e1")
    token, end = StreamToken("При"), StreamEnd("c" * 32, "u1", "a1")
    sent = [
        json.loads(frame.decode().removeprefix("data: "))
        for frame in (
            messages.starts(),
            messages.frame("c:1", token),
            messages.frame(None, ToolsRouted({"offered": []})),
            messages.frame("c:2", end),
            messages.close(),
        )
        if frame
    ]
    assert [m["msg"] for m in sent] == [
        "process_starts",
        "process_generating",
        "process_generating",
        "process_completed",
    ]
    assert sent[1]["output"]["data"] == [token.to_wire()]
    assert sent[2]["output"]["data"] == [[["replace", [], json.loads(json.dumps(end.to_wire()))]]]
    assert sent[3]["output"] == {
        "data": [json.loads(json.dumps(end.to_wire()))],
        "is_generating": False,
    }
    assert {m["event_id"] for m in sent} == {"e1"}
