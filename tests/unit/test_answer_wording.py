"""What the stand-in model's Russian answers say about the sample upstream's data: words, not
identifiers. Every tool the upstream serves is called through the agent's own upstream client
(over the seeded data, with each seeded object its arguments can name), and its result, whole and
as the model is given it when long, is answered in Russian; no answer may show a key of the
result, a tool's or an argument's name, a status as the upstream spells it, or an ISO time."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from local.sample_upstream.app import Caller, caller, create_app
from sstools_agent.adapters.upstream_client import UpstreamToolClient
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.domain.catalog_types import ToolSpec
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.glossary import ARGUMENT_LABELS
from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_calls import resolve_tool_call
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_output_summary import summarise_tool_output
from sstools_agent.domain.tool_runs import ToolCallFailed, UpstreamCredentials
from sstools_agent.domain.ui_context import UIContext, parse_ui_context
from sstools_agent.domain.wording import ENUM_VALUES, ISO_TIMESTAMP

ENVIRONMENTS = EnvironmentRegistry.from_tiers(
    {"ss-dev": "dev", "staging": "staging", "prod": "prod"}
)
SEEDED: dict[str, list[Any]] = {
    # git statuses clean, modified, ahead, behind; validation passed, warnings, failed
    "dashboard_id": [1, 2, 3, 5, 7, 10, 42],
    "dashboard_ids": [[1], [2], [3], [5], [7], [10], [10, 11]],
    # reviews approved, pending, changes_requested
    "dataset_id": [1, 3, 15],
    # migrations planned, done, failed, running
    "migration_id": [1, 2, 3, 5],
    "task_id": ["task-101", "task-102"],
    "status": ["planned", "done", "failed", "running"],
    # a statement that writes: its result counts the rows it changed
    "sql": ["UPDATE mart.subscribers SET value = 0 WHERE id = 5"],
}
"""Seeded objects whose data differs in what an answer says of them."""
SNAKE_CASE = re.compile(r"(?<![\w.])[a-z][a-z0-9]*(?:_[a-z0-9]+)+(?![\w])")


def calls(spec: ToolSpec) -> Iterator[dict[str, Any]]:
    """The tool's example call, the same with each seeded object in turn, and (when every
    argument is optional) the call with none."""
    yield dict(spec.example_args)
    fields = spec.args_model.model_fields
    # Only what the call needs beside the seeded object: an example's search would hide it
    needed = {k: v for k, v in spec.example_args.items() if fields[k].is_required()}
    for name, values in SEEDED.items():
        if name in fields:
            for value in values:
                yield {**needed, name: value}
    if not any(info.is_required() for info in spec.args_model.model_fields.values()):
        yield {}


def page(env_id: str) -> UIContext:
    context = parse_ui_context(
        {"contextVersion": 1, "objectType": None, "objectId": None, "envId": env_id}, ENVIRONMENTS
    )
    assert isinstance(context, UIContext)
    return context


async def upstream_results() -> list[tuple[str, dict[str, Any], Any]]:
    """(tool, arguments, result) of every call of `calls` the upstream answers, as an admin
    (every call allowed), through the agent's upstream client, in the catalog's order (a write
    changes what later reads see, as it would)."""
    upstream = create_app(None, None)  # type: ignore[arg-type]  # no tokens: the caller is set
    upstream.app.dependency_overrides[caller] = lambda: Caller(user="u", role=Role.ADMIN)
    client = UpstreamToolClient("http://upstream", transport=httpx.ASGITransport(app=upstream.app))
    results = []
    try:
        for spec in CATALOG:
            for args in calls(spec) if spec.path is not None else ():
                call = resolve_tool_call(spec, args, page("ss-dev"), ENVIRONMENTS)
                try:
                    outcome = await client.call(call, UpstreamCredentials("s", "u"))
                except ToolCallFailed:
                    continue  # refused (a migration into another environment): no result
                results.append((spec.name, args, outcome.output))
    finally:
        await client.aclose()
    return results


ENUM_KEYS = frozenset({"status", "kind", "action", "access", "tier", "result"})
"""Keys whose values are the upstream's enums, not names."""
WORDS_OF_THE_TRADE = frozenset({"git", "id", "SQL"})
"""English words a Russian engineer writes as they are."""


