"""The offline chat model: deterministic and rule-based. It is not an LLM.

It exists so that the local stack, the tests and the benchmark run the real agent (middleware,
checkpoints, tools, streaming) with no model service. Its rules:
- it only ever calls a tool it was given (`bind_tools`), picked by weighted keywords (Russian and
  English) in the user's last message: each tool's `offline` choice in the catalog;
- it fills ids and environments from the message, else from the UI context block of the system
  prompt (the same block a real model reads), as the declaration's `ArgsRecipe` says;
- after tool results it answers from them, in the language of the user's last message, with the
  facts the seed's scenarios ask for (git status, last change and validation for a dashboard;
  mappings, dependencies and review status for a dataset);
- it streams its answer word by word.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from sstools_agent.agent.prompts import OBJECT_SUMMARY_CLOSE, OBJECT_SUMMARY_OPEN
from sstools_agent.domain.catalog_types import ArgsRecipe, OfflineChoice
from sstools_agent.domain.tool_catalog import CATALOG, ToolCatalog
from sstools_agent.domain.tool_output_summary import read_tool_output_block
from sstools_agent.domain.ui_context import UI_CONTEXT_CLOSE, UI_CONTEXT_OPEN

# Words that name the seeded environments; an id in the page context is always understood.
ENVIRONMENT_WORDS: Final = {
    "prod": "prod",
    "прод": "prod",
    "продакшн": "prod",
    "production": "prod",
    "продуктив": "prod",
    "staging": "staging",
    "стейдж": "staging",
    "стейджинг": "staging",
    "stage": "staging",
    "ss-dev": "ss-dev",
    "dev": "ss-dev",
    "дев": "ss-dev",
}


_STRONG, _WEAK = 3, 1
_CYRILLIC: Final = re.compile(r"[а-яё]", re.IGNORECASE)
_NUMBER: Final = re.compile(r"(?<![\w-])\d{1,15}(?![\w-])")
_TASK_ID: Final = re.compile(r"\btask-\d+\b")
_CODE_SPAN: Final = re.compile(r"`([^`]+)`")
_QUOTED: Final = re.compile(r"[«\"]([^»\"]+)[»\"]")
_TABLE: Final = re.compile(r"\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b")


def _text_of(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(
        part.get("text", "") if isinstance(part, dict) else str(part) for part in content
    )


def _system_block(messages: Sequence[BaseMessage], opening: str, closing: str) -> dict[str, Any]:
    """The JSON object between two delimiters of the system prompt, or {}."""
    for message in messages:
        if isinstance(message, SystemMessage):
            text = _text_of(message)
            start, end = text.find(opening), text.find(closing)
            if 0 <= start < end:
                try:
                    data = json.loads(text[start + len(opening) : end])
                except ValueError:
                    return {}
                return data if isinstance(data, dict) else {}
    return {}


def _page_context(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The UI context the system prompt carries, or {} («контекст недоступен»)."""
    return _system_block(messages, UI_CONTEXT_OPEN, UI_CONTEXT_CLOSE)


