"""`make bench` (part 11): what 1,000 turns of each kind cost in AWS at list prices (asserts
nothing).

The chat function's own composition (`build_chat`, the catalog-driven stand-in model) serves real
HTTP under uvicorn against moto in its own process, as `bench/aws_calls.py` does, with every AWS
call recorded with what it sent and got back (`local/aws_calls.py`). `ROUNDS` conversations, each
a read (its first message, answered from the page's object), a read calling a tool, a write that
stops at its card, and the card's confirm: a sample of each kind, scaled to 1,000. Each call is
billed by `bench/cost_model.py`; what the chat function does not call itself is added from the
template: the confirmation machine's transitions and its event, the audit function and table
for every event.

What is measured here and what is assumed (docs/deploy.md, "What it costs"):
- a turn's Lambda duration is its wall time on this machine, each AWS call given `AWS_LATENCY_S`
  (moto answers in a millisecond), plus `MODEL_CALL_S` for each model call (the stand-in answers
  at once; a streaming function pays while it waits). A proxy, not a bill;
- the model's tokens are the stand-in's prompts and replies in characters over
  `CHARS_PER_TOKEN`, plus `TOOL_USE_TOKENS` per call: Bedrock's own count will differ.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import boto3
import httpx
from boto3.dynamodb.types import TypeSerializer
from langchain_core.messages import AIMessage, BaseMessage

from bench.aws_prices import MODEL_PRICES, PRICES, REGION, TAKEN
from bench.bench_agent import DASHBOARD_10
from bench.cost_model import (
    AwsCall,
    Month,
    Usage,
    added,
    aws_call_usage,
    cost,
    decided_path,
    event_size,
    event_usage,
    item_size,
    lambda_usage,
    monthly,
    read_units,
    scaled,
    snapstart_fixed,
    team_month,
    write_units,
)
from functions.chat.app import create_app
from local.agent_stack import AgentStack, local_aws_and_upstream, minted_once, user_issuer
from local.aws_calls import AwsCallTrace, Call
from local.sam_template import TEMPLATE_PATH, load_template
from local.servers import serve
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.chat.event_log import FLUSH_EVERY_S
from sstools_agent.wiring.chat import build_chat

ROUNDS: Final = 10
"""Conversations in the sample: 20 reads, 10 cards, 10 confirms."""
PER: Final = 1000
AWS_LATENCY_S: Final = 0.010
"""Assumed: a DynamoDB, S3, Step Functions or EventBridge call inside the region."""
MODEL_CALL_S: Final = 3.0
"""Assumed: Bedrock's time for one model call, paid by the chat function while it waits."""
CHARS_PER_TOKEN: Final = 3.0
"""Assumed: Claude's tokens in Russian words and JSON schemas."""
TOOL_USE_TOKENS: Final = 264
"""Assumed: the system prompt Anthropic's models add to a call with tools (Claude 3.5 Haiku)."""
AUDIT_CALL_S: Final = 0.1
"""Assumed: the audit function's billed time per event (one PutItem, warm)."""
PLATFORM_LOG_BYTES: Final = 400
"""Assumed: Lambda's own START, END and REPORT lines of one invocation."""
LOG_RECORD_BYTES: Final = 250
"""Assumed: Powertools' JSON around each of the app's log messages (level, time, service...)."""

# Team month (docs/deploy.md): 50 people × 40 questions a working day, 22 working days
PEOPLE, QUESTIONS_A_DAY, WORKING_DAYS = 50, 40, 22
SHARES: Final = {"read": 0.85, "card": 0.15, "confirm": 0.15}
"""Of the questions, 85 % read and 15 % ask for a change; every card is answered (a cancel is
billed as a confirm)."""
RESTORES_PER_TURN: Final = 0.1
"""Assumed: one SnapStart restore of the chat function per ten turns (every turn: the worst)."""


@dataclass(frozen=True)
class Template:
    """What the bill depends on in template.yaml."""

    architecture: str
    chat_mb: int
    api_mb: int
    audit_mb: int
    machine: dict[str, Any]

    @classmethod
    def read(cls) -> Template:
        template = load_template()
        resources = template["Resources"]
        memory = {
            name: resources[name]["Properties"].get(
                "MemorySize", template["Globals"]["Function"]["MemorySize"]
            )
            for name in ("ChatFunction", "ApiFunction", "AuditFunction")
        }
        uri = resources["ConfirmationStateMachine"]["Properties"]["DefinitionUri"]
        machine = json.loads((TEMPLATE_PATH.parent / Path(uri)).read_text(encoding="utf-8"))
        return cls(
            template["Parameters"]["Architecture"]["Default"],
            memory["ChatFunction"],
            memory["ApiFunction"],
            memory["AuditFunction"],
            machine,
        )


