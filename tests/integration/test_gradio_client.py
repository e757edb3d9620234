"""The chat function's Gradio endpoint as the seed's page sees it: the official `@gradio/client`
(2.x, and 1.x for its old iterator; tests/gradio_client/run.mjs, run by node) against two chat
function processes that share only moto's DynamoDB.

run.mjs sends every stream (GET …/queue/data) to one process and everything else (config, info,
join, cancel, reset) to the other, as two Lambda execution environments would be reached: what a
turn needs on the stream's side is only what the join stored. What another user can do with a
session hash is tried here with plain HTTP against the same two processes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from local.agent_stack import AgentStack, SampleUpstream, user_issuer
from local.fault_injection import Fault, FaultKind
from sstools_agent.chat.gradio import GRADIO_PATH
from sstools_agent.chat.turns import STOPPED_TEXT
from tests.support.chat_process import chat_process
from tests.support.seed import DASHBOARD_10

CLIENT_DIR = Path(__file__).resolve().parents[1] / "gradio_client"
RUN_SCRIPT = CLIENT_DIR / "run.mjs"
STATUS = "какой статус у этого дашборда?"
DEPLOY = "задеплой дашборд 10 в staging"
LONG = "что ты умеешь?"
RUN_TIMEOUT_S = 40
TOOL_TIMEOUT_S = 10.0
TOKEN_DELAY_S = "0.02"
"""The processes' stand-in model pauses between words, so a cancel lands while it speaks."""
HEARTBEAT_S = 0.5
"""The processes' heartbeat interval (15 s in AWS): the clients meet heartbeats in every test."""
SEARCH = ("GET", "/api/environments/ss-dev/dashboards")
API = f"{GRADIO_PATH}/gradio_api"

Report = dict[str, Any]
Step = dict[str, Any]


@dataclass
class TwoFunctions:
    """Two chat function processes over one moto, and the stack their upstream is on."""

    join_url: str
    stream_url: str
    stack: AgentStack

    def token(self, subject: str, role: str = "engineer") -> str:
        issuer = user_issuer(self.stack.settings)
        return issuer.issue(subject, 600, {"roles": [role]}).token

    def deploys(self) -> int:
        return self.stack.upstream.plan.requests("POST", "/api/dashboards/deploy")


@pytest.fixture(scope="module")
def functions(module_stack: AgentStack) -> Iterator[TwoFunctions]:
    env = {"STANDIN_TOKEN_DELAY_S": TOKEN_DELAY_S, "STREAM_HEARTBEAT_S": str(HEARTBEAT_S)}
    settings = module_stack.settings
    with (
        chat_process(settings, tool_timeout_s=TOOL_TIMEOUT_S, env=env) as joins,
        chat_process(settings, tool_timeout_s=TOOL_TIMEOUT_S, env=env) as streams,
    ):
        yield TwoFunctions(joins.url, streams.url, module_stack)


