"""The chat function's AG-UI endpoint as a third-party client sees it: the official
`@ag-ui/client` HttpAgent (tests/ag_ui_client/run.mjs, run by node) against a real uvicorn server.

The client checks the stream itself (its zod schemas and its event-order verifier); a check it
fails rejects its run, and run.mjs reports that as the step's `error`, which every test asserts is
absent. What the client does not check (that a run ends at all, that a result follows its call)
the tests check here. With AG_UI_REPORT_DIR set, each test leaves run.mjs's report there.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from local.agent_stack import AgentStack, chat_app
from local.servers import serve
from sstools_agent.adapters.memory import MemoryAuditSink
from tests.support.chat_server import ChatServer
from tests.support.models import ANSWER, ScriptedChatModel
from tests.support.seed import DASHBOARD_10

CLIENT_DIR = Path(__file__).resolve().parents[1] / "ag_ui_client"
RUN_SCRIPT = CLIENT_DIR / "run.mjs"
PATH = "/api/agent/ag-ui"
STATUS = "какой статус у этого дашборда?"
DEPLOY = "задеплой дашборд 10 в staging"
DEPLOY_TOOL = "deploy_dashboard"
RUN_TIMEOUT_S = 30
"""Per run inside the client; the node process as a whole gets a few runs' worth."""

Report = dict[str, Any]
Step = dict[str, Any]


@pytest.fixture(scope="module")
def shared_chat(module_stack: AgentStack) -> Iterator[ChatServer]:
    """One chat server for the module (its model pauses between words, so a client can stop a
    run midway): each test's client runs on a thread of its own."""
    audit = MemoryAuditSink()
    app, store, _ = chat_app(module_stack, ScriptedChatModel(token_delay_s=0.002), audit)
    with serve(app, lifespan="on") as url:
        yield ChatServer(url, module_stack, store, audit)


def token(chat: ChatServer, role: str = "engineer") -> str:
    """The bearer token of `role`'s user, minted as the other chat tests mint it."""
    return chat.headers(role)["Authorization"].removeprefix("Bearer ")


