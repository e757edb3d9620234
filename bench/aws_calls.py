"""`make bench` (part 3): every AWS call of a chat turn, by what makes it, before and after the
event the user waits for (local/aws_calls.py records them).

The chat function's own composition (`build_chat`: the DynamoDB store and confirmations, the
LangGraph checkpointer, Step Functions, EventBridge; the stand-in model) serves real HTTP (uvicorn)
against moto in its own process. Turns: the first message of a new conversation, a message on an
existing one, a write that asks for confirmation (the card), and the confirm. The service token is
fetched once and cached, as the chat function's client caches it.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from typing import Any

import httpx

from bench.bench_agent import DASHBOARD_10
from functions.chat.app import create_app
from local.agent_stack import (
    AgentStack,
    local_aws_and_upstream,
    minted_once,
    user_issuer,
)
from local.aws_calls import CONFIRM_RESOLVED, FIRST_EVENT, AwsCallTrace, TurnCalls
from local.servers import serve
from sstools_agent.wiring.chat import build_chat

TurnRow = tuple[str, str, TurnCalls]


async def measure(stack: AgentStack) -> list[TurnRow]:
    settings = stack.settings
    trace = AwsCallTrace(settings)
    deps = build_chat(settings)
    deps = replace(deps, service_token=minted_once(settings))
    deps.agent()  # built once per process, as the function does
    token = user_issuer(settings).issue("bench", 3600, {"roles": ["admin"]}).token
    rows: list[TurnRow] = []
    with serve(trace.marking(create_app(deps)), lifespan="on") as url, trace.installed():
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:

            async def turn(body: dict[str, Any]) -> tuple[list[dict[str, Any]], TurnCalls]:
                trace.take()
                headers = {"Authorization": f"Bearer {token}"}
                events = []
                async with client.stream(
                    "POST", "/api/agent/chat", json=body, headers=headers
                ) as response:
                    response.raise_for_status()
                    async for line in response.aiter_lines():
                        if line.startswith("data: "):
                            events.append(json.loads(line.removeprefix("data: ")))
                return events, trace.take()

            status = {"message": "какой статус у этого дашборда?", "ui_context": DASHBOARD_10}
            events, calls = await turn(status)
            rows.append(("new conversation", FIRST_EVENT, calls))
            conversation = events[-1]["metadata"]["conversation_id"]
            _, calls = await turn(status | {"conversation_id": conversation})
            rows.append(("existing conversation", FIRST_EVENT, calls))
            deploy = {"message": "задеплой дашборд 10 в staging", "ui_context": DASHBOARD_10}
            events, calls = await turn(deploy | {"conversation_id": conversation})
            rows.append(("write (card)", FIRST_EVENT, calls))
            card = next(e for e in events if e.get("metadata", {}).get("confirmation_id"))
            confirm = {
                "conversation_id": conversation,
                "action": "confirm",
                "confirmation_id": card["metadata"]["confirmation_id"],
            }
            _, calls = await turn(confirm)
            rows.append(("confirm", CONFIRM_RESOLVED, calls))
    return rows


def print_rows(rows: list[TurnRow]) -> None:
    for label, mark, calls in rows:
        before, after = calls.before(mark), calls.after(mark)
        print(
            f"  {label:22} before {mark:16} {sum(before.values()):3} calls in "
            f"{calls.round_trips(mark)} round trips   after {sum(after.values()):3}"
        )
        print(f"    before: {', '.join(f'{k}={v}' for k, v in sorted(before.items()))}")
        print(f"    after : {', '.join(f'{k}={v}' for k, v in sorted(after.items()))}")


async def main() -> None:
    with local_aws_and_upstream("bench") as stack:
        print("== AWS calls of a chat turn over HTTP, by caller, before and after what the user")
        print("   waits for (the first event; on a confirm, confirm_resolved) ==")
        print_rows(await measure(stack))


if __name__ == "__main__":
    asyncio.run(main())
