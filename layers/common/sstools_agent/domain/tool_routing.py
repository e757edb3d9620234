"""Hybrid tool routing (the seed's `get_tools_for_query`): which of the allowed tools a query needs.

Keywords first (Russian and English stems, matched at word starts); when they name fewer than three
tools, an embedding fallback adds the semantically closest tools (cosine against a few example
requests per tool, computed once). Then the seed's intent table; which tools an intent offers
unasked is each declaration's intent tags (`ToolSpec.intents`), the keywords and examples are its
`ToolSpec.routing`:

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

import math
import re
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Final, Protocol

from sstools_agent.domain.catalog_types import IntentTag
from sstools_agent.domain.glossary import ARGUMENT_LABELS
from sstools_agent.domain.tool_catalog import CATALOG, ToolCatalog

Vector = Sequence[float]
Vectors = Sequence[Vector]
"""One row per text. Plain floats, not numpy: the chat function ships without numpy unless the
offline sentence encoder is deployed, and ~100 dot products of 512 floats (`math.sumprod`) take
well under a millisecond."""

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


INTENT_WORDS: Final[Mapping[Intent, tuple[str, ...]]] = {
    Intent.MAINTENANCE: ("обслуживан", "maintenance", "техработ", "технические работы"),
    Intent.DASHBOARD_QUERY: ("дашборд", "dashboard", "панел", "этот отчет", "this report"),
}
"""Words that mark an intent (the capabilities intent: the capabilities tool's own keywords)."""


_WORD: Final = re.compile(r"[\w*()]+", re.UNICODE)
_OTHER_OBJECT: Final = re.compile(r"\d|[«\"“]")
"""A number or a quoted name: the query is about another object than the page's (search stays)."""


SEARCHING: Final = re.compile(
    r"найди|найти|поищи|\bищи|поиск|\bfind\b|\bsearch|look for|все дашборд|all dashboards|"
    r"\bдругие|\bother\b|\bis there\b|\bare there\b|есть ли|where'?s\b|where is|\bгде\b|"
    r"in the title|в названии",
    re.IGNORECASE,
)
"""A search for dashboards by topic: other dashboards than the page's (search stays)."""
FOLLOW_UP: Final = re.compile(
    r"то же самое|тоже самое|то же для|так же для|the same for|same for|same thing for|"
    r"do that for|do the same",
    re.IGNORECASE,
)
"""A message that repeats the previous request for something else: routed together with it."""


def normalise(text: str) -> str:
    """Case-folded, «ё» as «е», whitespace collapsed: what keywords are matched against."""
    return " ".join(text.casefold().replace("ё", "е").split())


PHRASE_GAP: Final = 2
"""Words a phrase keyword's words may have between them: «запусти эту миграцию» says «запусти
миграц», "execute this migration" says "execute migration" (the action, not the listing)."""


def _matches(keyword: str, text: str, words: Sequence[str]) -> bool:
    """A stem at the start of a word; a phrase's words in order, each at a word's start, with
    at most `PHRASE_GAP` other words between them."""
    keyword = normalise(keyword)
    if " " not in keyword:
        return any(word.startswith(keyword) for word in words)
    if keyword in text:
        return True
    parts = _WORD.findall(keyword)
    starts = [i for i, word in enumerate(words) if word.startswith(parts[0])]
    return any(_follows(parts[1:], words, start) for start in starts)


def _follows(parts: Sequence[str], words: Sequence[str], at: int) -> bool:
    if not parts:
        return True
    window = range(at + 1, min(len(words), at + 2 + PHRASE_GAP))
    return any(words[i].startswith(parts[0]) and _follows(parts[1:], words, i) for i in window)


def _any(keywords: Iterable[str], text: str, words: Sequence[str]) -> bool:
    return any(_matches(keyword, text, words) for keyword in keywords)


def object_stems(catalog: ToolCatalog) -> tuple[str, ...]:
    """How a message names the catalog's objects: each id or name argument's noun in English
    and the first letters of its Russian label (`migration_id`: "migration", «мигра»)."""
    stems: set[str] = set()
    for spec in catalog:
        for key in spec.args_model.model_fields:
            if key.endswith(("_id", "_ids", "_name")):
                label = normalise(ARGUMENT_LABELS.get(key, ""))
                # «Куда (окружение)»: the noun is in brackets
                noun = re.findall(r"\w+", label.rpartition("(")[2] or label)
                stems.add(key.rsplit("_", 1)[0].rsplit("_", 1)[-1])
                stems.add(noun[0][:5] if noun else "")
    return tuple(sorted(stem for stem in stems if len(stem) >= 3))


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
    """`get_tools_for_query`: keyword routing with an embedding fallback, within allowed tools.

    Everything it knows about tools comes from the catalog's declarations: each tool's keywords
    and examples, and which tools each intent offers unasked (the intent tags)."""

    def __init__(
        self,
        embedder: Embedder | None,
        catalog: ToolCatalog = CATALOG,
        *,
        warmed_elsewhere: bool = False,
    ) -> None:
        """`warmed_elsewhere`: someone else calls `warm` (a background thread: the offline
        encoder loads for about 1.6 s, Titan takes a call per example); until it is done, the
        router routes on keywords alone rather than embed the examples inside a request."""
        self._embedder = embedder
        self._warmed_elsewhere = warmed_elsewhere
        self._routes = {spec.name: spec.routing for spec in catalog}
        self._capabilities = catalog.tagged(IntentTag.CAPABILITIES)
        self._dashboard_query = catalog.tagged(IntentTag.DASHBOARD_QUERY)
        self._unasked: Mapping[Intent, tuple[str, ...]] = {
            Intent.MAINTENANCE: catalog.tagged(IntentTag.MAINTENANCE),
            Intent.DASHBOARD_QUERY: self._dashboard_query,
            Intent.UNKNOWN: catalog.tagged(IntentTag.DEFAULT),
        }
        """The tools each intent offers although the query did not name them."""
        self._help_words = tuple(
            keyword for tool in self._capabilities for keyword in self._routes[tool].keywords
        )
        self._objects = object_stems(catalog)
        self._example_tools: tuple[str, ...] = ()
        self._example_vectors: Vectors | None = None
        self._warming = threading.Lock()

    def _weight(self, keyword: str) -> int:
        """A keyword's letters that say what to do: an object's name («миграц», "dataset") says
        what about, so «запусти эту миграцию» is the action and not the listing of migrations."""
        said = [w for w in _WORD.findall(normalise(keyword)) if not w.startswith(self._objects)]
        return max(1, sum(len(word) for word in said))

    def warm(self) -> None:
        """Embeds the tools' examples now (otherwise on the first fallback). Called while
        another thread warms it, it waits for that one and embeds nothing twice (SnapStart's
        before-snapshot hook relies on it)."""
        if self._embedder is None or self._example_vectors is not None:
            return
        with self._warming:
            if self._example_vectors is not None:
                return
            pairs = [
                (tool, text) for tool, route in self._routes.items() for text in route.examples
            ]
            vectors = self._embedder.embed([text for _, text in pairs])
            self._example_tools = tuple(tool for tool, _ in pairs)
            self._example_vectors = vectors  # last: a router routing meanwhile sees it whole

    @property
    def embeddings_ready(self) -> bool:
        """Whether the fallback can run now (the examples are embedded, or will be on demand)."""
        return self._embedder is not None and (
            self._example_vectors is not None or not self._warmed_elsewhere
        )

    def _vectors(self) -> Vectors | None:
        if not self.embeddings_ready:
            return None
        self.warm()
        return self._example_vectors

    def keyword_scores(self, query: str) -> dict[str, int]:
        """Tools whose keywords the query contains, scored by the matched keywords' weight."""
        text = normalise(query)
        words = _WORD.findall(text)
        scores: dict[str, int] = {}
        for tool, route in self._routes.items():
            score = sum(self._weight(k) for k in route.keywords if _matches(k, text, words))
            if score:
                scores[tool] = score
        return scores

    def embedding_scores(self, query: str) -> dict[str, float]:
        """Each tool's best cosine between the query and its examples (empty without embedder)."""
        vectors = self._vectors()
        if vectors is None or self._embedder is None:
            return {}
        query_vector = self._embedder.embed([query])[0]
        best: dict[str, float] = {}
        for tool, vector in zip(self._example_tools, vectors, strict=True):
            best[tool] = max(best.get(tool, -1.0), math.sumprod(vector, query_vector))
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
        used_embeddings = len(ranked) < FALLBACK_BELOW and self.embeddings_ready
        if used_embeddings:
            similarities = self.embedding_scores(query)
            close = sorted(
                (t for t, s in similarities.items() if s >= MIN_SIMILARITY and t not in keyword),
                key=lambda tool: -similarities[tool],
            )
            ranked += close[:EMBEDDING_TOP_K]
        intent = self._intent(text, words, ranked, page_object)
        wanted = list(ranked)
        wanted += self._unasked.get(intent, ())
        # The prefetched summary answers a dashboard query only about the page's own dashboard
        # (a dataset page's summary names its dashboards' ids, not what they are)
        about_the_page = (
            page_object == "dashboard"
            and not _OTHER_OBJECT.search(query)
            and not SEARCHING.search(query)
        )
        if intent is Intent.DASHBOARD_QUERY and prefetch_available and about_the_page:
            wanted = [tool for tool in wanted if tool not in self._dashboard_query]
        wanted += self._capabilities
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

    def _intent(
        self, text: str, words: Sequence[str], ranked: Sequence[str], page_object: str | None
    ) -> Intent:
        if _any(self._help_words, text, words):
            return Intent.CAPABILITIES
        if _any(INTENT_WORDS[Intent.MAINTENANCE], text, words):
            return Intent.MAINTENANCE
        dashboard_words = INTENT_WORDS[Intent.DASHBOARD_QUERY]
        about_dashboard = _any(dashboard_words, text, words) or page_object == "dashboard"
        if about_dashboard and (not ranked or ranked[0] in self._dashboard_query):
            return Intent.DASHBOARD_QUERY
        return Intent.SPECIFIC if ranked else Intent.UNKNOWN
