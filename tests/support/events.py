"""Sample Lambda events from events/, and the HTTP request Lambda Web Adapter makes of each."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

EVENTS = Path(__file__).resolve().parents[2] / "events"


@dataclass(frozen=True)
class HttpRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


def load_event(name: str, **placeholders: str) -> dict[str, Any]:
    """An event file with its `{{placeholders}}` filled in."""
    text = (EVENTS / f"{name}.json").read_text(encoding="utf-8")
    for key, value in placeholders.items():
        text = text.replace("{{" + key + "}}", value)
    event: dict[str, Any] = json.loads(text)
    return event


def as_http_request(event: dict[str, Any]) -> HttpRequest:
    """What the adapter sends to the app: function URL (2.0) or API Gateway REST (1.0) events."""
    if event.get("version") == "2.0":
        method, path = event["requestContext"]["http"]["method"], event["rawPath"]
    else:
        method, path = event["httpMethod"], event["path"]
    raw = event.get("body") or ""
    body = base64.b64decode(raw) if event.get("isBase64Encoded") else raw.encode()
    return HttpRequest(method, path, dict(event.get("headers") or {}), body)


@dataclass
class LambdaInvocation(LambdaContext):
    """The Lambda context a rule target's handler is invoked with (what Powertools reads)."""

    function_name: str = "Function"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = "arn:aws:lambda:eu-central-1:123456789012:function:Function"
    aws_request_id: str = "req-1"
