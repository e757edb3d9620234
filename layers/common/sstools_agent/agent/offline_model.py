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
- it remembers the objects earlier results named (`_request`): a follow-up that points back
  («какие из них сломаны?», "format that query", «покажи её план») gets the last answer's
  objects, one call per object for a read that takes one; a missing id is the one the
  conversation named last; a quoted title is an object an earlier result showed;
- after tool results it answers from them in the language of the user's last message
  (`offline_answers`: by the result's shape), narrowed to what the question is about (the
  objects it points back at, the statuses it names);
- it streams its answer word by word.
"""

from __future__ import annotations

import copy
import functools
import json
import re
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import BaseModel

from sstools_agent.agent.offline_answers import (
    Focus,
    describe_result,
    described,
    items,
    mentions,
    merged,
    narrowed,
    say,
)
from sstools_agent.agent.offline_files import file_answer
from sstools_agent.agent.prompts import (
    OBJECT_SUMMARY_CLOSE,
    OBJECT_SUMMARY_OPEN,
    UNAVAILABLE_CLOSE,
    UNAVAILABLE_OPEN,
)
from sstools_agent.agent.scripted_replies import ReplyStreamingModel
from sstools_agent.agent.standin_reading import content_text, own_words, prompt_block
from sstools_agent.domain.attachment_content import (
    read_attachment_blocks,
)
from sstools_agent.domain.catalog_types import ArgsRecipe, OfflineChoice, Operation, ToolSpec
from sstools_agent.domain.glossary import ARGUMENT_LABELS, tool_label
from sstools_agent.domain.tool_catalog import CATALOG, ToolCatalog
from sstools_agent.domain.tool_output_summary import read_tool_output_block
from sstools_agent.domain.tool_routing import FOLLOW_UP, SEARCHING
from sstools_agent.domain.ui_context import UI_CONTEXT_CLOSE, UI_CONTEXT_OPEN
from sstools_agent.domain.wording import role_words, status_words

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
    "дева": "ss-dev",
    "деве": "ss-dev",
    "прода": "prod",
    "проде": "prod",
    "продакшена": "prod",
    "продакшене": "prod",
    "стейджа": "staging",
    "стейдже": "staging",
    "стейджинга": "staging",
    "стейджинге": "staging",
}


_CYRILLIC: Final = re.compile(r"[а-яё]", re.IGNORECASE)
_NUMBER: Final = re.compile(r"(?<![\w-])\d{1,15}(?![\w-])")
_TASK_ID: Final = re.compile(r"\btask-\d+\b")
_CODE_SPAN: Final = re.compile(r"`([^`]+)`")
_QUOTED: Final = re.compile(r"«([^»]+)»|“([^”]+)”|\"([^\"]+)\"|(?<!\w)'([^']+)'(?!\w)")
_COUNTED: Final = re.compile(
    r"(\d+)[\s-]*(?:мин|min|строк|rows?\b|values?\b|значени|записей|records?\b|sample|штук|"
    r"график|charts?\b|%|процент)",
    re.IGNORECASE,
)
"""A number that counts or measures («10 строк», "45-minute"), not an object's id."""
_STATUS_QUESTION: Final = re.compile(
    r"\bчто\s+(?:у\s+\w+\s+)?(?:сейчас\s+)?с\s|\bкак\s+(?:там\s+)?(?:дела\s+)?с\s|"
    r"what'?s\s+(?:the|its)\s+(?:status|state)|\bhow\s+is\s+(?:it|this)|^\s*git status\?|"
    r"\bdid\b.*\bpass|прошла ли|прошел ли|прошёл ли|\bwhen was\b|\bкогда\b.*\b(?:был|была|было)\b",
    re.IGNORECASE,
)
"""A question about the state of things («что у него с валидацией?»), not an action."""
_ALL_OF_THEM: Final = re.compile(
    r"\bдашборды\b|\bдашбордов\b|\bdashboards\b|\bвсе\b|\ball\b|не только|not only|вообще|"
    r"в целом|overall",
    re.IGNORECASE,
)
"""Words that widen a question from the page's object to all of its kind."""
_LABEL: Final = re.compile(
    r"(?:label(?:led)?(?:\s+it)?|note|пометк\w*|заметк\w*|комментари\w*|подпиш\w*)\s*[:—-]?\s*(.+)$",
    re.IGNORECASE,
)
_REASON: Final = re.compile(
    r"(?:reason|причина|повод|because|we'?re|we are|так как|потому что)\s*[:—-]?\s*(.+)$|"
    r"\s—\s*(.+)$",
    re.IGNORECASE,
)
_ROWS_FROM: Final = re.compile(r"(?:из|from)\s+(?:таблицы\s+|table\s+)?([a-z_][a-z0-9_.]*)", re.I)
_TABLE_NAMED: Final = re.compile(r"(?:table|таблиц\w*)\s+([a-z_][a-z0-9_]*)", re.IGNORECASE)
_SOURCE_ENVIRONMENT: Final = re.compile(
    r"(?:\bfrom|\bс|\bсо|\bиз)\s+([a-zа-яё-]+)|([a-zа-яё-]+)\s+(?:version|верси)", re.IGNORECASE
)
_TABLE: Final = re.compile(r"\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b")
_THIS_OBJECT: Final = re.compile(
    r"\b(?:эт(?:от|ого|ом|им|у|а|ой|ою)|this)\s+(?:(дашборд|dashboard)|(датасет|dataset)|"
    r"(миграц|migration))",
    re.IGNORECASE,
)
"""«этот дашборд», "this dataset": the message means the page's object of that kind."""
_THIS_KINDS: Final = ("dashboard", "dataset", "migration")
_KIND_WORDS: Final = {
    "dashboard": ("о каком дашборде", "дашборда"),
    "dataset": ("о каком датасете", "датасета"),
    "migration": ("о какой миграции", "миграции"),
}
"""«о каком дашборде … номер дашборда»: a kind as the question about it says it."""
_THIS_QUERY: Final = re.compile(
    r"\b(?:этот|тот|этого|the|this|that)\s+(?:sql[- ])?(?:запрос\w*|query|statement|sql)\b",
    re.IGNORECASE,
)
"""«этот запрос», "the query": the statement of the conversation, though «этот» points at pages."""
_PLURAL_POINTERS: Final = (
    *("них", "их", "ними", "ими", "им", "они", "те", "тех", "эти", "этих", "этим", "этими"),
    *("them", "they", "their", "those", "these"),
)
"""Pointers at several objects an earlier answer named («какие из них…», "deploy them")."""
_SINGULAR_POINTERS: Final = (
    *("него", "неё", "нее", "его", "её", "ее", "ним", "ней", "нему", "нём", "оно", "она", "он"),
    *("тот", "того", "той", "it", "its", "that", "one"),
)
"""Pointers at one object an earlier answer named («покажи её план», "run it"); «этот» /
"this" point at the page's object instead, as the seed's «этот дашборд» does."""