def _object_summary(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The prefetched object summary the system prompt carries, or {}."""
    return _system_block(messages, OBJECT_SUMMARY_OPEN, OBJECT_SUMMARY_CLOSE)


class _Request:
    """The user's message and page, with the extractions every rule needs."""

    def __init__(self, text: str, page: dict[str, Any]) -> None:
        self.text = text
        self.lower = text.lower()
        self.page = page
        self.russian = bool(_CYRILLIC.search(text))
        self.numbers = [int(n) for n in _NUMBER.findall(text)]

    def page_id(self, object_type: str) -> int | None:
        if self.page.get("objectType") == object_type and self.page.get("objectId"):
            return int(self.page["objectId"])
        return None

    def object_ids(self, object_type: str) -> list[int]:
        ids = [n for n in self.numbers if n > 0]
        page_id = self.page_id(object_type)
        return ids or ([page_id] if page_id else [])

    def object_id(self, object_type: str) -> int | None:
        ids = self.object_ids(object_type)
        return ids[0] if ids else None

    def environments(self) -> list[str]:
        words = re.findall(r"[a-zа-яё-]+", self.lower)
        found = [ENVIRONMENT_WORDS[w] for w in words if w in ENVIRONMENT_WORDS]
        return list(dict.fromkeys(found))

    def target_environment(self) -> str | None:
        current = self.page.get("envId")
        others = [env for env in self.environments() if env != current]
        return others[0] if others else None

    def sql(self) -> str | None:
        span = _CODE_SPAN.search(self.text)
        if span:
            return span.group(1).strip()
        start = re.search(r"\b(select|with|update|delete|insert|explain|drop)\b", self.lower)
        return self.text[start.start() :].strip() if start else None

    def quoted(self) -> str | None:
        match = _QUOTED.search(self.text)
        return match.group(1) if match else None


def _score(choice: OfflineChoice, lower: str) -> int:
    return _STRONG * sum(w in lower for w in choice.strong) + _WEAK * sum(
        w in lower for w in choice.weak
    )


def choose_tool(text: str, available: Sequence[str], catalog: ToolCatalog = CATALOG) -> str | None:
    """The bound tool whose declared offline keywords best match `text`, or None."""
    lower = text.lower()
    scored = [
        (_score(spec.offline, lower), -spec.offline.precedence, spec.name)
        for spec in catalog
        if spec.offline is not None and spec.name in available
    ]
    best = max(scored, default=(0, 0, None))
    return best[2] if best[0] > 0 else None


ArgsBuilder = Callable[[_Request], dict[str, Any] | None]


def _dashboard_search(r: _Request) -> dict[str, Any]:
    ids = r.object_ids("dashboard")
    if ids:
        return {"dashboard_ids": ids}
    query = r.quoted()
    return {"query": query} if query else {}


def _one_dashboard(r: _Request, **extra: Any) -> dict[str, Any] | None:
    dashboard_id = r.object_id("dashboard")
    return None if dashboard_id is None else {"dashboard_id": dashboard_id, **extra}


def _branch(r: _Request) -> dict[str, Any] | None:
    match = re.search(r"(?:ветк[уаи]|branch)\s+([A-Za-z0-9._/-]+)", r.text, re.IGNORECASE)
    return _one_dashboard(r, branch_name=match.group(1) if match else "agent-chat")


def _sql(r: _Request) -> dict[str, Any] | None:
    sql = r.sql()
    return None if sql is None else {"database_id": 1, "sql": sql}


def _dataset_table(r: _Request) -> dict[str, Any] | None:
    match = _TABLE.search(r.lower)
    if match is None:
        return None
    return {"database_id": 1, "schema_name": match.group(1), "table_name": match.group(2)}


def _minutes(r: _Request) -> dict[str, Any]:
    match = re.search(r"(\d+)\s*(?:мин|min)", r.lower)
    return {
        "reason": r.quoted() or r.text[:200],
        "duration_minutes": int(match.group(1)) if match else 30,
    }


def _task(r: _Request) -> dict[str, Any] | None:
    match = _TASK_ID.search(r.lower)
    return {"task_id": match.group(0)} if match else None


def _dataset_scope(r: _Request) -> dict[str, Any]:
    dataset_id = r.object_id("dataset")
    return {"dataset_id": dataset_id} if dataset_id else {}


def _schema_value(name: str, r: _Request) -> Any:
    """A required argument, guessed from its name (see `ArgsRecipe.FROM_SCHEMA`)."""
    if name == "source_env_id":
        return r.page.get("envId")
    if name == "target_env_id":
        return r.target_environment()
    if name.endswith("_ids"):
        return r.object_ids(name.removesuffix("_ids")) or None
    if name.endswith("_id"):
        return r.object_id(name.removesuffix("_id"))
    if name == "sql":
        return r.sql()
    return r.quoted()


def _from_schema(args_model: type[BaseModel], r: _Request) -> dict[str, Any] | None:
    """The required arguments of `args_model`, or None when the message lacks one."""
    args: dict[str, Any] = {}
    for name, info in args_model.model_fields.items():
        if info.is_required():
            value = _schema_value(name, r)
            if value is None:
                return None
            args[name] = value
    return args


BUILDERS: Final[Mapping[ArgsRecipe, ArgsBuilder]] = {
    ArgsRecipe.DASHBOARD_SEARCH: _dashboard_search,
    ArgsRecipe.OPTIONAL_DASHBOARD: lambda r: {
        k: v for k, v in {"dashboard_id": r.object_id("dashboard")}.items() if v
    },
    ArgsRecipe.BRANCH: _branch,
    ArgsRecipe.COMMIT: lambda r: _one_dashboard(r, message=r.quoted() or "Изменения из агент-чата"),
    ArgsRecipe.DATASET_SCOPE: _dataset_scope,
    ArgsRecipe.SQL_QUERY: _sql,
    ArgsRecipe.DATASET_TABLE: _dataset_table,
    ArgsRecipe.TASK: _task,
    ArgsRecipe.MAINTENANCE_WINDOW: _minutes,
    ArgsRecipe.MAINTENANCE_EVENT: lambda r: (
        {"event_id": n} if (n := next(iter(r.numbers), None)) else None
    ),
}
"""The builders for arguments no schema rule can guess, by the recipe a declaration names."""


def build_arguments(
    tool: str, r: _Request, catalog: ToolCatalog = CATALOG
) -> dict[str, Any] | None:
    """The arguments the offline model sends to `tool`, or None (the message lacks them, or the
    tool declares no offline choice)."""
    spec = catalog.get(tool)
    if spec is None or spec.offline is None:
        return None
    if spec.offline.args is ArgsRecipe.FROM_SCHEMA:
        return _from_schema(spec.args_model, r)
    return BUILDERS[spec.offline.args](r)


def _say(russian: bool, ru: str, en: str) -> str:
    return ru if russian else en


def _items(value: Any) -> list[Any]:
    """A list, whether passed whole or summarised as {"items": [...], "total_count": n}."""
    if isinstance(value, dict) and "items" in value:
        value = value["items"]
    return value if isinstance(value, list) else []


def _dashboard_facts(d: dict[str, Any], russian: bool) -> str:
    git, change, validation = d.get("git", {}), d.get("last_change", {}), d.get("validation", {})
    issues = "; ".join(_items(validation.get("issues"))) or _say(
        russian, "замечаний нет", "no issues"
    )
    return _say(
        russian,
        f"Дашборд «{d.get('title')}» (id {d.get('id')}) в {d.get('environment')}: "
        f"git-статус — {git.get('status')} (ветка {git.get('branch')}), "
        f"последнее изменение — {change.get('at')} ({change.get('by')}), "
        f"валидация — {validation.get('status')} ({issues}).",
        f"Dashboard “{d.get('title')}” (id {d.get('id')}) in {d.get('environment')}: "
        f"git status {git.get('status')} (branch {git.get('branch')}), "
        f"last change {change.get('at')} by {change.get('by')}, "
        f"validation {validation.get('status')} ({issues}).",
    )


def _dataset_facts(d: dict[str, Any], russian: bool) -> str:
    review, deps = d.get("review", {}), d.get("dependencies", {})
    unmapped = ", ".join(_items(d.get("unmapped_columns"))) or _say(russian, "нет", "none")
    comments = "; ".join(_items(review.get("comments"))) or _say(russian, "нет", "none")
    dashboards = ", ".join(str(i) for i in _items(deps.get("dashboards"))) or "—"
    return _say(
        russian,
        f"Датасет {d.get('schema')}.{d.get('table_name')} (id {d.get('id')}) в "
        f"{d.get('environment')}: статус ревью — {review.get('status')} (замечания: {comments}); "
        f"колонки без маппинга: {unmapped}; зависимости: дашборды {dashboards}, "
        f"источники {', '.join(_items(deps.get('upstream_tables'))) or '—'}.",
        f"Dataset {d.get('schema')}.{d.get('table_name')} (id {d.get('id')}) in "
        f"{d.get('environment')}: review status {review.get('status')} (remarks: {comments}); "
        f"unmapped columns: {unmapped}; dependencies: dashboards {dashboards}, "
        f"sources {', '.join(_items(deps.get('upstream_tables'))) or '—'}.",
    )


def _describe_success(tool: str, data: Any, russian: bool) -> str:
    if tool == "search_dashboards" and isinstance(data, dict):
        found = _items(data.get("dashboards"))
        if len(found) == 1:
            return _dashboard_facts(found[0], russian)
        names = ", ".join(f"«{d.get('title')}» (id {d.get('id')})" for d in found[:5])
        return _say(
            russian,
            f"Найдено дашбордов: {data.get('total')}. Первые: {names}.",
            f"Found {data.get('total')} dashboards. First: {names}.",
        )
    if tool == "superset_explore_database" and isinstance(data, dict) and "dataset" in data:
        return _dataset_facts(data["dataset"], russian)
    if tool == "deploy_dashboard" and isinstance(data, dict):
        ids = ", ".join(str(i) for i in _items(data.get("deployed")))
        return _say(
            russian,
            f"Готово: дашборды {ids} задеплоены в {data.get('target_env_id')} "
            f"(задача {data.get('task_id')}).",
            f"Done: dashboards {ids} deployed to {data.get('target_env_id')} "
            f"(task {data.get('task_id')}).",
        )
    if tool == "get_health_summary" and isinstance(data, dict):
        return _say(
            russian,
            f"Здоровье {data.get('environment')}: дашбордов {data.get('total')}, "
            f"с ошибками {data.get('failing')}.",
            f"Health of {data.get('environment')}: {data.get('total')} dashboards, "
            f"{data.get('failing')} failing.",
        )
    facts = ", ".join(
        f"{k}: {v}"
        for k, v in (data.items() if isinstance(data, dict) else [])
        if isinstance(v, str | int | float | bool)
    )[:300]
    return _say(russian, f"Готово ({tool}). {facts}".strip(), f"Done ({tool}). {facts}".strip())


def _describe_failure(message: ToolMessage, russian: bool) -> str:
    artifact = message.artifact if isinstance(message.artifact, dict) else {}
    tool, event = message.name or "tool", artifact.get("event")
    if event == "permission_denied":
        role = (artifact.get("decision") or {}).get("permission", {}).get("required_role")
        return _say(
            russian,
            f"Недостаточно прав: для {tool} нужна роль {role}.",
            f"Not allowed: {tool} requires the {role} role.",
        )
    if event == "cancelled":
        return _say(
            russian,
            f"Операция {tool} отменена, ничего не изменено.",
            f"The {tool} operation was cancelled; nothing was changed.",
        )
    detail = _text_of(message).split(": ", 1)[-1]
    return _say(russian, f"Не удалось выполнить {tool}: {detail}", f"{tool} failed: {detail}")


class OfflineChatModel(BaseChatModel):
    """Deterministic, rule-based stand-in for an LLM (see the module docstring)."""

    bound_tools: tuple[str, ...] = ()
    token_delay_s: float = 0.0
    """Pause between streamed words, to make streaming visible in a demo."""

    @property
    def _llm_type(self) -> str:
        return "ss-tools-offline-rules"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Remembers which tools it may call (it never calls any other)."""
        names = tuple(convert_to_openai_tool(tool)["function"]["name"] for tool in tools)
        return self.model_copy(update={"bound_tools": names})

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The whole reply to a conversation: a tool call, or an answer."""
        humans = [m for m in messages if isinstance(m, HumanMessage)]
        russian = bool(humans) and bool(_CYRILLIC.search(_text_of(humans[-1])))
        if messages and isinstance(messages[-1], ToolMessage):
            return AIMessage(content=self._answer_from_tools(messages, russian))
        request = _Request(_text_of(humans[-1]) if humans else "", _page_context(messages))
        from_summary = self._answer_from_summary(request, messages)
        if from_summary is not None:
            return AIMessage(content=from_summary)
        tool = choose_tool(request.text, self.bound_tools)
        args = None if tool is None else build_arguments(tool, request)
        if tool is None or args is None:
            return AIMessage(content=self._no_tool_answer(tool, request))
        call_id = (
            f"call_{uuid.uuid5(uuid.NAMESPACE_URL, request.text + str(len(messages))).hex[:16]}"
        )
        return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": call_id}])

    def _answer_from_summary(
        self, request: _Request, messages: Sequence[BaseMessage]
    ) -> str | None:
        """The answer from the prompt's prefetched object summary, when the question is the one
        its tool answers, about the page's object (as an LLM would read the context first)."""
        summary = _object_summary(messages)
        if not summary or summary.get("tool") in self.bound_tools:
            return None
        tool = str(summary.get("tool"))
        if choose_tool(request.text, (*self.bound_tools, tool)) != tool:
            return None
        if build_arguments(tool, request) != summary.get("args"):
            return None
        try:
            data = json.loads(str(summary.get("result")))
        except ValueError:
            return None
        return _describe_success(tool, data, request.russian)

    def _answer_from_tools(self, messages: Sequence[BaseMessage], russian: bool) -> str:
        results: list[ToolMessage] = []
        for message in reversed(messages):
            if not isinstance(message, ToolMessage):
                break
            results.insert(0, message)
        parts = []
        for result in results:
            if result.status == "error":
                parts.append(_describe_failure(result, russian))
                continue
            block = read_tool_output_block(_text_of(result))
            if block is not None:  # read as data, as the block's frame says
                data = block.get("result")
            else:
                try:
                    data = json.loads(_text_of(result))
                except ValueError:
                    data = _text_of(result)
            parts.append(_describe_success(result.name or "tool", data, russian))
        return " ".join(parts)

    def _no_tool_answer(self, tool: str | None, request: _Request) -> str:
        if tool is not None:  # a tool fits, but the message lacks what it needs
            return _say(
                request.russian,
                f"Чтобы выполнить {tool}, уточните объект и окружение (например: "
                "«задеплой дашборд 10 в staging»).",
                f"To run {tool}, name the object and the environment (for example: "
                "“deploy dashboard 10 to staging”).",
            )
        offered = ", ".join(self.bound_tools) or _say(request.russian, "нет", "none")
        return _say(
            request.russian,
            f"Я ассистент ss-tools (правила, без LLM). Доступные инструменты: {offered}.",
            f"I am the ss-tools assistant (rule-based, no LLM). Tools: {offered}.",
        )

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    def _chunks(self, reply: AIMessage) -> Iterator[ChatGenerationChunk]:
        if reply.tool_calls:
            chunks = [
                {
                    "name": c["name"],
                    "args": json.dumps(c["args"], ensure_ascii=False),
                    "id": c["id"],
                    "index": i,
                }
                for i, c in enumerate(reply.tool_calls)
            ]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks))
            return
        for word in re.findall(r"\S+\s*", str(reply.content)):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        # BaseChatModel.astream reports each chunk to the callbacks (LangGraph's "messages" mode).
        for chunk in self._chunks(self.respond(messages)):
            yield chunk
            if self.token_delay_s:
                await asyncio.sleep(self.token_delay_s)
            else:
                await asyncio.sleep(0)