def run_client(chat: ChatServer, steps: list[Step], role: str = "engineer") -> Report:
    """Runs the steps through one HttpAgent (one thread) and returns run.mjs's report."""
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not on PATH: it is part of the toolchain (make test needs it)")
    if not (CLIENT_DIR / "node_modules" / "@ag-ui" / "client").is_dir():
        pytest.fail(f"{CLIENT_DIR}/node_modules is missing: run `make ag-ui-client`")
    scenario = {
        "url": f"{chat.url}{PATH}",
        "token": token(chat, role),
        "forwardedProps": {"uiContext": DASHBOARD_10},
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
    if keep := os.environ.get("AG_UI_REPORT_DIR"):  # to read what the client saw, test by test
        name = os.environ["PYTEST_CURRENT_TEST"].split(" ")[0].rsplit("::", 1)[-1]
        Path(keep, f"{name}.json").write_text(json.dumps(report, ensure_ascii=False, indent=1))
    return report


def dump(step: Step) -> str:
    """What a failed assertion shows: the client's error and warnings, then the raw frames."""
    return json.dumps(
        {key: step.get(key) for key in ("step", "error", "warnings", "outcome", "raw")},
        ensure_ascii=False,
        indent=1,
    )


def types(step: Step) -> list[str]:
    return [event["type"] for event in step["events"]]


def of_type(step: Step, kind: str) -> list[dict[str, Any]]:
    return [event for event in step["events"] if event["type"] == kind]


def text_of(step: Step) -> str:
    return "".join(event["delta"] for event in of_type(step, "TEXT_MESSAGE_CONTENT"))


def assert_clean_run(step: Step) -> None:
    """The client accepted the run (no verification or schema error, nothing stripped or
    dropped), and the run is whole: RUN_STARTED first, RUN_FINISHED last, for this thread and
    run, every message and call closed, every result after its call's end."""
    assert step["error"] is None, dump(step)
    assert step["warnings"] == [], dump(step)
    kinds = types(step)
    assert kinds, dump(step)
    assert kinds[0] == "RUN_STARTED", dump(step)
    assert kinds[-1] == "RUN_FINISHED", dump(step)
    started, finished = step["events"][0], step["events"][-1]
    request = step["request"]
    assert (started["threadId"], started["runId"]) == (request["threadId"], request["runId"])
    assert (finished["threadId"], finished["runId"]) == (request["threadId"], request["runId"])
    assert started.get("protocolVersion") == "1.0", started
    open_messages: set[str] = set()
    open_calls: set[str] = set()
    ended_calls: set[str] = set()
    for event in step["events"]:
        match event["type"]:
            case "TEXT_MESSAGE_START":
                open_messages.add(event["messageId"])
            case "TEXT_MESSAGE_END":
                open_messages.remove(event["messageId"])
            case "TOOL_CALL_START":
                open_calls.add(event["toolCallId"])
            case "TOOL_CALL_END":
                open_calls.remove(event["toolCallId"])
                ended_calls.add(event["toolCallId"])
            case "TOOL_CALL_RESULT" if event["toolCallId"] not in ended_calls:
                # A resumed run answers a call a previous run ended: the client's history has it.
                assert any(
                    call["id"] == event["toolCallId"]
                    for message in step["messages"]
                    for call in message.get("toolCalls", [])
                ), dump(step)
    assert not open_messages, dump(step)
    assert not open_calls, dump(step)


def assert_success(step: Step) -> None:
    assert_clean_run(step)
    assert step["outcome"]["type"] == "success", dump(step)
    assert step["pendingInterrupts"] == []


def custom(step: Step, name: str) -> list[Any]:
    return [event.get("value") for event in of_type(step, "CUSTOM") if event["name"] == name]


def deploys(chat: ChatServer) -> int:
    return chat.stack.upstream.plan.requests("POST", "/api/dashboards/deploy")


# --- A read turn ------------------------------------------------------------------------------


def test_a_read_turn_streams_text_and_a_tool_call_with_its_result(chat: ChatServer):
    report = run_client(chat, [{"message": STATUS}])
    [step] = report["steps"]
    assert_success(step)
    kinds = types(step)
    for kind in (
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
    ):
        assert kind in kinds, dump(step)
    [call] = of_type(step, "TOOL_CALL_START")
    assert call["toolCallName"] == "search_dashboards"
    [result] = of_type(step, "TOOL_CALL_RESULT")
    assert result["toolCallId"] == call["toolCallId"]
    assert kinds.index("TOOL_CALL_RESULT") > kinds.index("TOOL_CALL_END")
    args = "".join(e["delta"] for e in of_type(step, "TOOL_CALL_ARGS"))
    assert isinstance(json.loads(args), dict)
    assert text_of(step).startswith(ANSWER)  # the answer, after the tool's result
    # The client's history holds the turn: the user's message, the call, its result, the answer
    roles = [message["role"] for message in report["messages"]]
    assert roles[0] == "user"
    assert "tool" in roles
    assert "assistant" in roles
    calls = [c for m in report["messages"] for c in m.get("toolCalls", [])]
    assert [c["function"]["name"] for c in calls] == ["search_dashboards"]
    assert any(
        m["role"] == "assistant" and (m.get("content") or "").startswith(ANSWER)
        for m in report["messages"]
    )


# --- A deploy that needs confirmation ----------------------------------------------------------


def assert_deploy_interrupt(step: Step) -> dict[str, Any]:
    """The first run ends waiting for the user: one tool_call interrupt for the deploy call."""
    assert_clean_run(step)
    outcome = step["outcome"]
    assert outcome["type"] == "interrupt", dump(step)
    [interrupt] = outcome["interrupts"]
    assert step["pendingInterrupts"] == [interrupt]
    assert interrupt["reason"] == "tool_call"
    assert interrupt.get("message")
    [call] = [c for c in of_type(step, "TOOL_CALL_START") if c["toolCallName"] == DEPLOY_TOOL]
    assert interrupt["toolCallId"] == call["toolCallId"]
    # Not run: no result for the call yet (the deny tests see that nothing went upstream)
    assert call["toolCallId"] not in [r["toolCallId"] for r in of_type(step, "TOOL_CALL_RESULT")]
    expires = datetime.fromisoformat(interrupt["expiresAt"].replace("Z", "+00:00"))
    assert expires > datetime.now(UTC)
    assert isinstance(interrupt.get("responseSchema"), dict)
    metadata = interrupt["metadata"]
    assert metadata["confirmationId"] == interrupt["id"]
    decision = metadata["decision"]
    assert (decision["tool"], decision["environment"], decision["requires_confirmation"]) == (
        DEPLOY_TOOL,
        "staging",
        True,
    )
    return interrupt  # type: ignore[no-any-return]


def test_an_approved_interrupt_runs_the_deploy_once(chat: ChatServer):
    report = run_client(chat, [{"message": DEPLOY}, {"resume": "approve"}])
    first, second = report["steps"]
    interrupt = assert_deploy_interrupt(first)
    assert second["request"]["resume"] == [
        {"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}
    ]
    assert_success(second)
    results = [r["toolCallId"] for r in of_type(second, "TOOL_CALL_RESULT")]
    assert interrupt["toolCallId"] in results, dump(second)
    assert custom(second, "ss-tools.confirm_resolved"), dump(second)
    assert "confirmed" in json.dumps(custom(second, "ss-tools.confirm_resolved"))
    assert deploys(chat) == 1
    assert report["pendingInterrupts"] == []


@pytest.mark.parametrize("answer", ["deny", "cancel"])
def test_a_denied_or_cancelled_interrupt_changes_nothing(chat: ChatServer, answer: str):
    report = run_client(chat, [{"message": DEPLOY}, {"resume": answer}])
    first, second = report["steps"]
    interrupt = assert_deploy_interrupt(first)
    sent = second["request"]["resume"]
    assert [(e["interruptId"], e["status"]) for e in sent] == [
        (interrupt["id"], "resolved" if answer == "deny" else "cancelled")
    ]
    assert_success(second)
    assert "ничего не изменено" in text_of(second), dump(second)
    assert deploys(chat) == 0
    assert report["pendingInterrupts"] == []