def _words(words: Sequence[str]) -> re.Pattern[str]:
    return re.compile(rf"\b(?:{'|'.join(map(re.escape, words))})\b", re.IGNORECASE)


_BACK_REFERENCE: Final = _words((*_PLURAL_POINTERS, *_SINGULAR_POINTERS))
_PLURAL_BACK_REFERENCE: Final = _words((*_PLURAL_POINTERS, "все", "оба", "обе", "all", "both"))
"""What may take several objects at once for a write («задеплой их», "deploy all of them")."""
_ORDINALS: Final = {
    r"\bперв(?:ый|ого|ому|ую|ой|ом|ая)\b": 0,
    r"\bfirst\b": 0,
    r"\bвтор(?:ой|ого|ому|ую|ая)\b": 1,
    r"\bsecond\b": 1,
    r"\bтрет(?:ий|ьего|ьему|ью|ья)\b": 2,
    r"\bthird\b": 2,
    r"\bпоследн(?:ий|его|ему|юю|яя)\b": -1,
    r"\bthe last one\b": -1,
}
"""Words that pick one of the objects an earlier answer listed («для первого из них»)."""
_STATUS_WORDS: Final = {
    "failed": (
        *("упал", "ошибк", "сбой", "сбоя", "сбои", "неудач", "неуспеш", "сломан", "пада", "завал"),
        *("failed", "fail", "error"),
    ),
    "warning": ("предупрежд", "warning"),
    # «идут» is left out: «какие миграции идут?» is as often "what is there" as "running"
    "running": ("выполняют", "в процессе", "в работе", "running", "in progress"),
    "planned": (
        "запланир",
        "в планах",
        "стоят в плане",
        "ожидают",
        "planned",
        "scheduled",
        "pending",
    ),
    "done": ("заверш", "выполнен", "успешн", "done", "completed", "finished", "succeeded"),
}
"""Word starts that name a status of `STATUS_VOCABULARIES` («какие миграции упали?» -> failed);
one after «не» («не упала») names none."""


def _is_russian(text: str) -> bool:
    """Whether the message is written in Russian: its own words, quoted names and code aside
    ("Something with «Бюджет» in the title" is English)."""
    return bool(_CYRILLIC.search(_CODE_SPAN.sub(" ", _QUOTED.sub(" ", text))))


