"""What the stand-in model reads and writes in words: the blocks of its system prompt, the user's
message (language, ids, environments, SQL, durations, quoted text) and the catalog's names (a
tool's output in words is domain/output_words.py). No word list of any tool lives here: the
catalog and the glossary name things.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Final

from langchain_core.messages import BaseMessage, SystemMessage

from sstools_agent.domain.attachment_content import without_attachment_blocks
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENT_TIERS
from sstools_agent.domain.glossary import ARGUMENT_LABELS
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_output_summary import read_tool_output_block

_CYRILLIC: Final = re.compile(r"[а-яё]", re.IGNORECASE)
_QUOTED: Final = re.compile(r"«([^»]+)»|“([^”]+)”|\"([^\"]+)\"|(?<!\w)'([^']+)'(?!\w)")
_FENCE: Final = re.compile(r"```(?:sql)?\s*(.+?)```|`([^`]+)`", re.DOTALL | re.IGNORECASE)
_SQL: Final = re.compile(
    r"\b(?:select|with|update|delete|insert|create|drop|alter|truncate)\b.+", re.I | re.S
)
_NUMBER: Final = re.compile(r"(?:№|#|\bid\s*=?\s*)?(?<![\w.-])(\d{1,12})(?![\w.-])", re.I)
_UNIT_AFTER: Final = re.compile(
    r"\s*(?:-\s*)?(?:мин|мину|час|ч\b|мес|дн|дня|day|строк|запис|row|record|minute|min\b|hour|"
    r"h\b|%|шт|раз|times|top|last)",
    re.IGNORECASE,
)
_MINUTES: Final = re.compile(r"(\d+)\s*(?:-\s*)?(?:мин|minute|min\b)", re.IGNORECASE)
_HOURS: Final = re.compile(r"(\d+(?:[.,]\d+)?)?\s*(?:-\s*)?(?:час|hour|h\b)", re.IGNORECASE)
_HALF_HOUR: Final = re.compile(r"полчаса|half an hour|half-hour", re.IGNORECASE)
_DOTTED: Final = re.compile(r"\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b")
_ENVIRONMENT_FORMS: Final = {
    "prod": r"\bпрод(?:а|е|у|ом|ов\w*)?\b|production|\bprod\b",
    "staging": r"стейдж\w*|\bstag\w*",
    "dev": r"ss-dev|\bdev\b|\bдев\w*",
}
"""Everyday names of the tiers (an LLM knows «прод» is prod); the ids come from the registry."""
_FROM: Final = re.compile(r"(?:\bиз|\bfrom|\bс)\s+(\S+)", re.IGNORECASE)
_INTO: Final = re.compile(r"(?:\bв|\bна|\binto|\bto)\s+(\S+)", re.IGNORECASE)


def is_russian(text: str) -> bool:
    """Whether the user writes in Russian: their own words, quoted names and code aside."""
    return bool(_CYRILLIC.search(_FENCE.sub(" ", _QUOTED.sub(" ", text))))


def say(russian: bool, ru: str, en: str) -> str:
    """The Russian or the English of one sentence."""
    return ru if russian else en


def content_text(message: BaseMessage) -> str:
    """A message's text, its content blocks joined."""
    content = message.content
    if isinstance(content, str):
        return content
    return " ".join(p.get("text", "") if isinstance(p, dict) else str(p) for p in content)


def own_words(message: BaseMessage) -> str:
    """A user's message without its files' data blocks."""
    return without_attachment_blocks(content_text(message))


def prompt_block(messages: Sequence[BaseMessage], opening: str, closing: str) -> dict[str, Any]:
    """The JSON object between two delimiters of the system prompt, or {}."""
    for message in messages:
        if isinstance(message, SystemMessage):
            text = content_text(message)
            start, end = text.find(opening), text.find(closing)
            if 0 <= start < end:
                try:
                    data = json.loads(text[start + len(opening) : end])
                except ValueError:
                    return {}
                return data if isinstance(data, dict) else {}
    return {}


def as_data(text: str) -> Any:
    """A tool output as data: the framed block's result, else JSON, else the text."""
    block = read_tool_output_block(text)
    if block is not None:
        text = block.get("result", text)
        if not isinstance(text, str):
            return text
    try:
        return json.loads(text)
    except ValueError:
        return text


# -- what a message says -------------------------------------------------------------------------


def quoted(text: str) -> list[str]:
    """Names and phrases the user put in quotes."""
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]


def sql_in(text: str) -> str | None:
    """A statement in a code fence or span, in quotes, or written out from its first keyword."""
    for match in _FENCE.finditer(text):
        return (match.group(1) or match.group(2)).strip()
    for phrase in quoted(text):
        if _SQL.match(phrase.strip()):
            return phrase.strip()
    found = _SQL.search(text)
    return found.group(0).strip() if found else None


