"""Hybrid tool routing (the seed's `get_tools_for_query`): which of the allowed tools a query needs.

Keywords first (Russian and English stems, matched at word starts); when they name fewer than three
tools, an embedding fallback adds the semantically closest tools (cosine against a few example
requests per tool, computed once). Then the seed's intent table:

| intent | tools |
|---|---|
| capabilities / help | show_capabilities + matched |
| dashboard query, summary prefetched | show_capabilities + matched (search_dashboards suppressed) |
| dashboard query, no prefetch | show_capabilities + search_dashboards + matched |
| maintenance | show_capabilities, list_maintenance_events, start_maintenance, end_maintenance |
| unknown / general | show_capabilities + the default set: search_dashboards, |
| | get_health_summary, list_environments, get_task_status |

The router runs after the role policy and the page's affinity and only narrows what they allow.
It is about the model's context budget, not about permission: the policy still checks every call.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Protocol

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]

CAPABILITIES: Final = "show_capabilities"
SEARCH: Final = "search_dashboards"
DEFAULT_SET: Final = (
    "search_dashboards",
    "get_health_summary",
    "list_environments",
    "get_task_status",
)
MAINTENANCE_SET: Final = ("list_maintenance_events", "start_maintenance", "end_maintenance")
FALLBACK_BELOW: Final = 3
"""The embedding fallback runs when keywords name fewer tools than this (the seed's rule)."""
EMBEDDING_TOP_K: Final = 3
MIN_SIMILARITY: Final = 0.42
"""Below this cosine a tool is unrelated (the labelled set scores best from 0.40 to 0.42)."""


class Intent(StrEnum):
    CAPABILITIES = "capabilities"
    DASHBOARD_QUERY = "dashboard_query"
    MAINTENANCE = "maintenance"
    SPECIFIC = "specific"
    UNKNOWN = "unknown"


class Embedder(Protocol):
    """Sentence embeddings: one L2-normalised row per text."""

    def embed(self, texts: Sequence[str]) -> Vectors: ...


@dataclass(frozen=True, slots=True)
class ToolRoute:
    """How a tool is recognised: keyword stems (matched at word starts, or as phrases), and
    example requests for the embedding fallback."""

    keywords: tuple[str, ...]
    examples: tuple[str, ...]


_HELP: Final = (
    "что ты умеешь",
    "что умеешь",
    "помощ",
    "помоги",
    "help",
    "capabilit",
    "возможност",
    "what can you",
    "what do you do",
    "команды",
    "commands",
)
_MAINTENANCE: Final = ("обслуживан", "maintenance", "техработ", "технические работы")
_DASHBOARD: Final = ("дашборд", "dashboard", "панел", "этот отчет", "this report")

ROUTES: Final[Mapping[str, ToolRoute]] = {
    "show_capabilities": ToolRoute(_HELP, ("что ты умеешь делать?", "what can you help me with?")),
    "search_dashboards": ToolRoute(
        (
            "найди",
            "найти",
            "поиск",
            "ищи",
            "search",
            "find",
            "список дашборд",
            "какие дашборд",
            "list dashboards",
            "статус",
            "status",
            "владел",
            "owner",
            "информац",
            "сведен",
            "last modified",
            "обновлял",
            "who changed",
        ),
        (
            "найди дашборды про продажи",
            "find dashboards about revenue",
            "кто владелец этого дашборда и когда он обновлялся",
            "show the status of this dashboard",
        ),
    ),
    "get_health_summary": ToolRoute(
        (
            "здоров",
            "health",
            "ошибк",
            "error",
            "падает",
            "падают",
            "failing",
            "fail",
            "медлен",
            "slow",
            "сломал",
            "broken",
            "не грузит",
            "not loading",
            "тормоз",
        ),
        (
            "какие графики падают с ошибками",
            "which charts are failing or slow",
            "почему дашборд медленно грузится",
            "health of dashboards in this environment",
        ),
    ),
    "deploy_dashboard": ToolRoute(
        (
            "деплой",
            "задеплой",
            "разверн",
            "выкат",
            "deploy",
            "publish",
            "опубликуй",
            "перенеси в прод",
            "promote",
        ),
        (
            "задеплой этот дашборд в staging",
            "deploy this dashboard to prod",
            "выкати отчёт на прод",
            "promote the dashboard from dev to staging",
        ),
    ),
    "run_llm_validation": ToolRoute(
        (
            "валидац",
            "провалид",
            "провер",
            "validat",
            "review",
            "ревью",
            "аудит дашборд",
            "check the dashboard",
            "lint",
        ),
        (
            "проверь этот дашборд на ошибки в логике",
            "run an llm review of this dashboard",
            "провалидируй дашборд",
            "validate the dashboard before release",
        ),
    ),
    "run_llm_documentation": ToolRoute(
        ("документ", "document", "описани", "опиши", "describe", "description"),
        (
            "сгенерируй документацию для дашборда",
            "write documentation for this dashboard",
            "добавь описание к дашборду",
            "describe what this dashboard shows",
        ),
    ),
    "execute_migration": ToolRoute(
        (
            "выполни миграц",
            "запусти миграц",
            "примени миграц",
            "run migration",
            "run the migration",
            "execute migration",
            "execute the migration",
            "apply migration",
            "apply the migration",
            "start the migration",
        ),
        (
            "запусти миграцию в прод",
            "execute the migration now",
            "примени эту миграцию",
            "run the planned migration",
        ),
    ),
    "get_migration_plan": ToolRoute(
        (
            "план миграц",
            "migration plan",
            "plan of the migration",
            "что изменит",
            "what will change",
            "what would change",
            "конфликт",
            "conflict",
            "маппинг",
            "mapping",
        ),
        (
            "покажи план миграции",
            "what will this migration change",
            "какие конфликты у миграции",
            "show the object mappings of the migration",
        ),
    ),
    "list_migrations": ToolRoute(
        ("миграци", "migration"),
        (
            "какие миграции сейчас идут",
            "list all migrations",
            "покажи упавшие миграции",
            "which migrations failed",
        ),
    ),
    "create_branch": ToolRoute(
        ("ветк", "бранч", "branch"),
        (
            "создай ветку для дашборда",
            "create a git branch for this dashboard",
            "заведи новую ветку feature",
            "make a branch",
        ),
    ),
    "commit_changes": ToolRoute(
        ("коммит", "закоммит", "commit", "сохрани изменения в git", "save changes to git"),
        (
            "закоммить изменения дашборда",
            "commit the pending changes with a message",
            "сохрани изменения в гит",
            "commit my changes",
        ),
    ),
    "superset_explore_database": ToolRoute(
        (
            "датасет",
            "dataset",
            "колонк",
            "column",
            "схем",
            "schema",
            "таблиц",
            "table",
            "зависим",
            "depend",
            "база данных",
            "базы данных",
            "database",
            "поля",
            "fields",
        ),
        (
            "какие колонки в этом датасете",
            "show the schema of this dataset",
            "от чего зависит этот датасет",
            "which tables does the dataset use",
        ),
    ),
    "superset_format_sql": ToolRoute(
        ("отформатир", "форматир", "format", "beautif", "pretty", "читаем"),
        (
            "отформатируй этот sql",
            "format this query nicely",
            "сделай запрос читаемым",
            "pretty print the sql",
        ),
    ),
    "superset_audit_permissions": ToolRoute(
        (
            "прав",
            "доступ",
            "permission",
            "access",
            "кто видит",
            "who can see",
            "роль",
            "role",
            "видимост",
        ),
        (
            "у кого есть доступ к датасету",
            "who can see this dataset",
            "какие права у роли аналитик",
            "audit the permissions of this dataset",
        ),
    ),
    "superset_execute_sql": ToolRoute(
        (
            "select",
            "sql",
            "запрос",
            "query",
            "посчитай",
            "count",
            "сколько строк",
            "how many rows",
            "выполни запрос",
        ),
        (
            "выполни запрос select count(*) from sales",
            "run this sql query",
            "сколько строк в таблице заказов",
            "how many rows are in the orders table",
        ),
    ),
    "superset_create_dataset": ToolRoute(
        (
            "создай датасет",
            "создать датасет",
            "новый датасет",
            "create dataset",
            "create a dataset",
            "new dataset",
            "заведи датасет",
        ),
        (
            "создай датасет из таблицы orders",
            "create a dataset from the sales table",
            "сделай новый датасет",
            "add a dataset for this table",
        ),
    ),
    "get_task_status": ToolRoute(
        ("задач", "task", "job", "прогресс", "progress", "готово ли", "is it done", "выполнилось"),
        (
            "какой статус задачи 42",
            "what is the status of task 42",
            "закончился ли деплой",
            "is the background job finished",
        ),
    ),
    "list_environments": ToolRoute(
        ("окружен", "environment", "сред", "стенд", "envs", "инстанс"),
        (
            "какие есть окружения",
            "list the environments",
            "на каких стендах работает ss-tools",
            "which superset environments exist",
        ),
    ),
    "run_backup": ToolRoute(
        ("бэкап", "бекап", "резервн", "backup", "back up", "снапшот", "snapshot"),
        (
            "сделай бэкап окружения",
            "back up the superset metadata",
            "создай резервную копию",
            "take a snapshot before the release",
        ),
    ),
    "list_maintenance_events": ToolRoute(
        (
            "окна обслуж",
            "список обслуж",
            "история обслуж",
            "когда обслуж",
            "когда было обслуж",
            "запланированн",
            "maintenance windows",
            "maintenance events",
            "planned maintenance",
            "maintenance history",
            "when is maintenance",
        ),
        (
            "когда следующее обслуживание",
            "list the maintenance windows",
            "какие были техработы",
            "show planned maintenance",
        ),
    ),
    "start_maintenance": ToolRoute(
        (
            "начни обслуж",
            "включи обслуж",
            "режим обслуж",
            "переведи в обслуж",
            "start maintenance",
            "enable maintenance",
            "begin maintenance",
            "put into maintenance",
            "maintenance mode",
        ),
        (
            "включи режим обслуживания на час",
            "put staging into maintenance mode",
            "начни техработы",
            "start maintenance for 30 minutes",
        ),
    ),
    "end_maintenance": ToolRoute(
        (
            "заверши обслуж",
            "выключи обслуж",
            "закончи обслуж",
            "останови обслуж",
            "end maintenance",
            "stop maintenance",
            "finish maintenance",
            "disable maintenance",
            "exit maintenance",
        ),
        (
            "заверши обслуживание",
            "end the maintenance window",
            "выключи режим обслуживания",
            "stop maintenance now",
        ),
    ),
}

_WORD: Final = re.compile(r"[\w*()]+", re.UNICODE)
_OTHER_OBJECT: Final = re.compile(r"\d|[«\"“]")
"""A number or a quoted name: the query is about another object than the page's (search stays)."""


def normalise(text: str) -> str:
    """Case-folded, «ё» as «е», whitespace collapsed: what keywords are matched against."""
    return " ".join(text.casefold().replace("ё", "е").split())


def _matches(keyword: str, text: str, words: Sequence[str]) -> bool:
    """A phrase anywhere in the text, a single stem at the start of a word."""
    keyword = normalise(keyword)
    if " " in keyword:
        return keyword in text
    return any(word.startswith(keyword) for word in words)


def _any(keywords: Iterable[str], text: str, words: Sequence[str]) -> bool:
    return any(_matches(keyword, text, words) for keyword in keywords)


@dataclass(frozen=True, slots=True)
class RoutingDecision:
    """What the router offered for one query, and the record of why."""

    intent: Intent
    offered: tuple[str, ...]
    """In relevance order: keyword matches, then embedding matches, then the intent's tools."""
    ranked: tuple[str, ...]
    """Every tool the query pointed to, best first, before the allowed set was applied."""
    removed: tuple[str, ...]
    """Tools the policy and affinity allowed that the router left out."""
    keyword_matches: tuple[str, ...]
    policy_removed: Mapping[str, str] = field(default_factory=dict)
    """What the policy took out before the router ran: tool -> rule (role, affinity, ...)."""
    embedding_scores: Mapping[str, float] = field(default_factory=dict)
    used_embeddings: bool = False
    prefetch_available: bool = False
    elapsed_ms: float = 0.0

    def to_record(self) -> dict[str, Any]:
        """The decision for the logs and the audit event."""
        return {
            "intent": self.intent.value,
            "offered": list(self.offered),
            "removed": {**self.policy_removed, **dict.fromkeys(self.removed, "router")},
            "keyword_matches": list(self.keyword_matches),
            "embedding_scores": {k: round(v, 3) for k, v in self.embedding_scores.items()},
            "used_embeddings": self.used_embeddings,
            "prefetch_available": self.prefetch_available,
            "elapsed_ms": round(self.elapsed_ms, 2),
        }


class ToolRouter:
    """`get_tools_for_query`: keyword routing with an embedding fallback, within allowed tools."""

    def __init__(self, embedder: Embedder | None, routes: Mapping[str, ToolRoute] = ROUTES) -> None:
        self._embedder = embedder
        self._routes = dict(routes)
        self._example_tools: tuple[str, ...] = ()
        self._example_vectors: Vectors | None = None

    def warm(self) -> None:
        """Embeds the tools' examples now (otherwise on the first fallback)."""
        self._vectors()

    def _vectors(self) -> Vectors | None:
        if self._embedder is None:
            return None
        if self._example_vectors is None:
            pairs = [
                (tool, text) for tool, route in self._routes.items() for text in route.examples
            ]
            self._example_tools = tuple(tool for tool, _ in pairs)
            self._example_vectors = self._embedder.embed([text for _, text in pairs])
        return self._example_vectors

    def keyword_scores(self, query: str) -> dict[str, int]:
        """Tools whose keywords the query contains, scored by the matched keywords' length."""
        text = normalise(query)
        words = _WORD.findall(text)
        scores: dict[str, int] = {}
        for tool, route in self._routes.items():
            score = sum(len(k) for k in route.keywords if _matches(k, text, words))
            if score:
                scores[tool] = score
        return scores

    def embedding_scores(self, query: str) -> dict[str, float]:
        """Each tool's best cosine between the query and its examples (empty without embedder)."""
        vectors = self._vectors()
        if vectors is None or self._embedder is None:
            return {}
        similarities = vectors @ self._embedder.embed([query])[0]
        best: dict[str, float] = {}
        for tool, similarity in zip(self._example_tools, similarities.tolist(), strict=True):
            best[tool] = max(best.get(tool, -1.0), float(similarity))
        return best

    def route(
        self,
        query: str,
        allowed: Sequence[str],
        *,
        prefetch_available: bool = False,
        page_object: str | None = None,
        policy_removed: Mapping[str, str] | None = None,
    ) -> RoutingDecision:
        """The tools to offer for `query`: a subset of `allowed`, in relevance order."""
        started = time.perf_counter()
        text = normalise(query)
        words = _WORD.findall(text)
        keyword = self.keyword_scores(query)
        ranked = sorted(keyword, key=lambda tool: -keyword[tool])
        similarities: dict[str, float] = {}
        used_embeddings = len(ranked) < FALLBACK_BELOW and self._embedder is not None
        if used_embeddings:
            similarities = self.embedding_scores(query)
            close = sorted(
                (t for t, s in similarities.items() if s >= MIN_SIMILARITY and t not in keyword),
                key=lambda tool: -similarities[tool],
            )
            ranked += close[:EMBEDDING_TOP_K]
        intent = self._intent(text, words, ranked, page_object)
        wanted = list(ranked)
        if intent is Intent.MAINTENANCE:
            wanted += MAINTENANCE_SET
        elif intent is Intent.DASHBOARD_QUERY:
            wanted.append(SEARCH)
        elif intent is Intent.UNKNOWN:
            wanted += DEFAULT_SET
        about_the_page = not _OTHER_OBJECT.search(query)
        if intent is Intent.DASHBOARD_QUERY and prefetch_available and about_the_page:
            wanted = [tool for tool in wanted if tool != SEARCH]
        wanted.append(CAPABILITIES)
        permitted = set(allowed)
        offered = tuple(dict.fromkeys(tool for tool in wanted if tool in permitted))
        return RoutingDecision(
            intent=intent,
            offered=offered,
            ranked=tuple(dict.fromkeys(ranked)),
            removed=tuple(tool for tool in allowed if tool not in offered),
            keyword_matches=tuple(sorted(keyword)),
            policy_removed=dict(policy_removed or {}),
            embedding_scores=similarities,
            used_embeddings=used_embeddings,
            prefetch_available=prefetch_available,
            elapsed_ms=(time.perf_counter() - started) * 1000,
        )

    @staticmethod
    def _intent(
        text: str, words: Sequence[str], ranked: Sequence[str], page_object: str | None
    ) -> Intent:
        if _any(_HELP, text, words):
            return Intent.CAPABILITIES
        if _any(_MAINTENANCE, text, words):
            return Intent.MAINTENANCE
        about_dashboard = _any(_DASHBOARD, text, words) or page_object == "dashboard"
        if about_dashboard and (not ranked or SEARCH in ranked[:1]):
            return Intent.DASHBOARD_QUERY
        return Intent.SPECIFIC if ranked else Intent.UNKNOWN