def _page_context(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The UI context the system prompt carries, or {} («контекст недоступен»)."""
    return prompt_block(messages, UI_CONTEXT_OPEN, UI_CONTEXT_CLOSE)


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
    return prompt_block(messages, OBJECT_SUMMARY_OPEN, OBJECT_SUMMARY_CLOSE)


class _Request:
    """The user's message and page, with the extractions every rule needs."""

    def __init__(
        self,
        text: str,
        page: dict[str, Any],
        *,
        page_object: dict[str, Any] | None = None,
        recalled: Mapping[str, list[Any]] | None = None,
        last_named: Mapping[str, list[Any]] | None = None,
        known: Mapping[tuple[str, int], dict[str, Any]] | None = None,
        exchanged: bool = False,
        summary: Mapping[str, Any] | None = None,
    ) -> None:
        self.text = text
        self.recalled = recalled or {}
        """The objects the conversation's earlier tool results named, by kind, the latest
        result winning a kind (`_request`)."""
        self.last_named = last_named or {}
        """The objects the last earlier result named: what «них», "that" point at."""
        self.exchanged = exchanged
        """Whether the conversation had tool results before this message (then `last_named`
        is what the last one showed, not only the page's summary)."""
        self.known = known or {}
        """(kind, id) -> the entry, of the objects earlier results showed."""
        self.summary = summary or {}
        """The prompt's prefetched object summary block (tool, args, result), or {}."""
        self.page_object = page_object or {}
        """The page object's prefetched summary (the tool's result), when the prompt has one."""
        self.lower = text.lower()
        self.page = page
        self.russian = _is_russian(text)
        counted = {m.start(1) for m in _COUNTED.finditer(text)}
        self.numbers = [int(m.group(0)) for m in _NUMBER.finditer(text) if m.start() not in counted]
        self.refers_back = bool(_BACK_REFERENCE.search(text))
        self.writing = False
        """Whether the arguments are for a write (`for_tool`): then nothing is guessed among
        several objects."""

    def for_tool(self, spec: ToolSpec) -> _Request:
        """This request, reading arguments for `spec` (a write guesses nothing)."""
        view = copy.copy(self)
        view.writing = spec.operation is Operation.WRITE
        return view

    def page_id(self, object_type: str) -> int | None:
        if self.page.get("objectType") == object_type and self.page.get("objectId"):
            return int(self.page["objectId"])
        return None

    def recalled_ids(self, object_type: str) -> list[int]:
        return [v for v in self.recalled.get(object_type, []) if isinstance(v, int)]

    def referred_ids(self, object_type: str) -> list[int]:
        """The objects of this type the message points back at («них», "them", "the one that
        failed": of those, the ones with the status it names, maybe none; «первого из них»:
        that one; "the ETL one": the one whose title has its words). For a write, a singular
        pointer («его», "it") to a list of several is not a choice, and nothing is returned."""
        named = self.last_named.get(object_type, []) if self.refers_back else []
        ids = [v for v in named if isinstance(v, int)]
        statuses = self.statuses()
        with_known_status = [i for i in ids if self.known.get((object_type, i), {}).get("status")]
        if statuses and with_known_status:
            ids = [i for i in ids if self.known.get((object_type, i), {}).get("status") in statuses]
        ids = self._with_title_words(object_type, ids)
        ordinal = next((n for word, n in _ORDINALS.items() if re.search(word, self.lower)), None)
        if ordinal is not None and len(ids) > 1 and -len(ids) <= ordinal < len(ids):
            return [ids[ordinal]]
        if self.writing and len(ids) > 1 and not _PLURAL_BACK_REFERENCE.search(self.text):
            return []
        return ids

    def object_ids(self, object_type: str) -> list[int]:
        """Ids in the message; else the earlier answer's, when the message points back at it;
        else the page's object; else the ones the conversation named last."""
        page_id = self.page_id(object_type)
        return (
            [n for n in self.numbers if n > 0]
            or self.titled_ids(object_type)
            or self.referred_ids(object_type)
            or ([page_id] if page_id else [])
            or self._last_recalled(object_type)
        )

    def _last_recalled(self, object_type: str) -> list[int]:
        """The objects of this type the conversation named last, unasked: for a write only
        when that is one object (the card shows which), else nothing (the model asks)."""
        recalled = self.recalled_ids(object_type)
        return recalled if not self.writing or len(recalled) == 1 else []

    def object_id(self, object_type: str) -> int | None:
        """As `object_ids`, for one object: a recalled list of several is not a choice."""
        given = [n for n in self.numbers if n > 0]
        if given:
            return given[0]
        titled = self.titled_id(object_type)
        if titled:
            return titled
        referred = self.referred_ids(object_type)
        if len(referred) == 1:
            return referred[0]
        page_id = self.page_id(object_type)
        recalled = self.recalled_ids(object_type)
        return page_id or (recalled[0] if len(recalled) == 1 else None)

    def statuses(self) -> frozenset[str]:
        """The statuses the message names; «завершилась ошибкой» is a failure, not a success."""
        named = {
            status
            for status, words in _STATUS_WORDS.items()
            if any(re.search(rf"(?<!не )\b{re.escape(w)}", self.lower) for w in words)
        }
        if "failed" in named:
            named = (named - {"done"}) | {"failing"}  # a failed migration, a failing dashboard
        return frozenset(named)

    def focus(self, args: Mapping[str, Any]) -> Focus:
        """What the answer to this message narrows a result to: the earlier answer's objects it
        points back at (of kinds the call did not name itself), and the statuses it names."""
        ids = {
            kind: values
            for kind, values in self.last_named.items()
            if self.refers_back
            and self.exchanged
            and f"{kind}_id" not in args
            and f"{kind}_ids" not in args
        }
        return Focus(ids=ids, statuses=self.statuses())

    def environments(self) -> list[str]:
        words = re.findall(r"[a-zа-яё-]+", self.lower)
        found = [ENVIRONMENT_WORDS[w] for w in words if w in ENVIRONMENT_WORDS]
        return list(dict.fromkeys(found))

    def source_environment(self) -> str | None:
        """The environment the message moves from («с дева», "the staging version"), else the
        page's."""
        for match in _SOURCE_ENVIRONMENT.finditer(self.lower):
            word = match.group(1) or match.group(2)
            if word in ENVIRONMENT_WORDS:
                return ENVIRONMENT_WORDS[word]
        return self.page.get("envId")

    def page_object_target(self) -> str | None:
        """The target the page's object declares (a migration's), or None."""
        declared = self.page_object.get("migration")
        if isinstance(declared, dict) and declared.get("target_env_id"):
            return str(declared["target_env_id"])
        return None

    def named_target(self) -> str | None:
        """An environment the message names other than the source, or None."""
        current = self.source_environment()
        others = [env for env in self.environments() if env != current]
        return others[0] if others else None

    def target_environment(self) -> str | None:
        """An environment the message names other than the source; else the target the page's
        object declares (a migration moves to its own target)."""
        current = self.source_environment()
        others = [env for env in self.environments() if env != current]
        if others:
            return others[0]
        declared = self.page_object.get("migration")
        if isinstance(declared, dict) and declared.get("target_env_id"):
            return str(declared["target_env_id"])
        return None

    def sql(self) -> str | None:
        """The statement in the message, or None."""
        span = _CODE_SPAN.search(self.text)
        if span:
            return span.group(1).strip()
        start = re.search(r"\b(select|with|update|delete|insert|explain|drop)\b", self.lower)
        return self.text[start.start() :].strip() if start else None

    def referred_sql(self) -> str | None:
        """The statement the conversation ran or showed last, when the message points back at
        it ("format that query", "run it")."""
        pointed = self.refers_back or _THIS_QUERY.search(self.text)
        earlier = self.recalled.get("sql", []) if pointed else []
        return str(earlier[0]) if earlier else None

    def pointed_kinds(self) -> set[str]:
        """The kinds of object the message points back at: the last result's, else the page's
        own («kick it off» on a migration's page)."""
        if not self.refers_back:
            return set()
        if self.exchanged:
            return set(self.last_named)
        kind = self.page.get("objectType")
        return {str(kind)} if kind else set()

    def quoted(self) -> str | None:
        quoted = self.all_quoted()
        return quoted[0] if quoted else None

    def all_quoted(self) -> list[str]:
        return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(self.text)]

    def labelled(self, pattern: re.Pattern[str]) -> str | None:
        """A quoted phrase, else the words after a label («причина: …», "label it …")."""
        match = pattern.search(self.text)
        found = next((g for g in match.groups() if g), None) if match else None
        return self.quoted() or (found.strip(" .") if found else None)

    def titled_ids(self, object_type: str) -> list[int]:
        """The objects of this type earlier results showed under the quoted titles."""
        titles = {t.casefold() for t in self.all_quoted()}
        return [
            object_id
            for (kind, object_id), entry in self.known.items()
            if kind == object_type and str(entry.get("title", "")).casefold() in titles
        ]

    def titled_id(self, object_type: str) -> int | None:
        ids = self.titled_ids(object_type)
        return ids[0] if ids else None

    def _with_title_words(self, object_type: str, ids: list[int]) -> list[int]:
        """Of `ids`, the ones whose title has the message's words («у того, который по
        объектам», "the ETL one"), when some do."""
        stems = (search_words(self.text) or "").split()
        stems += [w for w in re.findall(r"\b[a-z]{3,}\b", self.lower) if w.upper() in self.text]
        matching = [
            object_id
            for object_id in ids
            if any(
                stem in str(self.known.get((object_type, object_id), {}).get("title", "")).lower()
                for stem in stems
            )
        ]
        return matching or ids


