"""The offline chat model: deterministic and rule-based. It is not an LLM.

It exists so that the local stack, the tests and the benchmark run the real agent (middleware,
checkpoints, tools, streaming) with no model service, and it is scored by `make eval` like any
model. Its rules:
- it reads what the user asks for over the whole catalog (each tool's `offline` choice, Russian
  and English keywords), and calls that tool only when this turn offers it (`bind_tools`); one the
  prompt lists as unavailable is explained (role, page, environment), never called;
- on an object page a vague question is about the page's object, answered from the prefetched
  summary when the turn no longer offers its tool;
- it fills ids and environments from the message, else from the UI context block and the page
  object's summary in the system prompt (the blocks a real model reads), as the declaration's
  `ArgsRecipe` says; when something is missing it asks, naming what and offering the choices, and
  takes the next message as the answer;
- after tool results it answers from them in the language of the user's last message
  (`offline_answers`: by the result's shape);
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

from sstools_agent.agent.offline_answers import describe_result, say
from sstools_agent.agent.prompts import (
    OBJECT_SUMMARY_CLOSE,
    OBJECT_SUMMARY_OPEN,
    UNAVAILABLE_CLOSE,
    UNAVAILABLE_OPEN,
)
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


def _summary_result(summary: Mapping[str, Any]) -> dict[str, Any]:
    """The prefetched object's data (its tool's result, JSON in the block), or {}."""
    result = summary.get("result")
    try:
        data = json.loads(str(result)) if result is not None else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def _object_summary(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The prefetched object summary the system prompt carries, or {}."""
    return _system_block(messages, OBJECT_SUMMARY_OPEN, OBJECT_SUMMARY_CLOSE)


class _Request:
    """The user's message and page, with the extractions every rule needs."""

    def __init__(
        self,
        text: str,
        page: dict[str, Any],
        page_object: dict[str, Any] | None = None,
        earlier: str = "",
    ) -> None:
        self.text = text
        self.earlier = earlier
        """What the conversation said before (answers and tool results), for follow-ups."""
        self.page_object = page_object or {}
        """The page object's prefetched summary (the tool's result), when the prompt has one."""
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
        """An environment the message names other than the page's; else the target the page's
        object declares (a migration moves to its own target)."""
        current = self.page.get("envId")
        others = [env for env in self.environments() if env != current]
        if others:
            return others[0]
        declared = self.page_object.get("migration")
        if isinstance(declared, dict) and declared.get("target_env_id"):
            return str(declared["target_env_id"])
        return None

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
    """3 when a strong word is in the message, plus 1 when a weak one is: how many of them
    match does not count, so a tool with many synonyms does not outvote the named action."""
    return _STRONG * any(w in lower for w in choice.strong) + _WEAK * any(
        w in lower for w in choice.weak
    )


def choose_tool(
    text: str,
    available: Sequence[str],
    catalog: ToolCatalog = CATALOG,
    *,
    preferred: Sequence[str] = (),
    strong_only: bool = False,
) -> str | None:
    """The tool among `available` whose declared offline keywords best match `text`, or None.

    A tie goes to a `preferred` tool (one this turn offers), then to the lower precedence. With
    `strong_only`, a tool matched by weak words alone does not count.
    """
    lower = text.lower()
    scored = [
        (_score(spec.offline, lower), spec.name in preferred, -spec.offline.precedence, spec.name)
        for spec in catalog
        if spec.offline is not None and spec.name in available
    ]
    best = max(scored, default=(0, False, 0, None))
    needed = _STRONG if strong_only else 1
    return best[3] if best[0] >= needed else None


ArgsBuilder = Callable[[_Request], dict[str, Any] | None]


def _dashboard_search(r: _Request) -> dict[str, Any]:
    ids = r.object_ids("dashboard")
    if ids:
        return {"dashboard_ids": ids}
    query = r.quoted() or search_words(r.text)
    return {"query": query} if query else {}