@dataclass
class ModelCalls:
    """The stand-in's calls while `recorded`: characters in (messages and tool schemas) and out."""

    calls: list[tuple[int, int]] = field(default_factory=list)

    @contextmanager
    def recorded(self) -> Iterator[ModelCalls]:
        original = StandinChatModel.respond
        calls = self.calls

        def respond(model: StandinChatModel, messages: Sequence[BaseMessage]) -> AIMessage:
            reply = original(model, messages)
            sent = sum(len(str(m.content)) + len(json.dumps(_tool_calls(m))) for m in messages)
            tools = len(json.dumps(model.schemas, ensure_ascii=False))
            calls.append(
                (sent + tools, len(str(reply.content)) + len(json.dumps(_tool_calls(reply))))
            )
            return reply

        StandinChatModel.respond = respond  # type: ignore[method-assign,assignment]
        try:
            yield self
        finally:
            StandinChatModel.respond = original  # type: ignore[method-assign]

    def take(self) -> list[tuple[int, int]]:
        taken, self.calls[:] = list(self.calls), []
        return taken


def _tool_calls(message: BaseMessage) -> list[Any]:
    return list(getattr(message, "tool_calls", []) or [])


class LogBytes(logging.Handler):
    """The app's log records at INFO (the functions' level), in bytes as Powertools writes them."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.bytes = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.bytes += len(record.getMessage().encode()) + LOG_RECORD_BYTES

    def take(self) -> int:
        taken, self.bytes = self.bytes, 0
        return taken


@dataclass
class Turn:
    """One turn as measured: its wall time, the bytes streamed, its calls and model calls."""

    kind: str
    seconds: float
    bytes_out: int
    calls: list[AwsCall]
    model_calls: list[tuple[int, int]]
    log_bytes: int


_TYPES: Final = {"S", "N", "B", "BOOL", "NULL", "L", "M", "SS", "NS", "BS"}
_SERIALIZER: Final = TypeSerializer()


def _typed_value(value: Any) -> Any:
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in _TYPES:
        return value
    return _SERIALIZER.serialize(value)


def _typed(data: Any) -> Any:
    """`data` with its items in DynamoDB's typed form: a boto3 Table's calls carry plain Python
    (typed later, in the request) where a client's carry typed values."""
    if isinstance(data, list):
        return [_typed(x) for x in data]
    if not isinstance(data, dict):
        return data
    typed: dict[str, Any] = {}
    for name, value in data.items():
        if name in ("Item", "Key") and isinstance(value, dict):
            typed[name] = {k: _typed_value(v) for k, v in value.items()}
        elif name == "Items" and isinstance(value, list):
            typed[name] = [{k: _typed_value(v) for k, v in i.items()} for i in value]
        else:
            typed[name] = _typed(value)
    return typed


def _billed(calls: list[Call], dynamodb: Any) -> list[AwsCall]:
    """The turn's calls for billing; an UpdateItem is billed by the item it left, read back now
    (the turn's last write of it: the same item again, or near)."""
    billed = []
    for call in calls:
        params, response, size = call.params, call.response, None
        if call.service == "dynamodb":
            params, response = _typed(params), _typed(response)
            if call.operation in ("UpdateItem", "DeleteItem"):
                found = dynamodb.get_item(
                    TableName=params["TableName"], Key=params["Key"], ConsistentRead=True
                )
                size = item_size(found.get("Item", {}))
        billed.append(AwsCall(call.service, call.operation, params, response, size))
    return billed