_STRONG, _WEAK = 3, 1

_ASKS_ABOUT_RESULTS: Final = re.compile(
    r"(?:^|[\s,.!])(?:какие|какой|какая|что|прошёл|прошел|прошла|есть ли|были ли|был ли|"
    r"did|what|which|was|were|has|is there|are there)\b",
    re.IGNORECASE,
)
_ASKS_TO_RUN: Final = re.compile(
    r"прогон|запуст|сделай|проверь|провалидируй|перезапуст|сгенерир|напиши|добавь|"
    r"\brun\b|rerun|re-run|kick off|\bstart|validate|generate|write|\bdo\b",
    re.IGNORECASE,
)


def asks_about_results(text: str) -> bool:
    """Whether a message asks what is there («какие у него проблемы с валидацией?», "did the
    last validation pass?") rather than asks for something to be done: such a message never
    starts work with a cost (a paid LLM task); the last result answers it."""
    return bool(_ASKS_ABOUT_RESULTS.search(text)) and not _ASKS_TO_RUN.search(text)


def _named(word: str, lower: str) -> bool:
    """Whether the message names `word`, not as a negation ("don't run it", «не запускай»)."""
    start = lower.find(word)
    while start >= 0:
        before = lower[max(0, start - 7) : start]
        if not re.search(r"(?:n't|\bnot|\bне)\s+$", before):
            return True
        start = lower.find(word, start + 1)
    return False


def _score(
    choice: OfflineChoice, lower: str, *, write: bool = False, follows_up: bool = False
) -> int:
    """3 when a strong word is in the message, plus 1 when a weak one is: how many of them
    match does not count, so a tool with many synonyms does not outvote the named action; a
    negated word ("don't run it") does not count; a write is never chosen by its object's
    name alone ("include dashboard 21" is not a request to document it); a follow-up phrase
    ("run it") counts as strong when the message points back at an object the tool takes."""
    strong = any(_named(w, lower) for w in choice.strong) or (
        follows_up and any(_named(w, lower) for w in choice.follow_up)
    )
    weak = any(_named(w, lower) for w in choice.weak) and (strong or not write)
    return _STRONG * strong + _WEAK * weak


def choose_tool(
    text: str,
    available: Sequence[str],
    catalog: ToolCatalog = CATALOG,
    *,
    preferred: Sequence[str] = (),
    strong_only: bool = False,
    pointed: Collection[str] = (),
    earlier: Collection[str] = (),
) -> str | None:
    """The tool among `available` whose declared offline keywords best match `text`, or None.

    A follow-up phrase counts for a tool that takes a kind of object the message points at
    (`pointed`: «run it» after a query is the query, on a migration's page the migration). A tie
    goes to a tool that takes what an earlier answer showed and the message points back at
    (`earlier`), then to a `preferred` tool (one
    this turn offers), then to the lower precedence. With `strong_only`, a tool matched by weak
    words alone does not count.
    """
    lower = text.lower()
    kinds = set(pointed)
    questions = asks_about_results(lower)
    scored = [
        (
            _score(
                spec.offline,
                lower,
                write=spec.operation is Operation.WRITE,
                follows_up=bool(kinds & _kinds_taken(spec.args_model)),
            ),
            bool(set(earlier) & _kinds_taken(spec.args_model)),
            spec.name in preferred,
            -spec.offline.precedence,
            spec.name,
        )
        for spec in catalog
        if spec.offline is not None
        and spec.name in available
        and not (spec.cost and questions)  # a question never starts a paid task
    ]
    best = max(scored, default=(0, False, False, 0, None))
    needed = _STRONG if strong_only else 1
    if best[0] < needed:
        return None
    return _more_specific(best[4], [s[4] for s in scored if s[0] == best[0]], lower, catalog)


def _more_specific(
    chosen: str | None, tied: Sequence[str | None], lower: str, catalog: ToolCatalog
) -> str | None:
    """Among tools tied on score, one whose matched strong words contain the chosen one's
    («put staging into maintenance»: "into maintenance" over "maintenance"), else the chosen."""

    def matched(name: str | None) -> list[str]:
        spec = catalog.get(name) if name else None
        words = spec.offline.strong if spec is not None and spec.offline is not None else ()
        return [w for w in words if _named(w, lower)]

    mine = matched(chosen)
    for other in tied:
        if (
            other != chosen
            and mine
            and any(o != m and m in o for o in matched(other) for m in mine)
            and all(any(m in o for o in matched(other)) for m in mine)
        ):
            return other
    return chosen


@functools.cache
def _kinds_taken(args_model: type[BaseModel]) -> frozenset[str]:
    """The kinds of object a tool's arguments name (`dashboard_id` -> dashboard; `sql`)."""
    return frozenset(
        name.removesuffix("_ids").removesuffix("_id") if name.endswith(("_id", "_ids")) else name
        for name in args_model.model_fields
    )


ArgsBuilder = Callable[[_Request], dict[str, Any] | None]


def _dashboard_search(r: _Request) -> dict[str, Any]:
    """Dashboards by the ids the message names; else by the topic of an explicit search (a
    quoted title that is not the page's, «найди …»); else the earlier answer's dashboards it
    points at; else the page's; else by the message's topic. Never by the conversation's last
    ids unasked (a new search)."""
    page_id = r.page_id("dashboard")
    quoted = r.quoted()
    query = quoted or search_words(r.text)
    named_elsewhere = bool(quoted) and quoted != r.page.get("objectName")
    searching = named_elsewhere or bool(SEARCHING.search(r.text))
    given = [n for n in r.numbers if n > 0]
    if given:
        return {"dashboard_ids": given}
    if query and (searching or (_ALL_OF_THEM.search(r.text) and not r.refers_back)):
        return {"query": query}
    ids = r.referred_ids("dashboard") or ([page_id] if page_id else [])
    if ids:
        return {"dashboard_ids": ids}
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
_ENGLISH_PHRASES: Final = {
    "energy consumption": "энергопотреб",
    "power consumption": "энергопотреб",
    "energy balance": "энергобаланс",
    "power loss": "потери",
    "energy loss": "потери",
}
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
    lower = text.lower()
    stems = [stem for phrase, stem in _ENGLISH_PHRASES.items() if phrase in lower]
    for phrase in _ENGLISH_PHRASES:
        lower = lower.replace(phrase, " ")
    words = re.findall(r"[a-zа-яё]+", lower)
    for word in words:
        if word in _NOT_TOPIC_WORDS or word in ENVIRONMENT_WORDS:
            continue
        if word.startswith(_NOT_TOPIC_STEMS):
            continue
        english = next((v for k, v in _ENGLISH_TOPICS.items() if word.startswith(k)), None)
        if word.upper() in text and not _CYRILLIC.match(word) and len(word) >= 2:
            stems.append(word)  # an acronym of a title («Мониторинг ETL», "KPI")
        elif english is not None:
            stems.append(english)
        elif _CYRILLIC.match(word) and len(word) >= 4:
            stems.append(russian_stem(word))
    return " ".join(dict.fromkeys(stems)) or None