# The request's own words that are not its topic: whole words, and stems of verbs and nouns.
_NOT_TOPIC_WORDS: Final = frozenset(
    (
        "какие",
        "какой",
        "как",
        "есть",
        "все",
        "всё",
        "мне",
        "нам",
        "у",
        "нас",
        "в",
        "на",
        "по",
        "про",
        "о",
        "об",
        "с",
        "со",
        "для",
        "и",
        "или",
        "это",
        "этот",
        "эти",
        "me",
        "us",
        "the",
        "a",
        "an",
        "all",
        "any",
        "about",
        "for",
        "on",
        "in",
        "of",
        "with",
        "which",
        "what",
        "are",
        "is",
        "there",
        "do",
        "we",
        "have",
        "please",
        "named",
        "called",
    )
)
_NOT_TOPIC_STEMS: Final = (
    "найд",
    "найт",
    "покаж",
    "поищ",
    "ищ",
    "дашборд",
    "отчет",
    "отчёт",
    "панел",
    "список",
    "перечисл",
    "dashboard",
    "report",
    "find",
    "search",
    "show",
    "list",
    "look",
)
_ENGLISH_TOPICS: Final = {
    "energy": "энерг",
    "electricity": "электроэнерг",
    "power": "энерг",
    "sales": "продаж",
    "revenue": "выручк",
    "incident": "инцидент",
    "tariff": "тариф",
    "budget": "бюджет",
    "quality": "качеств",
    "payment": "платеж",
    "network": "сет",
    "churn": "отток",
    "forecast": "прогноз",
    "logistics": "логистик",
    "delivery": "доставк",
}


def search_words(text: str) -> str | None:
    """The topic of a search request as stems the upstream matches in titles («дашборды про
    энергию» -> «энерг»; "energy dashboards" -> «энерг»), or None when it names none."""
    words = re.findall(r"[a-zа-яё]+", text.lower())
    stems = []
    for word in words:
        if word in _NOT_TOPIC_WORDS or word in ENVIRONMENT_WORDS:
            continue
        if word.startswith(_NOT_TOPIC_STEMS):
            continue
        english = next((v for k, v in _ENGLISH_TOPICS.items() if word.startswith(k)), None)
        if english is not None:
            stems.append(english)
        elif _CYRILLIC.match(word) and len(word) >= 4:
            stems.append(word[: max(4, min(len(word) - 2, 6))].replace("ё", "е"))
    return " ".join(dict.fromkeys(stems)) or None


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
    """The task the message names, else the last one the conversation mentioned."""
    match = _TASK_ID.search(r.lower)
    if match:
        return {"task_id": match.group(0)}
    earlier = _TASK_ID.findall(r.earlier.lower())
    return {"task_id": earlier[-1]} if earlier else None


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


def _clarified_tool(messages: Sequence[BaseMessage], bound: Sequence[str]) -> str | None:
    """The tool the model's last question asked details for («…(deploy_dashboard)…?»), when
    the user's answer names no tool of its own."""
    for message in reversed(messages[:-1]):
        if isinstance(message, AIMessage) and not message.tool_calls:
            text = _text_of(message)
            if not text.rstrip().endswith("?"):
                return None
            return next((tool for tool in bound if f"({tool})" in text), None)
    return None


def _unavailable(messages: Sequence[BaseMessage]) -> dict[str, tuple[str, str]]:
    """The tools the prompt says this user cannot use here: name -> (rule, detail)."""
    block = _system_block(messages, UNAVAILABLE_OPEN, UNAVAILABLE_CLOSE)
    return {
        str(entry.get("tool")): (str(entry.get("rule")), str(entry.get("detail")))
        for entry in block.get("tools", [])
        if isinstance(entry, dict)
    }


def _label(tool: str, russian: bool) -> str:
    spec = CATALOG.get(tool)
    if spec is None:
        return tool
    # The name in parentheses lets the next turn know which tool a question was about
    described = spec.label_ru if russian else spec.description.rstrip(".").lower()
    return f"{described} ({tool})"