def numbers(text: str) -> list[tuple[int, int]]:
    """(position, value) of each number that may be an id: not a count, a duration or a time."""
    blank = lambda m: " " * len(m.group(0))  # noqa: E731
    text = _SQL.sub(blank, _FENCE.sub(blank, text))
    found = []
    for match in _NUMBER.finditer(text):
        if not _UNIT_AFTER.match(text, match.end()):
            found.append((match.start(), int(match.group(1))))
    return found


_ORDINALS: Final = (
    r"\bперв\w*|\bfirst\b",
    r"\bвтор\w*|\bsecond\b",
    r"\bтрет\w*|\bthird\b",
    r"\bчетв[её]рт\w*|\bfourth\b",
)
_LAST: Final = re.compile(r"\bпоследн\w*|\blast\b", re.IGNORECASE)


ANAPHORA: Final = re.compile(r"\b(?:его|её|ее|него|неё|нее|ней|нему|ним|it|its)\b", re.I)
"""A pronoun for the object just talked about (not «этот» / "this": the page's)."""


def ordinal(text: str) -> int | None:
    """Which item of a list the message points at: «второй» is 1, «последний» -1."""
    for index, pattern in enumerate(_ORDINALS):
        if re.search(pattern, text, re.IGNORECASE):
            return index
    return -1 if _LAST.search(text) else None


VALUE_FORMS: Final = {
    "failed": r"упал|упавш|завалил|провалил|fail",
    "running": r"выполняют|в процессе|идут|запущен|running|in progress",
    "planned": r"запланир|в плане|planned|scheduled",
    "done": r"выполнен|заверш|done|complete|finished",
}
"""Everyday words for the status values a schema allows (an LLM knows «упали» is failed)."""


def one_of(values: Sequence[str], text: str) -> str | None:
    """The value of a closed set (a schema's `^(a|b)$`) the message names, in either language."""
    for value in values:
        if re.search(VALUE_FORMS.get(value, rf"\b{re.escape(value)}\b"), text, re.IGNORECASE):
            return value
    return None


_TABLE: Final = re.compile(r"(?:\bиз|\bfrom)\s+(?:таблиц\w*\s+|table\s+)?([a-z_][\w.]*)\b")
_ROWS: Final = re.compile(r"(\d+)\s*(?:строк|записей|rows|records|sample)", re.IGNORECASE)


def table_in(text: str) -> str | None:
    """The table after «из» / "from", as written (`payments`, `mart.energy_daily`)."""
    found = _TABLE.search(text)
    name = found.group(1) if found else None
    return name if name and not environments(name) and name.lower() not in _NOT_NAMES else None


def row_count(text: str, default: int = 10) -> int:
    """How many rows the message asks to see («5 строк»), else `default`."""
    found = _ROWS.search(text)
    return int(found.group(1)) if found else default


def minutes(text: str) -> int | None:
    """A duration as the user gave it, in minutes: «на час» is 60, «45 минут» 45."""
    if found := _MINUTES.search(text):
        return int(found.group(1))
    if _HALF_HOUR.search(text):
        return 30
    if found := _HOURS.search(text):
        return round(float((found.group(1) or "1").replace(",", ".")) * 60)
    return None


def identifier(text: str, pattern: str) -> str | None:
    """A token shaped like an identifier (`task-17`, `feature/losses`) that the argument's
    pattern accepts; an environment's name is not one."""
    tokens: list[str] = re.findall(r"[^\s,;!?«»\"'()]+", text)
    for found in tokens:
        token = found.rstrip(".:")
        shaped = re.search(r"[/_.-]|\d", token) and not environments(token)
        if shaped and re.fullmatch(pattern, token):
            return token
    return None


def after_colon(text: str) -> str | None:
    """What follows a colon, a dash or a comma: «на 20 минут: обновление Superset», "for 20
    minutes, we're patching the database"."""
    found = re.search(r"(?::|\s[—–-])\s+(.+?)\s*$", text) or re.search(r",\s+(.+?)\s*$", text)
    return found.group(1).strip(" .") if found else None


def dotted(text: str) -> tuple[str, str] | None:
    """`schema.table` as the user wrote it."""
    found = _DOTTED.search(text)
    return (found.group(1), found.group(2)) if found else None


def environments(text: str) -> list[str]:
    """The environments the message names, in the order it names them."""
    by_tier = {tier: env for env, tier in DEFAULT_ENVIRONMENT_TIERS.items()}
    named: list[tuple[int, str]] = []
    for tier, pattern in _ENVIRONMENT_FORMS.items():
        named += [(m.start(), by_tier[tier]) for m in re.finditer(pattern, text, re.IGNORECASE)]
    return list(dict.fromkeys(env for _, env in sorted(named)))


