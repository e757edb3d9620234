"""Least privilege, tested (docs/deploy.md): every AWS request each function makes on its paths is
allowed by the statements template.yaml gives its role, and nothing else is asked for.

moto enforces no IAM, so the functions run here as their entry points build them (the chat and
the REST API behind the local gateway, the audit and expiry functions behind the stand-in for
their EventBridge rules, the confirmation state machine in moto) while every request is recorded
with the principal that made it, its action and the deployed resource's ARN (local/iam_calls.py);
each is then decided against that principal's statements, resolved from the SAM-translated
template (local/iam_template.py) by an offline evaluator (local/iam_policy.py).

The paths: a read turn and a follow-up, a card confirmed, one denied, one left to expire (told by
the expiry function), the team's policy object read as the chat and the REST API start, a
cancel, a file attached and downloaded, a tool output too large for the
history read back, the REST conversations, history, archive and environments, the service token
and its JWKS, and the audit of all of it delivered.
"""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from typing import Any

import boto3
import httpx
import pytest

from functions.api.app import create_app as create_api_app
from functions.audit import app as audit_function
from functions.chat.app import create_app as create_chat_app
from functions.expiry.app import ExpiryEvent, tell
from local.agent_stack import SampleUpstream, user_issuer
from local.bus_rules import rule_pattern, start_rule_pump
from local.gateway import LocalGateway
from local.iam_calls import IamCallTrace, LocalNames
from local.iam_policy import Statement, decide
from local.iam_template import StackNames
from local.servers import serve
from sstools_agent.domain.cedar_policy import shipped_policy_text
from sstools_agent.settings import Settings
from sstools_agent.wiring.api import build_api
from sstools_agent.wiring.audit import build_audit
from sstools_agent.wiring.chat import build_chat
from tests.support.events import LambdaInvocation
from tests.support.seed import DASHBOARD_10

pytestmark = pytest.mark.slow

PRINCIPALS = (
    "ChatFunction",
    "ApiFunction",
    "AuditFunction",
    "ExpiryFunction",
    "ConfirmationStateMachine",
)
STATUS = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}
DEPLOY = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
SEARCH = {
    "message": "найди дашборды",
    "ui_context": {"contextVersion": 1, "envId": "ss-dev", "route": "/dashboards"},
}
EXPIRING_CARDS = "X-Test-Expiring-Cards"
POLICY_OBJECT = {"PolicyBucket": "team-policies", "PolicyObjectKey": "sstools-agent/policy.cedar"}
OFFLOADED = (
    "a checkpoint over 350 KB is offloaded to the bucket, put with its expiry tag; the paths"
    " here write small ones"
)
NOT_EXERCISED_HERE = {
    ("ChatFunction", "bedrock:InvokeModel"): "the model and the router's embeddings: offline here",
    ("ChatFunction", "bedrock:InvokeModelWithResponseStream"): "the model: offline here",
    ("AuditFunction", "sqs:SendMessage"): (
        "the dead-letter queue's: Lambda sends an event the function failed on, with its role;"
        " no code of the function sends it"
    ),
    ("ChatFunction", "s3:PutObjectTagging"): OFFLOADED,
    ("ExpiryFunction", "s3:GetObject"): OFFLOADED,
    ("ExpiryFunction", "s3:PutObject"): OFFLOADED,
    ("ExpiryFunction", "s3:PutObjectTagging"): OFFLOADED,
    ("ExpiryFunction", "s3:DeleteObject"): OFFLOADED,
    ("ConfirmationStateMachine", "lambda:InvokeFunction"): (
        "a second approver's decision starts the chat function (PROD_APPROVERS=2): the paths"
        " here run with one approver; tests/integration/test_second_approvals.py runs that one"
    ),
    ("ExpiryFunction", "events:PutEvents"): (
        "no path audits today (an expiry runs no tool; the state machine publishes the decision),"
        " but the expiry writes its turn through the chat's turn ledger, which audits any tool"
        " event it is given"
    ),
}
"""Actions granted by statements written out in the template that no path here uses, and why
they stay (moto cannot run Bedrock)."""


@dataclass
class Observed:
    trace: IamCallTrace
    statements: dict[str, list[Statement]]