def identifiers(data: Any) -> tuple[set[str], set[str]]:
    """The keys of a result (never words for a person) and its names: string values (a
    table's, a column's, an environment's), an enum's aside."""
    keys: set[str] = set()
    names: set[str] = set()
    stack: list[tuple[str, Any]] = [("", data)]
    while stack:
        key, item = stack.pop()
        if isinstance(item, dict):
            keys.update(str(k) for k in item)
            stack.extend((str(k), v) for k, v in item.items())
        elif isinstance(item, list):
            stack.extend((key, v) for v in item)
        elif isinstance(item, str) and key not in ENUM_KEYS:
            names.update({item, *re.findall(r"\w+", item)})  # a remark quoted names a column
    return keys, names


def problems(data: Any, answer: str) -> list[str]:
    """What in a Russian answer is not words: a key of the data, a tool's or an argument's name
    or a status (unless the data names something so), a snake_case id, an ISO time."""
    keys, names = identifiers(data)
    answer = re.sub(r"```\w+", "```", answer)  # a code block's language is markup, not read
    ours = (keys | set(CATALOG.names) | set(ARGUMENT_LABELS) | ENUM_VALUES) - WORDS_OF_THE_TRADE
    words = set(re.findall(r"(?<![\w-])[A-Za-z_]\w*(?:-[A-Za-z0-9_]+)*", answer)) - names
    found = [f"shows {word!r}" for word in sorted(words & ours)]
    found += [
        f"shows the id {word!r}" for word in sorted(set(SNAKE_CASE.findall(answer)) - names - ours)
    ]
    found += [f"shows the time {m!r}" for m in ISO_TIMESTAMP.findall(answer)]
    return found


def answered_in_russian(tool: str, args: dict[str, Any], result: Any) -> str:
    """The stand-in's answer to a Russian request once the tool's result came back."""
    call = {"name": tool, "args": args, "id": "call_1"}
    messages = [
        HumanMessage(content="покажи, что там"),
        AIMessage(content="", tool_calls=[call]),
        ToolMessage(
            content=json.dumps(result, ensure_ascii=False), tool_call_id="call_1", name=tool
        ),
    ]
    return str(StandinChatModel().respond(messages).content)


@pytest.fixture(scope="module")
def results() -> list[tuple[str, dict[str, Any], Any]]:
    return asyncio.run(upstream_results())


def test_the_calls_cover_every_tool_the_upstream_serves(results):
    served = {spec.name for spec in CATALOG if spec.path is not None}
    assert {tool for tool, _, _ in results} == served
    assert len(results) > 50


def test_no_russian_answer_shows_an_identifier_an_english_status_or_an_iso_time(results):
    # Given every result of the sample upstream, whole and as the model reads it when it is long
    found = {}
    for tool, args, data in results:
        summary = json.loads(summarise_tool_output(data, budget=1500).content)
        for shown in (data, summary):
            # When the stand-in model answers it in Russian
            answer = answered_in_russian(tool, args, shown)
            # Then the answer reads as words (the names the call gave are names too)
            wrong = problems({"call": args, "result": shown}, answer)
            if wrong:
                found[f"{tool}({json.dumps(args, ensure_ascii=False)})"] = (wrong, answer)
    assert not found, json.dumps(found, ensure_ascii=False, indent=1)


def test_the_scan_catches_what_it_is_for():
    data = {"git": {"status": "behind"}, "validation": {"checked_at": "2026-11-11T06:00:00Z"}}
    assert problems(data, "git-статус — behind") == ["shows 'behind'"]
    assert problems(data, "валидация (2026-11-11T06:00:00Z)") == [
        "shows the time '2026-11-11T06:00'"
    ]
    assert problems(data, "вызван run_llm_validation") == ["shows 'run_llm_validation'"]
    assert problems(data, "поле checked_at") == ["shows 'checked_at'"]
    assert (
        problems({"table": "energy_readings", "env": "staging"}, "mart.energy_readings в staging")
        == []
    )
    assert problems({"tier": "staging"}, "уровень staging") == ["shows 'staging'"]
    assert problems({}, "колонка region_code") == ["shows the id 'region_code'"]