async def measure(stack: AgentStack) -> list[Turn]:
    settings = stack.settings.model_copy(update={"model_provider": "standin"})
    trace = AwsCallTrace(settings, latency_s=AWS_LATENCY_S)
    deps = replace(build_chat(settings), service_token=minted_once(settings))
    deps.agent()  # built once per process, as the function does
    token = user_issuer(settings).issue("bench", 3600, {"roles": ["admin"]}).token
    dynamodb = boto3.client(
        "dynamodb", endpoint_url=settings.aws_endpoint_url, region_name=settings.aws_region
    )
    model, logs = ModelCalls(), LogBytes()
    logging.getLogger().addHandler(logs)
    logging.getLogger("sstools_agent").setLevel(logging.INFO)
    turns: list[Turn] = []
    app = create_app(deps)
    with serve(app, lifespan="on") as url, trace.installed(), model.recorded():
        async with httpx.AsyncClient(base_url=url, timeout=60) as client:

            async def turn(kind: str, body: dict[str, Any]) -> list[dict[str, Any]]:
                trace.take(), model.take(), logs.take()
                headers = {"Authorization": f"Bearer {token}"}
                events, streamed = [], 0
                started = time.perf_counter()
                async with client.stream(
                    "POST", "/api/agent/chat", json=body, headers=headers
                ) as response:
                    response.raise_for_status()
                    async for line in response.aiter_lines():
                        streamed += len(line.encode()) + 1
                        if line.startswith("data: "):
                            events.append(json.loads(line.removeprefix("data: ")))
                seconds = time.perf_counter() - started
                await asyncio.sleep(FLUSH_EVERY_S * 2)  # what the turn's writer stores after
                calls, used, logged = trace.take().calls, model.take(), logs.take()
                billed = _billed(calls, dynamodb)
                trace.take()  # the read-backs are the bench's, not the turn's
                turns.append(Turn(kind, seconds, streamed, billed, used, logged))
                return events

            # Two reads a conversation: one the page's object answers, one that calls a tool
            status = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}
            health = {"message": "покажи здоровье дашборда", "ui_context": DASHBOARD_10}
            deploy = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
            for _ in range(ROUNDS):
                events = await turn("read", status)
                conversation = {"conversation_id": events[-1]["metadata"]["conversation_id"]}
                await turn("read", health | conversation)
                events = await turn("card", deploy | conversation)
                card = next(e for e in events if e.get("metadata", {}).get("confirmation_id"))
                confirm = {
                    "action": "confirm",
                    "confirmation_id": card["metadata"]["confirmation_id"],
                }
                await turn("confirm", confirm | conversation)
    logging.getLogger().removeHandler(logs)
    return turns


def _machine_usage(calls: list[AwsCall], machine: dict[str, Any]) -> tuple[Usage, list[Any]]:
    """What the confirmation machine does of its own for a turn's calls, and the events it puts:
    a start enters its first state (which writes the task token into the confirmation's item,
    as big as the turn's card put it); a decision runs the rest of the decided path (which puts
    the outcome on the audit bus, sized here by the definition's entry, its paths unfilled)."""
    path, states = decided_path(machine), machine["States"]
    cards = [
        item_size(c.params["Item"])
        for c in calls
        if c.operation == "PutItem" and c.params["Item"]["PK"].get("S", "").startswith("CONF#")
    ]
    usage: Usage = {}
    entries: list[Any] = []
    for call in calls:
        if call.service != "stepfunctions":
            continue
        entered = path[:1] if call.operation == "StartExecution" else path[1:]
        for name in entered:
            resource = states[name].get("Resource", "")
            usage = added(usage, {"stepfunctions.transitions": 1})
            if ":dynamodb:" in resource:
                usage = added(usage, {"dynamodb.write_units": write_units(max(cards, default=0))})
            if ":events:putEvents" in resource:
                entries += states[name]["Parameters"]["Entries"]
    return usage, entries


def turn_usage(turn: Turn, template: Template) -> tuple[Usage, Usage]:
    """One turn's AWS usage, and its model tokens apart."""
    calls = added(*(aws_call_usage(call) for call in turn.calls))
    machine, machine_events = _machine_usage(turn.calls, template.machine)
    waited = MODEL_CALL_S * len(turn.model_calls)
    # The cancel poll reads the conversation's record every flush while the model is awaited
    polls = {"dynamodb.read_units": waited / FLUSH_EVERY_S * read_units(0, consistent=True)}
    put = [e for c in turn.calls if c.operation == "PutEvents" for e in c.params["Entries"]]
    events = put + machine_events  # every one reaches the audit function, which stores it
    audited = len(events) * AUDIT_CALL_S
    audit = added(
        event_usage(machine_events),
        lambda_usage(len(events), audited, template.audit_mb, template.architecture),
        {"dynamodb.write_units": sum(write_units(event_size(e)) for e in events)},
    )
    chat = lambda_usage(1, turn.seconds + waited, template.chat_mb, template.architecture)
    edge = {"cloudfront.requests": 1.0, "cloudfront.bytes_out": float(turn.bytes_out)}
    logs = {"logs.bytes": float(turn.log_bytes + PLATFORM_LOG_BYTES * (1 + len(events)))}
    tokens = {
        "bedrock.input_tokens": sum(
            i / CHARS_PER_TOKEN + TOOL_USE_TOKENS for i, _ in turn.model_calls
        ),
        "bedrock.output_tokens": sum(o / CHARS_PER_TOKEN for _, o in turn.model_calls),
    }
    return added(calls, machine, polls, audit, chat, edge, logs), tokens