def _unavailable_answer(tool: str, kept_out: tuple[str, str], r: _Request) -> str:
    """Why the asked-for tool is not available to this user here; nothing was run."""
    rule, detail = kept_out
    label = _label(tool, r.russian)
    if rule == "role":
        role = detail.rsplit(" ", 1)[-1]
        return say(
            r.russian,
            f"Не могу: {label} требует роль {role}, а у вас её нет. Я ничего не запускал; "
            "попросите коллегу с этой ролью.",
            f"I can't: {label} requires the {role} role, which you do not have. Nothing was "
            "run; ask a colleague who has it.",
        )
    if rule == "no_environment":
        return say(
            r.russian,
            f"Для «{label}» нужно окружение, а страница его не указывает. Выберите окружение "
            "(ss-dev, staging или prod) и повторите.",
            f"{label} needs an environment and this page names none. Choose an environment "
            "(ss-dev, staging or prod) and ask again.",
        )
    page = r.page.get("objectType") or "—"
    return say(
        r.russian,
        f"На странице объекта «{page}» это недоступно: {label}. Откройте страницу нужного "
        f"объекта или страницу без объекта.{_related_datasets(r)}",
        f"Not available on a {page} page: {label}. Open the page of the right object, or a "
        f"page without one.{_related_datasets(r)}",
    )


def _related_datasets(r: _Request) -> str:
    """The page dashboard's datasets, named so the user knows which pages to open."""
    found = r.page_object.get("dashboards")
    dashboard = found[0] if isinstance(found, list) and len(found) == 1 else {}
    ids = ", ".join(str(i) for i in dashboard.get("datasets", []))
    if not ids:
        return ""
    return say(
        r.russian, f" Датасеты этого дашборда: {ids}.", f" This dashboard's datasets: {ids}."
    )


_ARGUMENT_WORDS: Final = {
    "dashboard_id": ("номер дашборда", "the dashboard's id"),
    "dashboard_ids": ("номера дашбордов", "the dashboards' ids"),
    "dataset_id": ("номер датасета", "the dataset's id"),
    "migration_id": ("номер миграции", "the migration's id"),
    "task_id": ("номер задачи (например, task-101)", "the task id (e.g. task-101)"),
    "event_id": ("номер события обслуживания", "the maintenance event's id"),
    "sql": ("SQL-запрос (в `обратных кавычках`)", "the SQL statement (in `backticks`)"),
    "table_name": ("таблицу в виде схема.таблица", "the table as schema.table"),
    "schema_name": ("таблицу в виде схема.таблица", "the table as schema.table"),
    "branch_name": ("имя ветки", "the branch name"),
    "source_env_id": ("исходное окружение", "the source environment"),
}


def _missing_arguments(tool: str, r: _Request) -> list[str]:
    spec = CATALOG.get(tool)
    if spec is None:
        return []
    required = [n for n, info in spec.args_model.model_fields.items() if info.is_required()]
    return [name for name in required if _schema_value(name, r) is None]


def clarifying_question(tool: str, r: _Request) -> str:
    """What is missing to run `tool`, with the choices when there are some."""
    label = _label(tool, r.russian)
    missing = _missing_arguments(tool, r)
    if "target_env_id" in missing:
        current = r.page.get("envId")
        choices = [env for env in ("ss-dev", "staging", "prod") if env != current]
        already = (
            say(r.russian, f"Объект уже в {current}. ", f"It is already in {current}. ")
            if current in r.environments() or not r.environments()
            else ""
        )
        options = say(r.russian, " или ", " or ").join(choices)
        return say(
            r.russian,
            f"{already}В какое окружение выполнить «{label}»: {options}?",
            f"{already}Which environment should {label} target: {options}?",
        )
    words = [
        _ARGUMENT_WORDS.get(name, (name, name))[0 if r.russian else 1] for name in missing
    ] or [say(r.russian, "объект", "the object")]
    return say(
        r.russian,
        f"Чтобы выполнить «{label}», уточните: {', '.join(dict.fromkeys(words))}.",
        f"To run {label}, tell me {', '.join(dict.fromkeys(words))}.",
    )