def run_client(functions: TwoFunctions, steps: list[Step]) -> Report:
    """Runs the steps in one node process and returns run.mjs's report."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: it is part of the toolchain (make test needs it)")
    if not (CLIENT_DIR / "node_modules" / "@gradio" / "client").is_dir():
        pytest.fail(f"{CLIENT_DIR}/node_modules is missing: run `make gradio-client`")
    scenario = {
        "joinUrl": functions.join_url,
        "streamUrl": functions.stream_url,
        "path": GRADIO_PATH,
        "timeoutS": RUN_TIMEOUT_S,
        "steps": steps,
    }
    done = subprocess.run(
        [node, str(RUN_SCRIPT)],
        input=json.dumps(scenario),
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT_S * (len(steps) + 1),
        check=False,
    )
    assert done.returncode == 0, f"run.mjs failed ({done.returncode}):\n{done.stderr}"
    report: Report = json.loads(done.stdout)
    if keep := os.environ.get("GRADIO_REPORT_DIR"):  # to read what the client saw, test by test
        name = os.environ["PYTEST_CURRENT_TEST"].split(" ")[0].rsplit("::", 1)[-1]
        Path(keep, f"{name}.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
    for step in report["steps"]:
        assert "error" not in step or step["op"] == "submit", (step, done.stderr[-2000:])
    return report


def connect(token: str, client: str = "a", version: int = 2) -> Step:
    return {"op": "connect", "client": client, "token": token, "version": version}


def submit(data: Any, client: str = "a", **more: Any) -> Step:
    return {"op": "submit", "client": client, "data": data, **more}


def message(text: str, **inputs: Any) -> dict[str, Any]:
    return {"message": {"text": text, "files": []}, **inputs}


def messages_of(step: Step) -> list[dict[str, Any]]:
    """The ChatMessages the submission delivered (`event.data[0]`)."""
    return [event["data"][0] for event in step["events"] if event["type"] == "data"]


def metadata_of(step: Step, kind: str) -> list[dict[str, Any]]:
    return [m["metadata"] for m in messages_of(step) if m["metadata"].get("type") == kind]


def sse_messages(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[5:]) for line in text.splitlines() if line.startswith("data:")]


def kinds(step: Step) -> list[str | None]:
    return [m["metadata"].get("type") for m in messages_of(step)]


def failure(step: Step) -> dict[str, Any]:
    failed: list[dict[str, Any]] = [
        e for e in step["events"] if e["type"] == "status" and e["stage"] == "error"
    ]
    assert len(failed) == 1, dump(step)
    return failed[0]


def dump(step: Step) -> str:
    return json.dumps(step, ensure_ascii=False)[:4000]


def assert_completed(step: Step) -> None:
    """The run ended as Gradio ends one: its last status is `complete`, and its last message
    the stream's end (which Gradio's final message repeats)."""
    assert not step.get("timedOut"), dump(step)
    statuses = [e for e in step["events"] if e["type"] == "status"]
    assert statuses[-1]["stage"] == "complete", dump(step)
    said = kinds(step)
    assert said[-2:] == ["stream_end", "stream_end"], dump(step)


# --- Config -----------------------------------------------------------------------------------


def test_config_says_sse_v3_without_heartbeat_or_run_history(functions: TwoFunctions):
    report = run_client(functions, [connect(functions.token("user.config"))])
    [step] = report["steps"]
    assert step["protocol"] == "sse_v3"
    assert step["connect_heartbeat"] is False
    assert step["run_history"] is False
    assert step["api_prefix"] == "/gradio_api"


# --- A read turn, split between the two processes ---------------------------------------------


def test_a_read_turn_streams_tokens_and_tool_cards_from_the_other_process(
    functions: TwoFunctions,
):
    steps = [
        connect(functions.token("user.read")),
        submit(message(STATUS, ui_context=DASHBOARD_10)),
    ]
    report = run_client(functions, steps)
    turn = report["steps"][1]
    assert_completed(turn)
    said = kinds(turn)
    assert "tool_start" in said, dump(turn)
    assert "tool_end" in said, dump(turn)
    tokens = [
        m["metadata"]["token"]
        for m in messages_of(turn)
        if m["metadata"].get("type") == "stream_token"
    ]
    assert "git-статус" in "".join(tokens), dump(turn)
    # The join and the stream went to different processes
    where = {(r["method"], r["path"].removeprefix(API)): r["to"] for r in report["requests"]}
    assert where[("POST", "/queue/join")] == "join"
    assert where[("GET", "/queue/data")] == "stream"


def test_the_1x_client_reads_a_turn_to_its_end(functions: TwoFunctions):
    steps = [
        connect(functions.token("user.old"), version=1),
        submit(message(STATUS, ui_context=DASHBOARD_10)),
    ]
    turn = run_client(functions, steps)["steps"][1]
    assert_completed(turn)


# --- A card, answered through the client ------------------------------------------------------


def test_a_card_confirmed_with_its_id_runs_the_deploy_once(functions: TwoFunctions):
    before = functions.deploys()
    token = functions.token("user.deploy")
    asked = run_client(
        functions, [connect(token), submit(message(DEPLOY, ui_context=DASHBOARD_10))]
    )
    ask = asked["steps"][1]
    assert_completed(ask)
    [card] = [
        m["metadata"] for m in messages_of(ask) if m["metadata"].get("type") == "confirm_required"
    ]
    conversation = messages_of(ask)[-1]["metadata"]["conversation_id"]
    answer = {
        "message": None,
        "conversation_id": conversation,
        "action": f"confirm:{card['confirmation_id']}",
    }
    report = run_client(functions, [connect(token), submit(answer)])
    turn = report["steps"][1]
    assert_completed(turn)
    [resolved] = [
        m["metadata"] for m in messages_of(turn) if m["metadata"].get("type") == "confirm_resolved"
    ]
    assert resolved["result"] == "confirmed"
    assert "tool_end" in kinds(turn), dump(turn)
    assert functions.deploys() == before + 1


def test_a_stale_card_id_or_a_bare_confirm_runs_nothing(functions: TwoFunctions):
    before = functions.deploys()
    token = functions.token("user.stale")
    asked = run_client(
        functions, [connect(token), submit(message(DEPLOY, ui_context=DASHBOARD_10))]
    )
    ask = asked["steps"][1]
    [card] = [
        m["metadata"] for m in messages_of(ask) if m["metadata"].get("type") == "confirm_required"
    ]
    conversation = messages_of(ask)[-1]["metadata"]["conversation_id"]
    stale = {"conversation_id": conversation, "action": "confirm:" + "0" * 32}
    bare = {
        "message": {"text": "confirm", "files": []},
        "conversation_id": conversation,
        "action": "confirm",
    }
    report = run_client(functions, [connect(token), submit(stale), submit(bare)])
    wrong_id, bare_confirm = report["steps"][1], report["steps"][2]
    assert "NOT_FOUND" in str(failure(wrong_id)["code"]) or failure(wrong_id)["message"], dump(
        wrong_id
    )
    said = failure(bare_confirm)["message"]
    assert card["confirmation_id"] in said, dump(bare_confirm)
    assert f"confirm:{card['confirmation_id']}" in said, dump(bare_confirm)
    assert functions.deploys() == before


# --- Cancel ------------------------------------------------------------------------------------


def test_cancel_through_the_other_process_stops_the_run(functions: TwoFunctions):
    steps = [
        connect(functions.token("user.cancel")),
        submit(message(LONG), cancelAfter={"type": "stream_token", "count": 3}),
    ]
    report = run_client(functions, steps)
    turn = report["steps"][1]
    assert turn["cancelled"], dump(turn)
    assert_completed(turn)
    texts = [m["content"] for m in messages_of(turn) if not m["metadata"].get("type")]
    assert STOPPED_TEXT in texts, dump(turn)
    where = {(r["method"], r["path"].removeprefix(API)): r["to"] for r in report["requests"]}
    assert where[("POST", "/cancel")] == "join"


# --- The seed's call forms --------------------------------------------------------------------


def test_the_seeds_call_forms_get_a_clear_error(functions: TwoFunctions):
    token = functions.token("user.seed")
    conversation = "c" * 32
    steps = [
        connect(token),
        # client.submit("/chat", {text, files}, [conversation_id, null])
        submit({"text": "привет", "files": []}, eventData=[conversation, None]),
        # client.submit("/chat", {message}, [conversation_id, null])
        submit({"message": {"text": "привет", "files": []}}, eventData=[conversation, None]),
        # the seed's confirm: a string message and the action's bare name
        submit({"message": "confirm", "action": "confirm", "conversation_id": conversation}),
    ]
    report = run_client(functions, steps)
    keywords, third_argument, confirm_string = report["steps"][1:]
    assert "text" in keywords["error"], dump(keywords)
    said = failure(third_argument)["message"]
    assert "event_data" in said, dump(third_argument)
    assert "conversation_id" in said, dump(third_argument)
    said = failure(confirm_string)["message"]
    assert "{text, files}" in said, dump(confirm_string)
    assert "confirm:<" in said, dump(confirm_string)


# --- Another user ------------------------------------------------------------------------------


def join_body(session: str) -> dict[str, Any]:
    """A join's body as the client sends it: a read on dashboard 10's page."""
    return {
        "data": [{"text": STATUS, "files": []}, None, None, DASHBOARD_10],
        "event_data": None,
        "fn_index": 0,
        "trigger_id": None,
        "session_hash": session,
    }


def test_another_users_token_sees_nothing_of_a_session(functions: TwoFunctions):
    owner = {"Authorization": f"Bearer {functions.token('user.owner')}"}
    other = {"Authorization": f"Bearer {functions.token('user.other')}"}
    session = "s3ssion0wn3d"
    join = join_body(session)
    with httpx.Client(timeout=RUN_TIMEOUT_S) as http:
        # Given the owner's queued turn
        joined = http.post(f"{functions.join_url}{API}/queue/join", json=join, headers=owner)
        assert joined.status_code == 200, joined.text
        event_id = joined.json()["event_id"]
        # When another user opens its stream, and cancels its event
        stolen = http.get(
            f"{functions.stream_url}{API}/queue/data",
            params={"session_hash": session},
            headers=other,
        )
        cancel = {"event_id": event_id, "session_hash": session, "fn_index": 0}
        cancelled = http.post(f"{functions.join_url}{API}/cancel", json=cancel, headers=other)
        # Then that stream has nothing but «no such session», and the cancel finds no event
        said = [
            json.loads(line[5:]) for line in stolen.text.splitlines() if line.startswith("data:")
        ]
        assert said == [
            {"msg": "unexpected_error", "message": said[0]["message"], "session_not_found": True}
        ], stolen.text
        assert cancelled.status_code == 404, cancelled.text
        assert cancelled.json()["code"] == "NOT_FOUND"
        # And the owner's stream has the whole turn, not stopped
        owned = http.get(
            f"{functions.stream_url}{API}/queue/data",
            params={"session_hash": session},
            headers=owner,
        )
    said = sse_messages(owned.text)
    kinds_said = [m["msg"] for m in said]
    assert kinds_said[0] == "process_starts", owned.text[:2000]
    assert kinds_said[-2:] == ["process_completed", "close_stream"], owned.text[-2000:]
    assert {m.get("event_id") for m in said if "event_id" in m} == {event_id}
    assert STOPPED_TEXT not in owned.text


# --- A dropped stream -------------------------------------------------------------------------


def test_resume_replays_the_last_turn_from_its_stored_events(functions: TwoFunctions):
    token = functions.token("user.resume")
    first = run_client(
        functions, [connect(token), submit(message(STATUS, ui_context=DASHBOARD_10))]
    )
    turn = first["steps"][1]
    conversation = metadata_of(turn, "stream_end")[-1]["conversation_id"]
    resume = {"conversation_id": conversation, "action": "resume"}
    report = run_client(functions, [connect(token, version=1), submit(resume)])
    replay = report["steps"][1]
    assert_completed(replay)
    said = "".join(m["token"] for m in metadata_of(replay, "stream_token"))
    assert said == "".join(m["token"] for m in metadata_of(turn, "stream_token")), dump(replay)
    assert [m["tool"] for m in metadata_of(replay, "tool_end")] == [
        m["tool"] for m in metadata_of(turn, "tool_end")
    ]


# --- Heartbeats -------------------------------------------------------------------------------


def test_a_silent_stream_carries_gradios_heartbeat(
    functions: TwoFunctions, fresh_upstream: SampleUpstream
):
    # Given a page summary that takes two seconds to come back
    fresh_upstream.plan.add(*SEARCH, Fault(FaultKind.DELAY, seconds=2.0, times=None))
    owner = {"Authorization": f"Bearer {functions.token('user.slow')}"}
    session = "s1owstr3am"
    with httpx.Client(timeout=RUN_TIMEOUT_S) as http:
        joining = http.post(
            f"{functions.join_url}{API}/queue/join", json=join_body(session), headers=owner
        )
        assert joining.status_code == 200, joining.text
        # When its stream is read
        stream = http.get(
            f"{functions.stream_url}{API}/queue/data",
            params={"session_hash": session},
            headers=owner,
        )
    # Then Gradio's heartbeat message bridges the silence before the answer
    said = [m["msg"] for m in sse_messages(stream.text)]
    first_answer = said.index("process_generating")
    assert said[1:first_answer].count("heartbeat") >= 2, said
    assert said[-2:] == ["process_completed", "close_stream"]
