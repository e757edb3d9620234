"""The stand-in chat model: deterministic, small, driven by the catalog. It is not an LLM.

It reads only what a real model reads: the tools it is given (with their JSON schemas), the
system prompt's blocks (the page, the tools kept from this user, the page object's summary) and
the conversation. It calls the tool the router ranks first (`ToolRouter`, the tools' `routing`
words), never a write for a question; it fills the schema's arguments from the message as the
user gave them (ids, environments, SQL, «на час» as 60 minutes), then the previous message, the
page and earlier results, and asks ONE question for a required argument it cannot fill or for
which it has several candidates; it answers from a result by its shape, headed by the catalog's
label, in the user's language, and says plainly what it did not understand.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from langchain_core.language_models import LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import Runnable
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

from sstools_agent.agent import standin_reading as read
from sstools_agent.agent.prompts import (
    OBJECT_SUMMARY_CLOSE,
    OBJECT_SUMMARY_OPEN,
    UNAVAILABLE_CLOSE,
    UNAVAILABLE_OPEN,
)
from sstools_agent.agent.scripted_replies import ReplyStreamingModel
from sstools_agent.domain import output_words as words
from sstools_agent.domain.attachment_content import read_attachment_blocks
from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENT_TIERS
from sstools_agent.domain.glossary import ARGUMENT_LABELS
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_routing import (
    FOLLOW_UP,
    INTENT_WORDS,
    SEARCHING,
    Intent,
    ToolRouter,
    normalise,
)
from sstools_agent.domain.ui_context import UI_CONTEXT_CLOSE, UI_CONTEXT_OPEN
from sstools_agent.domain.wording import role_words

_QUESTION: Final = re.compile(
    r"\?\s*$|^(?:what|which|is|are|does|do|did|has|have|how|when|who|why|where|"
    r"что|какой|какая|какие|каков\w*|есть ли|сколько|когда|кто|почему|зачем|где|как|ли)\b",
    re.IGNORECASE,
)
_REQUEST: Final = re.compile(
    r"^(?:можешь|можно|могу ли|сможешь|не мог\w*|could you|can you|would you|will you|please|"
    r"пожалуйста|давай)\b",
    re.IGNORECASE,
)
"""A polite request asked as a question («можешь задеплоить …?») is a request."""
_POINTER: Final = re.compile(
    r"\b(?:эт\w+|его|её|ее|него|нему|ним|здесь|тут|там|this|it|its|here)\b", re.IGNORECASE
)
_THIS_ENVIRONMENT: Final = re.compile(
    r"\b(?:эт\w+|this|here)\s+(?:окружени\w*|сред\w*|стенд\w*|environment|env)\b", re.I
)
_ENV_FIELDS: Final = ("source_env_id", "target_env_id")
_ABOUT_FILES: Final = re.compile(r"файл|\bfile|вложени|attach|столбц|колонк|column", re.I)
_KEPT_OUT: Final = {
    "role": ("нужна роль {role}", "it needs the {role} role"),
    "affinity": ("это не действие для объекта этой страницы", "it is not for this page's object"),
    "no_environment": ("страница не указывает окружение", "this page names no environment"),
}
"""The policy's removal rules (`RemovalRule`) in words."""
_SPECS: Final = {spec.name: spec for spec in CATALOG}
_KEYWORD_ROUTER: Final = ToolRouter(None)
_MEANINGFUL: Final = (Intent.CAPABILITIES, Intent.MAINTENANCE, Intent.DASHBOARD_QUERY)
_KNOWN_WORDS: Final = (
    *(
        normalise(word)
        for words in (*(s.routing.keywords for s in CATALOG), *INTENT_WORDS.values())
        for word in words
        if " " not in word
    ),
    *("пожалуйста", "please", "котор", "which", "связан", "related", "окружен", "environment"),
    *("this", "that", "these", "those", "эти", "этот", "эту", "этом"),
)
"""Words that say what to do, not what about: a search's topic is none of them."""
_NAMED_OBJECT: Final = 6
"""What naming a tool's object adds to its keyword score (a verb such as «запусти» weighs 7)."""
_OBJECTS: Final = {
    key.rsplit("_", 1)[0]: read.noun_stems(key)
    for spec in CATALOG
    for key in spec.args_model.model_fields
    if key.endswith(("_id", "_ids")) and "env" not in key
}
"""Each object a tool may be about, and how a message names it («задач», "task")."""