_ENDINGS: Final = (
    # three letters before two, so «-ами» goes before «-ам»
    *("ами", "ями", "ого", "его", "ому", "ему", "ыми", "ими"),
    *("ую", "юю", "ая", "яя", "ое", "ее", "ые", "ие", "ый", "ий", "ой", "ей"),
    *("ам", "ям", "ах", "ях", "ов", "ев", "ом", "ем"),
)


def russian_stem(word: str) -> str:
    """A word without its case ending and final vowels, at most 7 letters, at least 4
    («выручку» -> «выручк», «энергию» -> «энерг», «энергопотребление» -> «энергоп»)."""
    word = word.replace("ё", "е")
    stem = next((word[: -len(e)] for e in _ENDINGS if word.endswith(e)), word)
    stem = stem.rstrip("аеиоуыэюяйь")
    return (stem if len(stem) >= 4 else word[:4])[:7]


def _one_dashboard(r: _Request, **extra: Any) -> dict[str, Any] | None:
    dashboard_id = r.object_id("dashboard")
    return None if dashboard_id is None else {"dashboard_id": dashboard_id, **extra}


def _branch(r: _Request) -> dict[str, Any] | None:
    match = re.search(
        r"(?:ветк[уаи]|branch)\s+(?:(?:called|named|с именем|под названием)\s+)?([A-Za-z0-9._/-]+)",
        r.text,
        re.IGNORECASE,
    )
    return _one_dashboard(r, branch_name=r.quoted() or (match.group(1) if match else "agent-chat"))


def _page_dataset(r: _Request) -> dict[str, Any]:
    """The page's dataset, as its prefetched summary shows it, or {}."""
    dataset = r.page_object.get("dataset")
    return dataset if isinstance(dataset, dict) else {}


_NOT_A_TABLE: Final = frozenset(
    {"this", "that", "the", "it", "here", "there", "which", "what", "a", "its", "each", "as"}
    | {"and", "of", "for", "in"}
)
_FEW: Final = {"пяток": 5, "пару": 2, "парочку": 2, "десяток": 10, "few": 5, "couple": 2}


def _sample_rows(r: _Request) -> str | None:
    """A SELECT for a request to see some rows («покажи пяток строк из payments», "10 sample
    values of the region column"): the table it names or the page's dataset, the columns it
    names among the dataset's, a LIMIT from the count it gives."""
    dataset = _page_dataset(r)
    named = _ROWS_FROM.search(r.text)
    table = named.group(1) if named and named.group(1).lower() not in _NOT_A_TABLE else None
    if table is None and dataset.get("table_name"):
        table = f"{dataset.get('schema')}.{dataset['table_name']}"
    if table is None:
        return None
    columns = [str(c) for c in dataset.get("columns", []) + dataset.get("unmapped_columns", [])]
    words = re.findall(r"[a-z_]{3,}", r.lower)
    picked = [c for c in dict.fromkeys(columns) if any(c.startswith(w) for w in words)]
    counts = [int(m.group(1)) for m in _COUNTED.finditer(r.text)]
    few = next((n for word, n in _FEW.items() if word in r.lower), 10)
    limit = counts[0] if counts else few
    # The table matched [a-z_][a-z0-9_.]*, the columns are the dataset's own; and the statement
    # is classified and guarded like any the user writes
    return f"SELECT {', '.join(picked) or '*'} FROM {table} LIMIT {limit}"  # noqa: S608


def _sql(r: _Request) -> dict[str, Any] | None:
    sql = r.sql() or _sample_rows(r) or r.referred_sql()
    return None if sql is None else {"database_id": 1, "sql": sql}


def _dataset_table(r: _Request) -> dict[str, Any] | None:
    """schema.table from the message, or a table it names in the page dataset's schema."""
    match = _TABLE.search(r.lower)
    if match is not None:
        return {"database_id": 1, "schema_name": match.group(1), "table_name": match.group(2)}
    explicit = re.search(r"\b(?:schema|схем[аеуы]?)\s+([a-z_][a-z0-9_]*)", r.text, re.IGNORECASE)
    named = _TABLE_NAMED.search(r.text)
    schema = (
        explicit.group(1)
        if explicit and explicit.group(1).lower() not in _NOT_A_TABLE
        else _page_dataset(r).get("schema")
    )
    if named is None or not schema:
        return None
    return {"database_id": 1, "schema_name": schema, "table_name": named.group(1)}


def _minutes(r: _Request) -> dict[str, Any]:
    match = re.search(r"(\d+)[\s-]*(?:мин|min)", r.lower)
    after_colon = r.text.rsplit(":", 1)[-1].strip(" .") if ":" in r.text else ""
    return {
        "reason": (r.labelled(_REASON) or after_colon or r.text)[:200],
        "duration_minutes": int(match.group(1)) if match else 30,
    }


def _task(r: _Request) -> dict[str, Any] | None:
    """The task the message names, else the one the conversation named last."""
    match = _TASK_ID.search(r.lower)
    if match:
        return {"task_id": match.group(0)}
    earlier = r.recalled.get("task", [])
    return {"task_id": str(earlier[0])} if len(earlier) == 1 else None