class Paths:
    """A user's requests to the stack's one origin, and the harness's own reads of moto."""

    def __init__(self, url: str, settings: Settings) -> None:
        self.url, self.settings = url, settings
        subject = f"engineer-{uuid.uuid4().hex[:10]}"
        token = user_issuer(settings).issue(subject, 600, {"roles": ["engineer"]}).token
        self.headers = {"Authorization": f"Bearer {token}"}
        self.dynamodb = boto3.client(
            "dynamodb", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region
        )

    def turn(self, body: dict[str, Any], *, expiring: bool = False) -> list[dict[str, Any]]:
        """A chat turn's events (their metadata), the stream read to its end; `expiring`: on the
        chat whose cards expire after two seconds."""
        headers = {**self.headers, EXPIRING_CARDS: "1"} if expiring else self.headers
        with httpx.stream(
            "POST", f"{self.url}/api/agent/chat", headers=headers, json=body, timeout=60
        ) as response:
            assert response.status_code == 200, response.read()
            lines = [line for line in response.iter_lines() if line.startswith("data: ")]
        return [json.loads(line[6:])["metadata"] for line in lines]

    def call(self, method: str, path: str, expect: int = 200, **kwargs: Any) -> httpx.Response:
        answer = httpx.request(
            method, f"{self.url}{path}", headers=self.headers, timeout=30, **kwargs
        )
        assert answer.status_code == expect, (path, answer.status_code, answer.text)
        return answer

    def confirmation(self, confirmation_id: str) -> dict[str, Any]:
        item = self.dynamodb.get_item(
            TableName=self.settings.conversations_table,
            ConsistentRead=True,
            Key={"PK": {"S": f"CONF#{confirmation_id}"}, "SK": {"S": "CONFIRMATION"}},
        )["Item"]
        return {k: next(iter(v.values())) for k, v in item.items()}

    def until(self, what: str, holds: Any, timeout_s: float = 30) -> None:
        """Waits for work another thread does (a bound on a hang, not what the test decides)."""
        deadline = time.monotonic() + timeout_s
        while not holds():
            assert time.monotonic() < deadline, f"{what}: not in time"
            time.sleep(0.1)

    def card(self, *, expiring: bool = False) -> tuple[str, str]:
        """A conversation whose staging deploy card waits: until its execution holds the token,
        or (`expiring`) until its timer has run out (which takes the token away)."""
        events = self.turn(DEPLOY, expiring=expiring)
        card = next(e for e in events if e.get("type") == "confirm_required")
        card_id = card["confirmation_id"]
        if expiring:
            self.until("the expiry", lambda: self.confirmation(card_id)["status"] == "expired")
        else:
            self.until("the token", lambda: "task_token" in self.confirmation(card_id))
        return events[-1]["conversation_id"], card_id

    def answer(self, conversation: str, card: str, action: str) -> None:
        body = {"action": action, "conversation_id": conversation, "confirmation_id": card}
        events = self.turn({**body, "ui_context": DASHBOARD_10})
        assert events[0]["type"] == "confirm_resolved", events


def run_every_path(paths: Paths, upstream: SampleUpstream) -> None:
    # A read (its tool call fetches the service token from the REST API) and a follow-up
    first = paths.turn(STATUS)
    conversation = first[-1]["conversation_id"]
    paths.turn({"message": "то же самое для дашборда 10", "conversation_id": conversation})
    # Its cancel, from another tab: nothing runs any more (the record is read all the same)
    paths.call("POST", "/api/agent/chat/cancel", 409, json={"conversation_id": conversation})
    # Cards: confirmed, denied, left to expire (on the chat whose cards wait two seconds)
    paths.answer(*paths.card(), "confirm")
    paths.answer(*paths.card(), "deny")
    expiring, _ = paths.card(expiring=True)
    paths.until(
        "the expiry told",
        lambda: (
            "время подтверждения истекло"
            in json.dumps(history(paths, expiring), ensure_ascii=False)
        ),
    )
    # A file: the upload's grant, the browser's POST, the message, its download link
    data = b"order_id,amount\n1,10.50\n2,20.00\n"
    grant = paths.call(
        "POST",
        "/api/assistant/files",
        201,
        json={"name": "orders.csv", "content_type": "text/csv", "size": len(data)},
    ).json()
    form = grant["upload"]
    posted = httpx.post(form["url"], data=form["fields"], files={"file": ("orders.csv", data)})
    assert posted.status_code == 204, posted.text
    paths.turn({"message": "сколько строк в файле?", "files": [{"file_id": grant["file_id"]}]})
    link = paths.call("GET", f"/api/assistant/files/{grant['file_id']}/download").json()
    assert httpx.get(link["url"]).content == data
    # A tool output too large for the history, kept in S3 and read back through the REST API
    for number, found in enumerate(upstream.state.dashboards["ss-dev"].values()):
        found["description"] = poorly_compressed(f"dashboard-{number}", 24_000)
    events = paths.turn(SEARCH)
    (kept,) = [e for e in events if e.get("type") == "tool_end" and e.get("output_ref")]
    paths.call("GET", kept["output_ref"])
    # The REST API's own reads and writes, the JWKS
    paths.call("GET", "/api/assistant/conversations")
    paths.call("GET", f"/api/agent/conversations/{conversation}/active")
    paths.call("GET", "/api/assistant/environments")
    paths.call("DELETE", f"/api/assistant/conversations/{conversation}")
    paths.call("GET", "/.well-known/jwks.json")
    # A request with a token that is not one: refused, and audited
    refused = httpx.get(
        f"{paths.url}/api/assistant/conversations", headers={"Authorization": "Bearer not-a-jwt"}
    )
    assert refused.status_code == 401, refused.text