@dataclass
class _Turn:
    """The user's last message with everything it is read against."""

    text: str
    russian: bool
    page: dict[str, Any]
    summary: dict[str, Any]
    kept_out: dict[str, dict[str, Any]]
    earlier: str = ""
    """The previous message, when this one answers the model's question or repeats a request."""
    remembered: list[Any] = field(default_factory=list)
    """Earlier calls' arguments and results, the latest first."""
    last_tool: str | None = None

    @property
    def texts(self) -> list[str]:
        return [t for t in (self.text, self.earlier) if t]

    @property
    def page_result(self) -> Any:
        result = self.summary.get("result")
        return read.as_data(result) if isinstance(result, str) else result


@dataclass
class _Args:
    values: dict[str, Any] = field(default_factory=dict)
    missing: str | None = None
    choices: list[str] = field(default_factory=list)
    note: str = ""


class StandinChatModel(ReplyStreamingModel):
    """Catalog-driven stand-in for an LLM (see the module docstring)."""

    schemas: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """The bound tools' argument schemas, by name (what `bind_tools` was given)."""
    router: Any = None
    """The agent's `ToolRouter` (keywords and embeddings); None: keywords only."""

    @property
    def _llm_type(self) -> str:
        return "ss-tools-standin"

    def bind_tools(
        self, tools: Sequence[Any], *, tool_choice: str | None = None, **kwargs: Any
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Remembers the tools it may call and their schemas (it never calls any other)."""
        functions = [convert_to_openai_tool(tool)["function"] for tool in tools]
        schemas = {f["name"]: f.get("parameters") or {} for f in functions}
        return self.model_copy(update={"schemas": schemas})

    def ranked(
        self, text: str, page_object: str | None = None, after: str | None = None
    ) -> tuple[list[str], list[str]]:
        """The tools the router ranks for the text, best first (of two equally named, the one
        about the same object as the last call, `after`); and those followed by the tools its
        intent (help, maintenance, a dashboard question) offers unasked."""
        router = self.router if isinstance(self.router, ToolRouter) else _KEYWORD_ROUTER
        decision = router.route(text, CATALOG.names, page_object=page_object)
        scores, before = router.keyword_scores(text), CATALOG.get(after or "")
        named = _objects_in(normalise(text).split())
        ranked = sorted(
            decision.ranked,
            key=lambda t: (
                # «статус задачи»: the task's status; a named object weighs as an action word
                -scores.get(t, 0) - (0 if named.isdisjoint(_objects_of(t)) else _NAMED_OBJECT),
                before is None or _SPECS[t].affinity != before.affinity,
            ),
        )
        unasked = decision.offered if decision.intent in _MEANINGFUL else ()
        return ranked, list(dict.fromkeys((*ranked, *unasked)))

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The whole reply to a conversation: tool calls, or an answer."""
        if messages and isinstance(messages[-1], ToolMessage):
            return AIMessage(content=_answer_from_results(messages))
        turn = _read(messages)
        kind = turn.page.get("objectType")
        # A statement is what to act on, not what to do: «отформатируй: select …» formats
        statement = read.sql_in(turn.text)
        bare = turn.text.replace(statement, " ") if statement else turn.text
        own, ranked = self.ranked(bare, kind, turn.last_tool)
        if not own:
            own, ranked = self.ranked(turn.text, kind, turn.last_tool)
        previous = _previous(messages)
        if previous is not None and (FOLLOW_UP.search(turn.text) or not own):
            turn.earlier = previous
            own, ranked = self.ranked(f"{previous}\n{turn.text}", kind, turn.last_tool)
        files = read_attachment_blocks(read.content_text(messages[-1])) if messages else []
        if files and (_ABOUT_FILES.search(turn.text) or not set(own) & set(self.schemas)):
            return AIMessage(content=_files_answer(files, turn.russian))
        # Nothing the message names (no tool, no object, not the page's): no guess from the page
        words = normalise(turn.text)
        intent = any(w in words for ws in INTENT_WORDS.values() for w in ws)
        pronoun = re.search(r"\b(?:он|она|оно|они|they)\b", words)  # the page's or the last
        named = _POINTER.search(turn.text) or pronoun or _objects_in(words.split()) or intent
        if not own and not named:
            return AIMessage(content=_not_understood(turn, list(self.schemas)))
        return self._act(turn, ranked, len(messages))

    def _act(self, turn: _Turn, ranked: list[str], seed: int) -> AIMessage:
        # The first clause says which: «Прогони проверку, что она найдёт?» asks for the run
        first = re.split(r"(?<=[?!.])\s|[,;:]\s", turn.text.strip(), maxsplit=1)[0]
        asked = bool(_QUESTION.search(first)) and not _REQUEST.search(turn.text)
        for tool in ranked:
            spec = _SPECS[tool]
            # A card (a write, or a read with a cost such as an LLM review) never answers a
            # question; a statement's own verb decides its class later
            if asked and (spec.operation is Operation.WRITE or spec.cost) and not spec.sql_argument:
                continue
            if tool in self.schemas:
                return self._call(tool, turn, seed)
            if tool in turn.kept_out:
                return AIMessage(content=_kept_out_answer(tool, turn))
            if tool == turn.summary.get("tool"):
                break
        if turn.summary:
            return AIMessage(content=_summary_answer(turn))
        return AIMessage(content=_not_understood(turn, list(self.schemas)))

    def _call(self, tool: str, turn: _Turn, seed: int) -> AIMessage:
        args = _Filler(tool, self.schemas[tool], turn).fill()
        if args.missing is not None:
            return AIMessage(content=_clarifying_question(tool, args, turn.russian))
        digest = hashlib.sha256(f"{turn.text}|{seed}".encode()).hexdigest()[:16]
        return AIMessage(
            content="", tool_calls=[{"name": tool, "args": args.values, "id": f"call_{digest}"}]
        )


# -- reading the conversation --------------------------------------------------------------------


def _read(messages: Sequence[BaseMessage]) -> _Turn:
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    text = read.own_words(humans[-1]) if humans else ""
    kept_out = read.prompt_block(messages, UNAVAILABLE_OPEN, UNAVAILABLE_CLOSE).get("tools", [])
    turn = _Turn(
        text=text,
        russian=read.is_russian(text) or not text.strip(),
        page=read.prompt_block(messages, UI_CONTEXT_OPEN, UI_CONTEXT_CLOSE),
        summary=read.prompt_block(messages, OBJECT_SUMMARY_OPEN, OBJECT_SUMMARY_CLOSE),
        kept_out={str(e.get("tool")): e for e in kept_out if isinstance(e, dict)},
    )
    for message in messages:
        if isinstance(message, AIMessage):
            turn.remembered[:0] = [call["args"] for call in message.tool_calls]
            turn.last_tool = next((c["name"] for c in message.tool_calls), turn.last_tool)
        elif isinstance(message, ToolMessage) and message.status != "error":
            turn.remembered.insert(0, read.as_data(read.content_text(message)))
    turn.remembered += [turn.summary.get("args") or {}, turn.page_result]
    return turn


def _previous(messages: Sequence[BaseMessage]) -> str | None:
    """The user's previous message, when the model's last words were a question to them or the
    new message repeats a request."""
    humans = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    if len(humans) < 2:
        return None
    between = messages[humans[-2] + 1 : humans[-1]]
    asked = any(isinstance(m, AIMessage) and str(m.content).rstrip().endswith("?") for m in between)
    text = read.own_words(messages[humans[-1]])
    return read.own_words(messages[humans[-2]]) if asked or FOLLOW_UP.search(text) else None


def _found(value: Any, key: str, into: list[Any]) -> None:
    """Every value of `key` in a result, and for `x_id` the ids of the `x…` items it lists."""
    noun = key.removesuffix("_ids").removesuffix("_id")
    if isinstance(value, Mapping):
        for k, v in value.items():
            if k == key:
                into.extend(v if isinstance(v, list) else [v])
            elif k.startswith(noun) and isinstance(v, list) and key != noun:
                into.extend(i["id"] for i in v if isinstance(i, Mapping) and "id" in i)
            elif k == noun and isinstance(v, Mapping) and "id" in v and key != noun:
                into.append(v["id"])
            elif isinstance(v, Mapping | list):
                _found(v, key, into)
    elif isinstance(value, list):
        for item in value:
            _found(item, key, into)


def _recalled(key: str, remembered: list[Any]) -> list[Any]:
    """What the latest earlier call or result that names `key` gave it."""
    for source in remembered:
        into: list[Any] = []
        _found(source, key, into)
        if into:
            return list(dict.fromkeys(v for v in into if v is not None))
    return []


def _has_value(value: Any, item_id: Any, test: Callable[[Any], bool]) -> bool:
    """Whether an item with this id, somewhere in earlier results, has a field that passes."""
    if isinstance(value, Mapping):
        if str(value.get("id")) == str(item_id) and any(map(test, value.values())):
            return True
        value = list(value.values())
    return isinstance(value, list) and any(_has_value(v, item_id, test) for v in value)


def _objects_in(words: Sequence[str]) -> set[str]:
    return {o for o, stems in _OBJECTS.items() if any(w.startswith(stems) for w in words)}


def _objects_of(tool: str) -> set[str]:
    """The objects a tool is about: those its arguments or its routing words name."""
    fields = _SPECS[tool].args_model.model_fields
    words = normalise(" ".join(_SPECS[tool].routing.keywords)).split()
    return _objects_in(words) | {k.rsplit("_", 1)[0] for k in fields}


def _is_free_text(prop: Mapping[str, Any]) -> bool:
    """A text argument with no pattern that holds a sentence (a reason, a note, a message)."""
    strings = [p for p in (prop, *prop.get("anyOf", [])) if p.get("type") == "string"]
    return any("pattern" not in p and p.get("maxLength", 0) >= 200 for p in strings)


# -- arguments -----------------------------------------------------------------------------------


class _Filler:
    """One call's arguments, filled from its schema (`fill`)."""

    def __init__(self, tool: str, schema: Mapping[str, Any], turn: _Turn) -> None:
        self.spec, self.turn, self.args = _SPECS[tool], turn, _Args()
        self.properties: Mapping[str, Any] = schema.get("properties") or {}
        self.required = set(schema.get("required") or ())
        self.used: set[str] = set()
        self.id_fields = sum(
            k.endswith(("_id", "_ids")) and "env" not in k for k in self.properties
        )

    def fill(self) -> _Args:
        """The arguments; the first required one it cannot fill is `missing`."""
        environment = self.spec.environment_argument
        if any(k in _ENV_FIELDS or k == environment for k in self.properties):
            self._environments(environment)
        for key, prop in self.properties.items():
            if key in self.args.values:
                continue
            value = self._value(key, prop, key in self.required)
            if value is not None:
                self.args.values[key] = value
            elif key in self.required:
                self.args.missing = key
                break
        return self.args

    def _value(self, key: str, prop: Mapping[str, Any], required: bool) -> Any:
        types = {prop.get("type")} | {p.get("type") for p in prop.get("anyOf", [])}
        if key.endswith("_ids"):
            one = self._an_id(key.removesuffix("s"), required)
            ids = [n for _, n in read.numbers(self.turn.text)] if self.id_fields == 1 else []
            return ids or ([one] if one is not None else None)
        if key.endswith("_id") and "integer" in types:
            return self._an_id(key, required)
        if key == "sql":  # the statement as written, else an earlier call's, else a sample
            found = next(filter(None, map(read.sql_in, self.turn.texts)), None)
            found = found or next(iter(_recalled(key, self.turn.remembered)), None)
            return found or (self._sample() if self.spec.sql_argument == key else None)
        if "minutes" in key:
            return next(filter(None, map(read.minutes, self.turn.texts)), None)
        if "string" in types and key not in _ENV_FIELDS:
            return self._words(key, prop, required)
        return None

    def _words(self, key: str, prop: Mapping[str, Any], required: bool) -> Any:
        """Text: a search's topic (none when it names ids), else quoted or named words."""
        text = self.turn.text
        if key == "query":
            if read.numbers(text):
                return None
            found = self._text(key, None, free=False)
            if found or (_POINTER.search(text) and not SEARCHING.search(text)):
                return found  # quoted words, or the page's object: no topic to guess
            return read.topic(SEARCHING.sub(" ", text), _KNOWN_WORDS)
        options = [prop, *prop.get("anyOf", [])]
        pattern = next((p["pattern"] for p in options if "pattern" in p), None)
        if pattern and (values := re.fullmatch(r"\^\(([\w|]+)\)\$", pattern)):
            named = (read.one_of(values[1].split("|"), t) for t in self.turn.texts)
            return next(filter(None, named), None)
        value = self._text(key, pattern)
        recalled = _recalled(key, self.turn.remembered) if value is None and required else []
        return recalled[0] if len(recalled) == 1 else value

    def _sample(self) -> str | None:
        """«Покажи 5 строк из payments»: a statement that reads that many rows of the table the
        message names, else of the page's dataset when the message points at it."""
        text, item = self.turn.text, _page_item(self.turn)
        table = read.table_in(text)
        if table is None and _POINTER.search(text) and item.get("table_name"):
            schema = f"{item['schema']}." if item.get("schema") else ""
            table = f"{schema}{item['table_name']}"
        # The table is an identifier token, and the statement is classified like any other
        return f"SELECT * FROM {table} LIMIT {read.row_count(text)}" if table else None  # noqa: S608

    def _an_id(self, key: str, required: bool) -> Any:
        for text in self.turn.texts:
            named = read.id_named_for(key, text)
            if named is None and self.id_fields == 1 and (free := read.numbers(text)):
                named = free[0][1]
            if named is not None:
                return named
        text, turn = self.turn.text, self.turn
        if (picked := self._picked(key, text)) is not None:
            return picked
        kind, object_id = turn.page.get("objectType"), turn.page.get("objectId")
        ours = kind and object_id and key in (f"{kind}_id", f"{kind}_ids")
        page = int(str(object_id)) if ours else None
        named = read.names_one(key, text)  # «дашборды» are not this one
        searching = SEARCHING.search(text) and "query" in self.properties  # other objects
        # «в этом окружении» points at the page's environment, not at its object
        pointed = bool(_POINTER.search(_THIS_ENVIRONMENT.sub(" ", text)) or named)
        if page is not None and (required or (pointed and not searching and not self.args.values)):
            return page
        recalled = [v for v in _recalled(key, turn.remembered) if str(v).isdigit()]
        if not required or not recalled:
            return None
        if len(recalled) > 1:  # several objects: a question, never a guess
            self.args.choices = [str(v) for v in recalled[:8]]
            return None
        return int(recalled[0])

    def _picked(self, key: str, text: str) -> int | None:
        """The item of this conversation's last list the message points at: by its place
        («для второго»), by a status («the one that failed»), by a word of its title, or «её»
        for its only item."""
        earlier = self.turn.remembered[:-2]
        recalled = [int(v) for v in _recalled(key, earlier) if str(v).isdigit()]
        nth = read.ordinal(text)
        if recalled and nth is not None and len(recalled) > nth:
            return recalled[nth if nth >= 0 else -1]
        value = read.one_of(list(read.VALUE_FORMS), text)
        words = re.findall(r"\w{3,}", text.lower())
        stems = tuple(w[:5] for w in words if not w.startswith(_KNOWN_WORDS))
        tests: list[Callable[[Any], bool]] = [
            lambda f: bool(value) and f == value,
            lambda f: (
                isinstance(f, str)
                and any(w.startswith(stems) for w in re.findall(r"\w+", f.lower()))
            ),
        ]
        for test in tests:
            one = [v for v in recalled if _has_value(earlier, v, test)]
            if len(one) == 1:
                return one[0]
        return recalled[0] if len(recalled) == 1 and read.ANAPHORA.search(text) else None

    def _environments(self, target_key: str | None) -> None:
        """The source is where the user says «из», else the page; the target another one named."""
        turn, keys, args = self.turn, self.properties, self.args
        named = [env for text in turn.texts for env in read.environments(text)]
        source = next(filter(None, map(read.source_named, turn.texts)), None)
        source = source or turn.page.get("envId")
        if "source_env_id" in keys and source:
            args.values["source_env_id"] = source
        if target_key is None or target_key not in keys:
            return
        moving = "source_env_id" in keys
        others = [env for env in dict.fromkeys(named) if env != source or not moving]
        recalled = _recalled(target_key, turn.remembered)
        target = others[0] if others else (recalled[0] if recalled else None)
        if target is None and not moving:
            target = turn.page.get("envId")
        if target is not None:
            args.values[target_key] = target
            return
        args.choices = [env for env in DEFAULT_ENVIRONMENT_TIERS if env != source]
        if source in named:
            args.note = read.say(
                turn.russian, f"Объект уже в {source}.", f"It is already in {source}."
            )

    def _text(self, key: str, pattern: str | None, *, free: bool = True) -> str | None:
        for text in self.turn.texts:
            if pattern is not None and (token := read.identifier(text, pattern)):
                return token
            if key in ("schema_name", "table_name") and (pair := read.dotted(text)):
                return pair[0] if key == "schema_name" else pair[1]
            if (value := read.named_value(key, text)) is not None:
                return value  # «schema public», «таблица energy_hourly»
            if fresh := [q for q in read.quoted(text) if q not in self.used]:
                self.used.add(fresh[0])
                return fresh[0]
        # Free text (a reason, a note): what follows a colon, when no other text is asked for
        texts = [k for k, p in self.properties.items() if _is_free_text(p)]
        free = free and key in texts and (key in self.required or len(texts) == 1)
        return next(filter(None, map(read.after_colon, self.turn.texts)), None) if free else None


# -- answers -------------------------------------------------------------------------------------


def _clarifying_question(tool: str, args: _Args, russian: bool) -> str:
    key = str(args.missing)
    what = ARGUMENT_LABELS.get(key, key) if russian else key.replace("_", " ")
    label = read.tool_words(tool, russian)
    joined = read.say(russian, " или ", " or ").join(
        filter(None, [", ".join(args.choices[:-1]), *args.choices[-1:]])
    )
    choices = f": {joined}" if args.choices else ""
    question = read.say(
        russian,
        f"Чтобы выполнить «{label}», уточните: {what.lower()}{choices}?",
        f"To do that ({label}), which {what} do you mean{choices}?",
    )
    return f"{args.note} {question}".strip()


def _heading(tool: str, args: Mapping[str, Any], russian: bool) -> str:
    label = read.tool_words(tool, russian)
    shown = f" ({words.arguments_words(args, russian)})" if args else ""
    return f"{label[:1].upper()}{label[1:]}{shown}:"


def _failure(message: ToolMessage, russian: bool) -> str:
    artifact = message.artifact if isinstance(message.artifact, dict) else {}
    tool, event = message.name or "tool", artifact.get("event")
    label = read.tool_words(tool, russian)
    if event == "permission_denied":
        role = ((artifact.get("decision") or {}).get("permission") or {}).get("required_role")
        reason = read.content_text(message).removeprefix("PERMISSION_DENIED: ").split(". ")[0]
        return read.say(
            russian,
            f"Недостаточно прав: «{label}» не запущено — нужна роль {role_words(role, True)}.",
            f"Not allowed: I did not run {tool}; it needs the {role} role ({reason}).",
        )
    if event == "cancelled":  # the stream has already said so in Russian
        return read.say(russian, "", "Understood: the operation was cancelled, nothing ran.")
    # A failed or timed-out call is said once, by its card (what happened, what to do, «Повторить»)
    return ""


def _page_item(turn: _Turn) -> dict[str, Any]:
    """The page's object as its summary shows it (the item with the page's id, else the whole)."""
    data = turn.page_result
    values = list(data.values()) if isinstance(data, dict) else []
    items = [i for v in values for i in (v if isinstance(v, list) else [v]) if isinstance(i, dict)]
    mine = [i for i in items if str(i.get("id")) == str(turn.page.get("objectId"))]
    return mine[0] if mine else (data if isinstance(data, dict) else {})


def _also_from_page(turn: _Turn, args: Mapping[str, Any], data: Any) -> str:
    """What the page's summary adds about the page's object to a result about it (the chart
    errors behind a dashboard's health figures), as a model reading both would."""
    if not turn.summary or str(turn.page.get("objectId")) not in map(str, _values(args)):
        return ""
    shown = json.dumps(data, ensure_ascii=False)
    extra = {k: v for k, v in _page_item(turn).items() if f'"{k}"' not in shown}
    heading = read.say(turn.russian, "Ещё по сводке страницы:", "Also from the page's summary:")
    return words.output_words(heading, extra, turn.russian) if extra else ""


def _values(args: Mapping[str, Any]) -> list[Any]:
    return [v for value in args.values() for v in (value if isinstance(value, list) else [value])]


def _answer_from_results(messages: Sequence[BaseMessage]) -> str:
    """Each of this step's results by its shape, headed by its tool's label and arguments, with
    what the page's summary adds about the page's object (as a model reading both would)."""
    turn, results = _read(messages), list[ToolMessage]()
    for message in reversed(messages):
        if not isinstance(message, ToolMessage):
            break
        results.insert(0, message)
    russian = turn.russian
    calls = {
        str(c["id"]): c["args"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls
    }
    parts = []
    for result in results:
        if result.status == "error":
            parts.append(_failure(result, russian))
            continue
        args = calls.get(str(result.tool_call_id), {})
        data = read.as_data(read.content_text(result))
        if words.lists_tools(data):  # what the assistant can do, and what else elsewhere
            kept_out = {tool: str(entry.get("rule")) for tool, entry in turn.kept_out.items()}
            parts.append(words.tools_by_operation(data, russian))
            parts.append(words.also_available(kept_out, russian))
            continue
        heading = _heading(result.name or "tool", args, russian)
        parts.append(words.output_words(heading, data, russian))
        parts.append(_also_from_page(turn, args, data))
    return "\n\n".join(p for p in parts if p)


def _summary_answer(turn: _Turn) -> str:
    tool = str(turn.summary.get("tool"))
    heading = read.say(
        turn.russian,
        f"По сводке объекта страницы ({read.tool_words(tool, True)}):",
        f"From the page object's summary ({tool}):",
    )
    return words.output_words(heading, turn.page_result, turn.russian)


def _kept_out_answer(tool: str, turn: _Turn) -> str:
    entry = turn.kept_out[tool]
    roles = entry.get("roles") or {}
    named = [env for text in turn.texts for env in read.environments(text)]
    target = next((env for env in named if env in roles), turn.page.get("envId"))
    role = roles.get(target) or str(entry.get("detail", "")).removeprefix("requires ")
    ru, en = _KEPT_OUT.get(str(entry.get("rule")), ("{role}", "{role}"))
    why = read.say(
        turn.russian,
        f"«{read.tool_words(tool, True)}» здесь недоступно: "
        f"{ru.format(role=role_words(role, True))}.",
        f"I cannot do that here ({tool}): {en.format(role=role)}.",
    )
    # What the page's object says may still answer the question (its datasets' ids, say)
    return f"{why}\n\n{_summary_answer(turn)}" if turn.summary else why


def _not_understood(turn: _Turn, offered: list[str]) -> str:
    can = "; ".join(read.tool_words(t, turn.russian) for t in offered)
    return read.say(
        turn.russian,
        f"Не понял, что нужно сделать: «{turn.text}». Здесь я могу: {can}. "
        "Переформулируйте или спросите «что ты умеешь?».",
        f"I did not understand what to do: “{turn.text}”. Here I can: {can}. "
        "Rephrase, or ask “what can you do?”.",
    )


def _files_answer(files: Sequence[Mapping[str, Any]], russian: bool) -> str:
    """What the files' data blocks say, by their shape (their bytes are never read)."""
    parts = []
    for file in files:
        name = file.get("file") or read.say(russian, "файл", "file")
        heading = read.say(russian, f"Файл «{name}»:", f"File “{name}”:")
        facts = {k: v for k, v in file.items() if k != "file"}
        parts.append(words.output_words(heading, facts, russian))
    return "\n\n".join(parts)