def source_named(text: str) -> str | None:
    """The environment after «из» / "from", else the other one beside a target named after
    «в» / "into" («pull the staging version into prod»)."""
    for match in _FROM.finditer(text):
        if found := environments(match.group(1)):
            return found[0]
    target = next((e for m in _INTO.finditer(text) for e in environments(m.group(1))), None)
    others = [env for env in environments(text) if env != target]
    return others[0] if target and others else None


def labelled(field: str, text: str) -> str | None:
    """A value the user labelled with the argument's name («причина: …», "reason: …")."""
    names = [field.replace("_", " "), field.split("_", maxsplit=1)[0]]
    label = ARGUMENT_LABELS.get(field, "").lower()
    names += [label, label.split()[0]] if label else []
    for name in filter(None, names):
        pattern = rf"{re.escape(name)}\w*\s*(?::|—|=)\s*(.+?)\s*$"
        if found := re.search(pattern, text, re.IGNORECASE | re.MULTILINE):
            return found.group(1).strip(" .«»\"'")
    return None


def noun_stems(field: str) -> tuple[str, ...]:
    """What the user calls the object of an id argument: its English name and the first letters
    of its Russian label (`dataset_id`: "dataset", «датас»)."""
    english = field.removesuffix("_ids").removesuffix("_id").removesuffix("_name")
    label = ARGUMENT_LABELS.get(field, "").lower().split()
    return (english, label[0][:5]) if label else (english,)


_PLURAL: Final = re.compile(r"(?:s|ы|и|ов|ам|ами|ах)$")


def names_one(field: str, text: str) -> bool:
    """Whether the message names one object of the argument's kind («этот дашборд»), not
    several («какие дашборды»)."""
    words = re.findall(r"\w+", text.lower())
    return any(w.startswith(noun_stems(field)) and not _PLURAL.search(w) for w in words)


def named_value(field: str, text: str) -> str | None:
    """An identifier right after the argument's noun: «schema public», «таблица energy_hourly»."""
    for stem in noun_stems(field):
        pattern = rf"\b{re.escape(stem)}\w*\s+([a-z][a-z0-9_]{{2,}})\b(?!\s*\.)"
        for found in re.finditer(pattern, text, re.IGNORECASE):
            if found.group(1).lower() not in _NOT_NAMES:
                return found.group(1)
    return None


_NOT_NAMES: Final = frozenset({"the", "this", "that", "and", "for", "from", "with", "as"})


def id_named_for(field: str, text: str) -> int | None:
    """The number right after the object's noun («датасет 4», "dashboard #10")."""
    lower = text.lower()
    for stem in noun_stems(field):
        for match in re.finditer(rf"{re.escape(stem)}\w*\s+(?:№|#|id\s*)?(\d+)\b", lower):
            return int(match.group(1))
    return None


_ABOUT: Final = re.compile(
    r"(?:\bпро|\bпо|\babout|\bon|\bwith|related to|связан\w* с|\bназвани\w*)\s+([\w-]{3,})",
    re.IGNORECASE,
)
_ACRONYM: Final = re.compile(r"\b[A-ZА-Я]{2,6}\b")


def topic(text: str, known: Sequence[str]) -> str | None:
    """What a search is about: an acronym («ETL»), else the word after «про» / "about", else
    the last word of substance that is no known word (a tool's, an environment's); as a stem
    («про энергию» → `энерг`)."""
    text = _QUOTED.sub(" ", text).replace("ё", "е")
    for acronym in _ACRONYM.findall(text):
        if not any(acronym.lower().startswith(k) for k in known):
            return str(acronym)
    about = [m.group(1).lower() for m in _ABOUT.finditer(text)]
    words: list[str] = re.findall(r"[\w-]{4,}", text.lower())
    for word in [w.split("-")[0] for w in (*about, *reversed(words))]:
        if word.isdigit() or environments(word) or any(word.startswith(k) for k in known):
            continue
        return word[:5] if _CYRILLIC.match(word) and len(word) > 6 else word
    return None


# -- the catalog in words (a tool output in words: domain/output_words.py) ----------------------


def tool_words(tool: str, russian: bool) -> str:
    """What a tool does, in the user's language, from the catalog."""
    spec = CATALOG.get(tool)
    if spec is None:
        return tool
    return spec.label_ru if russian and spec.label_ru else spec.description.rstrip(".")


def argument_words(field: str, russian: bool) -> str:
    """An argument as a person calls it: the glossary's label, or its name in words."""
    return ARGUMENT_LABELS.get(field, field) if russian else field.replace("_", " ")