def _describe_failure(message: ToolMessage, russian: bool) -> str:
    artifact = message.artifact if isinstance(message.artifact, dict) else {}
    tool, event = message.name or "tool", artifact.get("event")
    if event == "permission_denied":
        role = (artifact.get("decision") or {}).get("permission", {}).get("required_role")
        return say(
            russian,
            f"Недостаточно прав: я не запускал {tool}, для этого нужна роль {role}.",
            f"Not allowed: I did not run {tool}, it needs the {role} role.",
        )
    if event == "cancelled":
        return say(
            russian,
            f"Операция {tool} отменена, ничего не изменено.",
            f"The {tool} operation was cancelled; nothing was changed.",
        )
    detail = _text_of(message).split(": ", 1)[-1]
    return say(russian, f"Не удалось выполнить {tool}: {detail}", f"{tool} failed: {detail}")


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
        summary = _object_summary(messages)
        request = _Request(
            _text_of(humans[-1]) if humans else "",
            _page_context(messages),
            _summary_result(summary),
            " ".join(_text_of(m) for m in messages[:-1] if isinstance(m, AIMessage | ToolMessage)),
        )
        # What the user asks for, whatever this turn offers (as an LLM reads the request): the
        # action it names; else the answer to the model's last question («тогда в прод»); else,
        # on an object page, a vague question ("what's its status?") is about the page's object
        wanted = (
            choose_tool(
                request.text, CATALOG.names, preferred=self.bound_tools, strong_only=bool(summary)
            )
            or _clarified_tool(messages, self.bound_tools)
            or (str(summary["tool"]) if summary else choose_tool(request.text, CATALOG.names))
        )
        from_summary = self._answer_from_summary(request, summary, wanted)
        if from_summary is not None:
            return AIMessage(content=from_summary)
        kept_out = _unavailable(messages)
        if wanted is not None and wanted not in self.bound_tools and wanted in kept_out:
            return AIMessage(content=_unavailable_answer(wanted, kept_out[wanted], request))
        tool = wanted if wanted in self.bound_tools else choose_tool(request.text, self.bound_tools)
        args = None if tool is None else build_arguments(tool, request)
        if tool is None or args is None:
            return AIMessage(content=self._no_tool_answer(tool, request))
        call_id = (
            f"call_{uuid.uuid5(uuid.NAMESPACE_URL, request.text + str(len(messages))).hex[:16]}"
        )
        return AIMessage(content="", tool_calls=[{"name": tool, "args": args, "id": call_id}])

    def _answer_from_summary(
        self, request: _Request, summary: Mapping[str, Any], wanted: str | None
    ) -> str | None:
        """The answer from the prompt's prefetched object summary, when the question is the one
        its tool answers (a status question) about the page's object, and the turn does not
        offer that tool."""
        tool = str(summary.get("tool")) if summary else None
        # When the turn still offers the summary's tool, the router judged the summary not
        # enough (or there is no router): the tool is called for fresh data instead
        if tool is None or wanted != tool or tool in self.bound_tools:
            return None
        if not request.page_object or build_arguments(tool, request) != summary.get("args"):
            return None
        return describe_result(tool, request.page_object, request.russian)

    def _answer_from_tools(self, messages: Sequence[BaseMessage], russian: bool) -> str:
        results: list[ToolMessage] = []
        for message in reversed(messages):
            if not isinstance(message, ToolMessage):
                break
            results.insert(0, message)
        calls = {
            call["id"]: call["args"]
            for message in messages
            if isinstance(message, AIMessage)
            for call in message.tool_calls
        }
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
            args = calls.get(result.tool_call_id, {})
            parts.append(describe_result(result.name or "tool", data, russian, args))
        return " ".join(parts)

    def _no_tool_answer(self, tool: str | None, request: _Request) -> str:
        if tool is not None:  # a tool fits, but the message lacks what it needs
            return clarifying_question(tool, request)
        offered = ", ".join(self.bound_tools) or say(request.russian, "нет", "none")
        return say(
            request.russian,
            f"Я ассистент ss-tools (правила, без LLM). Не понял запрос; спросите «что ты умеешь?». "
            f"Доступные инструменты: {offered}.",
            f"I am the ss-tools assistant (rule-based, no LLM). I did not understand; ask "
            f"“what can you do?”. Tools: {offered}.",
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
