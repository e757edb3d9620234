"""The REST API function as Lambda runs it: `main.handler` (Mangum with Powertools) in its own
process, given a real-shaped API Gateway REST event, talking to moto."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import anyio

from local.agent_stack import user_issuer
from sstools_agent.domain.conversations import Conversation, now_iso
from sstools_agent.settings import Settings
from sstools_agent.wiring.adapters import conversation_store_from
from tests.support.events import load_event

ROOT = Path(__file__).resolve().parents[2]
INVOKE = """
import json, sys
from types import SimpleNamespace
import main
context = SimpleNamespace(function_name="ApiFunction", memory_limit_in_mb=512,
    invoked_function_arn="arn:aws:lambda:eu-central-1:123456789012:function:ApiFunction",
    aws_request_id="lambda-request-1")
print("RESULT " + json.dumps(main.handler(json.load(sys.stdin), context)))
"""


def test_the_lambda_handler_answers_an_api_gateway_event(stack_settings: Settings):
    owner = f"anna-{uuid.uuid4().hex[:8]}"
    store = conversation_store_from(stack_settings)
    for title in ("Отчёт по энергопотреблению", "Черновик"):
        at = now_iso()
        anyio.run(store.create, Conversation(uuid.uuid4().hex, owner, title, at, at))
    token = user_issuer(stack_settings).issue(owner, 60, {"roles": ["analyst"]}).token
    event = load_event("api_list_conversations", user_jwt=token)

    completed = subprocess.run(
        [sys.executable, "-c", INVOKE],
        input=json.dumps(event),
        capture_output=True,
        text=True,
        cwd=ROOT / "functions" / "api",
        env={
            **os.environ,
            "PYTHONPATH": str(ROOT / "layers" / "common"),
            "AWS_ENDPOINT_URL": str(stack_settings.aws_endpoint_url),
            "AWS_REGION": stack_settings.aws_region,
            "POWERTOOLS_TRACE_DISABLED": "true",
        },
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    result = json.loads(next(line for line in lines if line.startswith("RESULT "))[7:])
    assert result["statusCode"] == 200
    body = json.loads(result["body"])
    assert [item["title"] for item in body["items"]] == ["Отчёт по энергопотреблению"]
    # Powertools: the request's log line carries API Gateway's request id as correlation id
    logs = [json.loads(line) for line in lines if line.startswith("{")]
    request_log = next(log for log in logs if log.get("message") == "request")
    assert request_log["correlation_id"] == event["requestContext"]["requestId"]
    assert request_log["status"] == 200
    assert any("RequestLatency" in json.dumps(log) for log in logs)  # metrics flushed (EMF)