def per_turn(turns: list[Turn], template: Template) -> dict[str, tuple[Usage, Usage]]:
    """Each kind's mean usage per turn, AWS and tokens."""
    kinds: dict[str, tuple[Usage, Usage]] = {}
    for kind in dict.fromkeys(t.kind for t in turns):
        sample = [turn_usage(t, template) for t in turns if t.kind == kind]
        share = 1 / len(sample)
        kinds[kind] = (
            scaled(added(*(aws for aws, _ in sample)), share),
            scaled(added(*(tokens for _, tokens in sample)), share),
        )
    return kinds


def print_costs(turns: list[Turn], template: Template) -> None:
    kinds = per_turn(turns, template)
    services = sorted({PRICES[item].service for aws, _ in kinds.values() for item in aws})
    print(f"== AWS cost of {PER:,} turns of each kind, USD, {REGION} list prices {TAKEN} ==")
    counts = {kind: sum(1 for t in turns if t.kind == kind) for kind in kinds}
    print(
        f"   sample: {', '.join(f'{n} {k}' for k, n in counts.items())}; chat function "
        f"{template.chat_mb} MB {template.architecture}; each model call {MODEL_CALL_S:g} s, each "
        f"AWS call {AWS_LATENCY_S * 1000:g} ms (assumed)"
    )
    print(f"  {'':18}" + "".join(f"{kind:>12}" for kind in kinds))
    priced = {kind: cost(scaled(aws, PER)) for kind, (aws, _) in kinds.items()}
    for service in services:
        print(f"  {service:18}" + "".join(f"{p.get(service, 0.0):12.4f}" for p in priced.values()))
    print(f"  {'AWS in all':18}" + "".join(f"{sum(p.values()):12.4f}" for p in priced.values()))
    tokens = {kind: cost(scaled(t, PER), MODEL_PRICES) for kind, (_, t) in kinds.items()}
    print(
        f"  {'Bedrock (apart)':18}" + "".join(f"{sum(p.values()):12.4f}" for p in tokens.values())
    )
    print("  per turn:")
    for kind, (aws, t) in kinds.items():
        seconds = [x.seconds for x in turns if x.kind == kind]
        model_calls = [len(x.model_calls) for x in turns if x.kind == kind]
        print(
            f"    {kind:8} wall {sum(seconds) / len(seconds):5.2f} s here + "
            f"{sum(model_calls) / len(model_calls):.1f} model calls; "
            f"GB-s {aws.get(f'lambda.{template.architecture}.gb_s', 0):.2f}; "
            f"DynamoDB {aws.get('dynamodb.read_units', 0):.1f} RRU "
            f"{aws.get('dynamodb.write_units', 0):.1f} WRU; "
            f"S3 {aws.get('s3.put_requests', 0):.1f} PUT {aws.get('s3.get_requests', 0):.1f} GET; "
            f"transitions {aws.get('stepfunctions.transitions', 0):.0f}; "
            f"events {aws.get('eventbridge.events', 0):.0f}; "
            f"streamed {aws.get('cloudfront.bytes_out', 0) / 1024:.1f} KB; "
            f"logs {aws.get('logs.bytes', 0) / 1024:.1f} KB; "
            f"tokens {t.get('bedrock.input_tokens', 0):.0f} in "
            f"{t.get('bedrock.output_tokens', 0):.0f} out"
        )
    print_month(kinds, template)


def print_month(kinds: dict[str, tuple[Usage, Usage]], template: Template) -> None:
    turns = team_month(PEOPLE, QUESTIONS_A_DAY, WORKING_DAYS, SHARES)
    restores = sum(turns.values()) * RESTORES_PER_TURN * template.chat_mb / 1024
    fixed = added(
        snapstart_fixed([template.chat_mb, template.api_mb]),
        {"lambda.snapstart.restore_gb": restores},
    )
    aws = monthly({k: v[0] for k, v in kinds.items()}, Month(turns, fixed))
    tokens = monthly({k: v[1] for k, v in kinds.items()}, Month(turns, {}), MODEL_PRICES)
    print(
        f"== A month: {PEOPLE} people × {QUESTIONS_A_DAY} questions × {WORKING_DAYS} days, "
        f"{', '.join(f'{n:,.0f} {k}' for k, n in turns.items())}; SnapStart cache of both "
        f"functions all month, a restore per {1 / RESTORES_PER_TURN:g} turns =="
    )
    for service, usd in sorted(aws.items(), key=lambda s: -s[1]):
        print(f"  {service:18} {usd:10.2f}")
    print(f"  {'AWS in all':18} {sum(aws.values()):10.2f}")
    print(f"  {'Bedrock (apart)':18} {sum(tokens.values()):10.2f}")


async def main() -> None:
    template = Template.read()
    with local_aws_and_upstream("bench") as stack:
        turns = await measure(stack)
    print_costs(turns, template)


if __name__ == "__main__":
    asyncio.run(main())