def _dataset_scope(r: _Request) -> dict[str, Any]:
    role = re.search(r"\b(?:роль|role)\s+([A-Z][A-Za-z_]+)|\b([A-Z][A-Za-z_]+)\s+role\b", r.text)
    if role:  # what one role may do, over all datasets
        return {"role_name": role.group(1) or role.group(2)}
    schema = re.search(r"\b([a-z_]+)\s+schema\b|\bschema\s+([a-z_]+)|схем\w*\s+([a-z_]+)", r.text)
    named_schema = next((g for g in schema.groups() if g), "") if schema else ""
    if named_schema and named_schema not in _NOT_A_TABLE:
        return {"schema_name": named_schema}
    if re.search(r"databases|\bбаз[ыа]?\b|базы данных|\bсхемы\b|schemas", r.lower):
        return {}  # the databases and their datasets, not the page's dataset
    dataset_id = r.object_id("dataset")
    return {"dataset_id": dataset_id} if dataset_id else {}


def _schema_value(name: str, r: _Request) -> Any:
    """A required argument, guessed from its name (see `ArgsRecipe.FROM_SCHEMA`)."""
    if name == "source_env_id":
        return r.source_environment()
    if name == "target_env_id":
        # The environment the message names; else the migration's own target (the one it
        # names or points at, then the page's)
        migration = r.known.get(("migration", r.object_id("migration") or 0), {})
        return r.named_target() or migration.get("target_env_id") or r.page_object_target()
    if name.endswith("_ids"):
        return r.object_ids(name.removesuffix("_ids")) or None
    if name.endswith("_id"):
        return r.object_id(name.removesuffix("_id"))
    if name == "sql":
        return r.sql() or r.referred_sql()
    return r.quoted()


def _from_schema(args_model: type[BaseModel], r: _Request) -> dict[str, Any] | None:
    """The required arguments of `args_model`, or None when the message lacks one; an optional
    `note`, when the message labels the action («пометка «перед релизом»»)."""
    args: dict[str, Any] = {}
    for name, info in args_model.model_fields.items():
        if info.is_required():
            value = _schema_value(name, r)
            if value is None:
                return None
            args[name] = value
        elif name == "note" and (note := r.labelled(_LABEL)):
            args[name] = note[:200]
        elif name == "status" and (status := _named_status(info, r)):
            args[name] = status
    return args


def _named_status(field: Any, r: _Request) -> str | None:
    """The one status the message names that an optional `status` filter accepts (its
    pattern), so the upstream filters («какие переносы завалились?» -> failed)."""
    pattern = next((m.pattern for m in field.metadata if hasattr(m, "pattern")), None)
    accepted = [s for s in sorted(r.statuses()) if pattern and re.fullmatch(pattern, s)]
    return accepted[0] if len(accepted) == 1 else None


BUILDERS: Final[Mapping[ArgsRecipe, ArgsBuilder]] = {
    ArgsRecipe.DASHBOARD_SEARCH: _dashboard_search,
    ArgsRecipe.OPTIONAL_DASHBOARD: lambda r: (
        {"dashboard_id": ids[0]}
        if len(ids := r.object_ids("dashboard")) == 1
        and (r.numbers or not _ALL_OF_THEM.search(r.text))
        else {}
    ),
    ArgsRecipe.BRANCH: _branch,
    ArgsRecipe.COMMIT: lambda r: _one_dashboard(r, message=r.quoted() or "Изменения из агент-чата"),
    ArgsRecipe.DATASET_SCOPE: _dataset_scope,
    ArgsRecipe.SQL_QUERY: _sql,
    ArgsRecipe.DATASET_TABLE: _dataset_table,
    ArgsRecipe.TASK: _task,
    ArgsRecipe.MAINTENANCE_WINDOW: _minutes,
    ArgsRecipe.MAINTENANCE_EVENT: lambda r: (
        {"event_id": n} if (n := r.object_id("event")) else None
    ),
}
"""The builders for arguments no schema rule can guess, by the recipe a declaration names."""


MAX_FAN_OUT: Final = 5
"""The most objects a follow-up about «each of them» reads with one call per object."""


def _per_object(tool: str, args: dict[str, Any], r: _Request) -> list[dict[str, Any]]:
    """The calls for `args`: one per object when the message points back at several objects
    («какие из них сломаны?») and the tool, a read, takes one object of that kind; else one."""
    spec = CATALOG.get(tool)
    if spec is None or spec.operation is not Operation.READ or [n for n in r.numbers if n > 0]:
        return [args]
    for name in spec.args_model.model_fields:
        referred = r.referred_ids(name.removesuffix("_id")) if name.endswith("_id") else []
        if 1 < len(referred) <= MAX_FAN_OUT:
            return [{**args, name: object_id} for object_id in referred]
    return [args]


def _call_id(seed: str, index: int) -> str:
    return uuid.uuid5(uuid.NAMESPACE_URL, f"{seed}#{index}").hex[:16]


def build_arguments(
    tool: str, r: _Request, catalog: ToolCatalog = CATALOG
) -> dict[str, Any] | None:
    """The arguments the offline model sends to `tool`, or None (the message lacks them, or the
    tool declares no offline choice)."""
    spec = catalog.get(tool)
    if spec is None or spec.offline is None:
        return None
    r = r.for_tool(spec)
    if spec.offline.args is ArgsRecipe.FROM_SCHEMA:
        return _from_schema(spec.args_model, r)
    return BUILDERS[spec.offline.args](r)


def _repeated_tool(messages: Sequence[BaseMessage], r: _Request) -> str | None:
    """The tool the conversation called last, when the message asks for the same for something
    else; never a write asked as a question ("is it the same in prod?")."""
    if not FOLLOW_UP.search(r.text):
        return None
    called = [m for m in messages[:-1] if isinstance(m, AIMessage) and m.tool_calls]
    if not called:
        return None
    tool = str(called[-1].tool_calls[-1]["name"])
    spec = CATALOG.get(tool)
    if spec is None or (spec.operation is Operation.WRITE and "?" in r.text):
        return None
    return tool