def history(paths: Paths, conversation: str) -> Any:
    return paths.call(
        "GET", "/api/assistant/history", params={"conversation_id": conversation}
    ).json()


def poorly_compressed(seed: str, size: int) -> str:
    chunks = [
        base64.b64encode(hashlib.sha512(f"{seed}{n}".encode()).digest())
        for n in range(size // 88 + 1)
    ]
    return b"".join(chunks).decode()[:size]


@contextmanager
def rule_targets(settings: Settings, expiry: Any) -> Iterator[None]:
    """The audit and expiry functions' EventBridge rules (their patterns from the template),
    each handing its events to the function's handler; removed afterwards."""
    endpoint, region, bus = (
        settings.aws_endpoint_url or "",
        settings.aws_region,
        settings.audit_bus_name,
    )
    targets = {
        "iam-audit": (
            rule_pattern("AuditFunction", "AuditEvents"),
            lambda envelope: audit_function.handler(envelope, LambdaInvocation()),
        ),
        "iam-expiry": (
            rule_pattern("ExpiryFunction", "ExpiredCards"),
            lambda envelope: tell(expiry, ExpiryEvent.model_validate(envelope)),
        ),
    }
    stops = [
        start_rule_pump(endpoint, region, bus, name=name, pattern=pattern, handle=handle)
        for name, (pattern, handle) in targets.items()
    ]
    try:
        yield
    finally:
        for stop in stops:
            stop.set()
        events = boto3.client("events", endpoint_url=endpoint, region_name=region)
        for name in targets:
            events.remove_targets(Rule=name, EventBusName=bus, Ids=[name])
            events.delete_rule(Name=name, EventBusName=bus)


def by_header(app: Any, expiring: Any) -> Any:
    """`app`, but a request with the `EXPIRING_CARDS` header goes to `expiring`."""
    marker = (EXPIRING_CARDS.lower().encode(), b"1")

    async def dispatch(scope: dict[str, Any], receive: Any, send: Any) -> None:
        chosen = expiring if marker in scope.get("headers", []) else app
        await chosen(scope, receive, send)

    return dispatch


def key_ids(settings: Settings) -> dict[str, str]:
    """moto's KMS key ids, by the logical id their alias names (local/aws_resources.py)."""
    kms = boto3.client(
        "kms", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region
    )
    return {
        alias["TargetKeyId"]: alias["AliasName"].removeprefix("alias/")
        for alias in kms.list_aliases()["Aliases"]
        if "TargetKeyId" in alias
    }


def team_policy_object(settings: Settings) -> None:
    """The team's policy set in its own versioned bucket (the stack names it, does not own it)."""
    s3 = boto3.client("s3", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region)
    bucket = POLICY_OBJECT["PolicyBucket"]
    s3.create_bucket(
        Bucket=bucket, CreateBucketConfiguration={"LocationConstraint": settings.aws_region}
    )
    s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"})
    s3.put_object(
        Bucket=bucket, Key=POLICY_OBJECT["PolicyObjectKey"], Body=shipped_policy_text().encode()
    )


@pytest.fixture(scope="module")
def observed(stack_settings: Settings, upstream_server: SampleUpstream) -> Observed:
    names = StackNames(overrides=POLICY_OBJECT)
    settings = stack_settings.model_copy(
        update={
            "upstream_base_url": upstream_server.base_url,
            "tool_routing": "keywords",  # no embeddings to load: routing is not what is checked
            "tool_timeout_s": 60.0,  # the large outputs' turn must not time out on a busy machine
            "service_token_url_parameter": names.name("ServiceTokenUrlParameter"),
            # the chat and the REST API read the team's policy set (the expiry function: the
            # template gives it no bucket, it decides nothing)
            "policy_bucket": POLICY_OBJECT["PolicyBucket"],
            "policy_object_key": POLICY_OBJECT["PolicyObjectKey"],
        }
    )
    team_policy_object(settings)
    trace = IamCallTrace(LocalNames(names, key_ids(settings), settings.aws_region))
    upstream_server.reset()
    with trace.installed(), ExitStack() as running:
        # Each function built as its entry point builds it (the agent too: its clients are made
        # at build time, as in the chat function's init), the clients stamped with its name
        with trace.building("ApiFunction"):
            api = create_api_app(build_api(settings))
        with trace.building("ChatFunction"):
            chat = build_chat(settings)
            chat.agent()
        with trace.building("ExpiryFunction"):
            expiry = build_chat(settings.model_copy(update={"policy_bucket": None}), routed=False)
            expiry.agent()
        with trace.building("AuditFunction"):
            patch = running.enter_context(pytest.MonkeyPatch.context())
            patch.setattr(audit_function, "deps", build_audit(settings))
        gateway = LocalGateway({"ChatFunction": create_chat_app(chat), "ApiFunction": api})
        # The same chat function, its cards expiring after two seconds (on the same event loop:
        # the agent's upstream client and the token client belong to one)
        expiring = create_chat_app(replace(chat, confirmation_timeout_s=2))
        url = running.enter_context(serve(by_header(gateway, expiring), lifespan="on"))
        ssm = boto3.client(
            "ssm", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region
        )
        ssm.put_parameter(
            Name=names.name("ServiceTokenUrlParameter"),
            Value=f"{url}/api/auth/service-token",
            Type="String",
            Overwrite=True,
        )
        running.enter_context(rule_targets(settings, expiry.expiry_recorder()))
        paths = Paths(url, settings)
        run_every_path(paths, upstream_server)
        paths.until("the audit delivered", lambda: trace.by("AuditFunction"))
    upstream_server.reset()
    return Observed(trace, names.role_statements())


def denied(observed: Observed, statements: dict[str, list[Statement]]) -> list[str]:
    return [
        f"{call.principal}: {call.action} on {call.resource} ({call.operation})"
        for call in sorted(observed.trace.calls)
        if not decide(statements.get(call.principal, []), call.action, call.resource).allowed
    ]


def test_every_request_each_function_makes_is_allowed_by_its_role(observed: Observed):
    refused = denied(observed, observed.statements)
    assert refused == [], "denied by the template's statements:\n" + "\n".join(refused)


def test_every_principal_was_seen_and_every_request_attributed(observed: Observed):
    seen = {call.principal for call in observed.trace.calls}
    assert seen == set(PRINCIPALS) == set(observed.statements)
    assert observed.trace.unattributed == []


def test_each_statement_a_path_uses_is_needed_the_check_fails_without_it(observed: Observed):
    # Given the statements each request was allowed by
    used = {
        statement
        for call in observed.trace.calls
        for statement in decide(
            observed.statements[call.principal], call.action, call.resource
        ).allowing
    }
    # When any one of them is removed, then some request is denied
    for statement in sorted(used, key=lambda s: s.source):
        principal = next(p for p, found in observed.statements.items() if statement in found)
        without = {
            **observed.statements,
            principal: [s for s in observed.statements[principal] if s is not statement],
        }
        assert denied(observed, without), f"{statement.source} is not needed by any request"


def unused_grants(observed: Observed) -> dict[Statement, list[str]]:
    """Per statement, the actions it grants that no request used."""
    found: dict[Statement, list[str]] = {}
    for principal, statements in observed.statements.items():
        calls = observed.trace.by(principal)
        for statement in statements:
            idle = [
                action
                for action in statement.actions
                if not any(
                    call.action.lower() == action.lower()
                    and statement.applies(call.action, call.resource)
                    for call in calls
                )
            ]
            if idle:
                found[statement] = idle
    return found


def test_a_statement_written_out_grants_only_what_a_path_uses(observed: Observed):
    """Statements written out in the template must be used in full (or say why not); those of a
    SAM policy template (DynamoDBCrudPolicy...) grant a fixed set: their unused actions are
    printed (with -s), and only a wholly unused one fails."""
    principal_of = {s: p for p, found in observed.statements.items() for s in found}
    too_much = []
    for statement, actions in sorted(unused_grants(observed).items(), key=lambda u: u[0].source):
        print(f"unused: {statement.source}: {', '.join(actions)}")  # noqa: T201 (the report)
        kept = {a for a in actions if (principal_of[statement], a) in NOT_EXERCISED_HERE}
        written_out = statement.origin == "Statement"
        if set(actions) - kept and (written_out or set(actions) == set(statement.actions)):
            too_much.append(f"{statement.source}: {sorted(set(actions) - kept)}")
    assert too_much == []


def test_presigned_requests_are_the_signing_functions_and_the_rest_is_listed(observed: Observed):
    """The requests, printed with -s (what docs/deploy.md lists); the browser's upload and
    download are authorized against the REST API's role that signed them."""
    for call in sorted(observed.trace.calls):
        print(f"seen: {call.principal} {call.action} {call.resource}")  # noqa: T201 (the report)
    attachments = "arn:aws:s3:::sstools-agent-dev-attachments-123456789012"
    api = {(c.action, c.resource.rsplit("/", 2)[0]) for c in observed.trace.by("ApiFunction")}
    assert ("s3:PutObject", f"{attachments}/uploads") in api
    assert ("s3:GetObject", f"{attachments}/attachments") in api