def _clarified_tool(messages: Sequence[BaseMessage], bound: Sequence[str]) -> str | None:
    """The tool the model's last question asked details for («…(deploy_dashboard)…?»), when
    the user's answer names no tool of its own."""
    for message in reversed(messages[:-1]):
        if isinstance(message, AIMessage) and not message.tool_calls:
            text = own_words(message)
            if not text.rstrip().endswith("?"):
                return None
            return next(
                (tool for tool in bound if f"«{_label(tool, True)}»" in text),
                next((tool for tool in bound if _label(tool, False) in text), None),
            )
    return None


def _tool_data(message: ToolMessage) -> Any:
    """A tool result as data: the framed output block's result (read as data, as the frame
    says), else the JSON, else the text."""
    text = own_words(message)
    block = read_tool_output_block(text)
    if block is not None:
        return block.get("result")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _calls(messages: Sequence[BaseMessage]) -> dict[str, tuple[str, dict[str, Any]]]:
    """Every tool call of the conversation: id -> (tool, arguments)."""
    return {
        str(call["id"]): (call["name"], call["args"])
        for message in messages
        if isinstance(message, AIMessage)
        for call in message.tool_calls
    }


def _unseen_page_object(r: _Request) -> str | None:
    """For «этот дашборд» on a page with no dashboard (a link that named none, or one whose
    object was dropped), the message naming no number and nothing said before: which one? A
    search in its place would answer «не найдены» of a dashboard that may well exist."""
    match = _THIS_OBJECT.search(r.text)
    if match is None or r.numbers or r.exchanged:
        return None
    kind = _THIS_KINDS[match.lastindex - 1 if match.lastindex else 0]
    if r.page.get("objectType") == kind and r.page.get("objectId"):
        return None
    which, of_kind = _KIND_WORDS[kind]
    return say(
        r.russian,
        f"Я не вижу, {which} речь: страница не передала мне объект (ссылка его не назвала или "
        f"он не распознан). Назовите номер {of_kind}.",
        f"I cannot see which {kind} you mean: the page told me of no object (the link named "
        f"none, or it was not recognised). Tell me the {kind}'s id.",
    )


def _request(messages: Sequence[BaseMessage]) -> _Request:
    """The user's last message, read with the page, the page object's summary and what the
    tool results before it named (the conversation's memory of objects, by kind; the latest
    exchange wins a kind). Each earlier result is narrowed as its own answer was («какие
    миграции упали?» names the failed ones only), so «её план» means the one the user read."""
    page = _page_context(messages)
    summary = _object_summary(messages)
    page_object = _summary_result(summary)
    last_named = mentions(page_object, summary.get("args") or {})
    recalled, known = dict(last_named), described(page_object)
    exchanged = False
    calls = _calls(messages)
    question = _Request("", page, page_object=page_object, summary=summary)
    for message in messages:
        if isinstance(message, HumanMessage):
            question = _Request(
                own_words(message),
                page,
                page_object=page_object,
                recalled=dict(recalled),
                last_named=last_named,
                known=dict(known),
                exchanged=exchanged,
                summary=summary,
            )
        elif isinstance(message, ToolMessage) and message.status != "error":
            args = calls.get(str(message.tool_call_id), ("", {}))[1]
            data = _tool_data(message)
            if isinstance(data, dict):
                data = narrowed(data, question.focus(args))
            known.update(described(data))
            exchanged = True
            last_named = mentions(data, args)
            recalled.update(last_named)
    return question


@dataclass(frozen=True, slots=True)
class _KeptOut:
    """Why the prompt says a tool is not this user's here."""

    rule: str
    detail: str
    roles: Mapping[str, str]
    """For a role rule where the call's target decides: the role each environment needs."""

    def required_role(self, target: str | None) -> str:
        """The role the asked-for target needs; else the least role the detail names."""
        if target is not None and target in self.roles:
            return self.roles[target]
        return self.detail.removeprefix("requires ").split(" ", 1)[0].strip(";,")


def _unavailable(messages: Sequence[BaseMessage]) -> dict[str, _KeptOut]:
    """The tools the prompt says this user cannot use here, and why."""
    block = prompt_block(messages, UNAVAILABLE_OPEN, UNAVAILABLE_CLOSE)
    return {
        str(entry.get("tool")): _KeptOut(
            str(entry.get("rule")),
            str(entry.get("detail")),
            {str(k): str(v) for k, v in (entry.get("roles") or {}).items()},
        )
        for entry in block.get("tools", [])
        if isinstance(entry, dict)
    }


def _label(tool: str, russian: bool) -> str:
    spec = CATALOG.get(tool)
    if spec is None:
        return tool
    # In words only: the next turn finds the tool a question was about by these words
    # (`_clarified_tool`), as a person would
    return spec.label_ru if russian else spec.description.rstrip(".").lower()


def _page_object_issues(data: Any, r: _Request) -> str:
    """The page dashboard's validation remarks, when a health result is about it alone (the
    summary knows why it is red; the health read only counts the failing charts)."""
    health = items(data.get("items")) if isinstance(data, dict) and "failing" in data else []
    page_id = r.page_id("dashboard")
    if len(health) != 1 or page_id is None or health[0].get("dashboard_id") != page_id:
        return ""
    found = r.page_object.get("dashboards")
    page = found[0] if isinstance(found, list) and len(found) == 1 else {}
    issues = items((page.get("validation") or {}).get("issues"))
    if not issues:
        return ""
    listed = "; ".join(str(i) for i in issues)
    return say(r.russian, f"Замечания валидации: {listed}.", f"Validation remarks: {listed}.")


_KEPT_OUT_RU: Final = {
    "no_environment": "после выбора окружения",
    "affinity": "на странице другого объекта или без объекта",
    "role": "с другой ролью",
}
_KEPT_OUT_EN: Final = {
    "no_environment": "once an environment is chosen",
    "affinity": "on another object's page, or one without an object",
    "role": "with another role",
}


def _kept_out_note(kept_out: Mapping[str, _KeptOut], russian: bool) -> str:
    """What else the assistant can do elsewhere (the tools the prompt lists as unavailable
    here, by why), so a capabilities answer on a bare page still shows the whole service."""
    by_rule: dict[str, list[str]] = {}
    for tool, why in kept_out.items():
        by_rule.setdefault(why.rule, []).append(_title(tool) if russian else _label(tool, False))
    words = _KEPT_OUT_RU if russian else _KEPT_OUT_EN
    lines = [f"- {words.get(rule, rule)}: {', '.join(tools)}" for rule, tools in by_rule.items()]
    if not lines:
        return ""
    # A paragraph of its own: glued to the list above, it would read as its last item
    return "\n\n" + say(russian, "Ещё доступно:\n", "Also available:\n") + "\n".join(lines)


def _title(tool: str) -> str:
    """«поиск дашбордов»: the catalog's short name of a tool, within a sentence."""
    title = tool_label(tool)
    return title[:1].lower() + title[1:] if title[1:2].islower() else title


def _unavailable_answer(tool: str, kept_out: _KeptOut, r: _Request) -> str:
    """Why the asked-for tool is not available to this user here; nothing was run."""
    rule = kept_out.rule
    label = _label(tool, r.russian)
    if rule == "role":
        target = r.target_environment() if kept_out.roles else None
        role = kept_out.required_role(target)
        where = f" в {target}" if target in kept_out.roles else ""
        there = f" in {target}" if target in kept_out.roles else ""
        return say(
            r.russian,
            f"Не могу: {label}{where} требует роль {role_words(role, True)}, а у вас её нет. "
            "Я ничего не запускал; попросите коллегу с этой ролью.",
            f"I can't: {label}{there} requires the {role} role, which you do not have. Nothing "
            "was run; ask a colleague who has it.",
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
        f"На странице {status_words('page_of', page, True)} это недоступно: {label}. Откройте "
        "страницу нужного "
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
        _ARGUMENT_WORDS.get(name, (ARGUMENT_LABELS.get(name, name).lower(), name))[
            0 if r.russian else 1
        ]
        for name in missing
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
        spec = CATALOG.get(tool)
        named = f"«{spec.label_ru}»" if spec is not None and spec.label_ru else "это"
        return say(
            russian,
            f"Недостаточно прав: я не запускал {named} — для этого нужна роль "
            f"{role_words(role, True)}.",
            f"Not allowed: I did not run {tool}, it needs the {role} role.",
        )
    if event == "cancelled":
        # The stream has said, in Russian, which call was not run and that nothing changed: a
        # Russian answer adds nothing (one line, not two); an English one says it in English
        return say(russian, "", "Understood: the operation was cancelled, nothing ran.")
    # The last line: a note about an edited call (`with_edit_notes`) comes before the result
    detail = own_words(message).rsplit("\n", 1)[-1].split(": ", 1)[-1]
    # The failed tool card says, in Russian, what happened and what to do (and that a write
    # whose status is unknown may have applied): a Russian answer does not say it twice; an
    # English one says it in English
    return say(russian, "", f"{tool} failed: {detail}")


class OfflineChatModel(ReplyStreamingModel):
    """Deterministic, rule-based stand-in for an LLM (see the module docstring)."""

    bound_tools: tuple[str, ...] = ()

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
        request = _request(messages)
        if messages and isinstance(messages[-1], HumanMessage):
            files = read_attachment_blocks(content_text(messages[-1]))
            russian = request.russian or not request.text.strip()
            about_files = file_answer(request.text, files, russian)
            direct = about_files if about_files is not None else _unseen_page_object(request)
            if direct is not None:
                return AIMessage(content=direct)
        if messages and isinstance(messages[-1], ToolMessage):
            return AIMessage(content=self._answer_from_tools(messages, request))
        summary = request.summary
        # What the user asks for, whatever this turn offers (as an LLM reads the request): the
        # action it names; else the answer to the model's last question («тогда в прод»); else,
        # on an object page, a vague question ("what's its status?") is about the page's object
        status_question = bool(summary) and bool(_STATUS_QUESTION.search(request.text))
        wanted = _repeated_tool(messages, request) or (
            None
            if status_question
            else choose_tool(
                request.text,
                CATALOG.names,
                preferred=self.bound_tools,
                strong_only=bool(summary),
                pointed=request.pointed_kinds(),
                earlier=request.pointed_kinds() if request.exchanged else (),
            )
        )
        wanted = (
            wanted
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
        seed = request.text + str(len(messages))
        return AIMessage(
            content="",
            tool_calls=[
                {"name": tool, "args": each, "id": f"call_{_call_id(seed, i)}"}
                for i, each in enumerate(_per_object(tool, args, request))
            ],
        )

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
        args = summary.get("args")
        return describe_result(
            tool, request.page_object, request.russian, args if isinstance(args, Mapping) else None
        )

    def _answer_from_tools(self, messages: Sequence[BaseMessage], request: _Request) -> str:
        """The answer from this step's tool results, narrowed to what the question is about."""
        results: list[ToolMessage] = []
        for message in reversed(messages):
            if not isinstance(message, ToolMessage):
                break
            results.insert(0, message)
        calls = _calls(messages)
        parts = [_describe_failure(r, request.russian) for r in results if r.status == "error"]
        answered: dict[str, list[tuple[Any, dict[str, Any]]]] = {}
        for result in results:
            if result.status != "error":
                args = calls.get(str(result.tool_call_id), ("", {}))[1]
                answered.setdefault(result.name or "tool", []).append((_tool_data(result), args))
        for tool, outputs in answered.items():
            # One tool over several objects («каждый из них») is answered as one result
            joined = merged(outputs) if len(outputs) > 1 else None
            for data, args in [joined] if joined is not None else outputs:
                focus = request.focus(args)
                parts.append(describe_result(tool, data, request.russian, args, focus))
                if isinstance(data, dict) and "tools" in data and "role" in data:
                    parts.append(_kept_out_note(_unavailable(messages), request.russian))
                parts.append(_page_object_issues(data, request))
        return " ".join(p for p in parts if p)

    def _no_tool_answer(self, tool: str | None, request: _Request) -> str:
        if tool is not None:  # a tool fits, but the message lacks what it needs
            return clarifying_question(tool, request)
        named = [_title(t) if request.russian else t for t in self.bound_tools]
        offered = ", ".join(named) or say(request.russian, "нет", "none")
        return say(
            request.russian,
            f"Я ассистент ss-tools (правила, без LLM). Не понял запрос; спросите «что ты умеешь?». "
            f"Доступные инструменты: {offered}.",
            f"I am the ss-tools assistant (rule-based, no LLM). I did not understand; ask "
            f"“what can you do?”. Tools: {offered}.",
        )
