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

_I: Final = re.IGNORECASE
_CYRILLIC: Final = re.compile(r"[а-яё]", _I)
_QUOTED: Final = re.compile(r"«([^»]+)»|“([^”]+)”|\"([^\"]+)\"|(?<!\w)'([^']+)'(?!\w)")
_FENCE: Final = re.compile(r"```(?:sql)?\s*(.+?)```|`([^`]+)`", re.DOTALL | _I)
_SQL: Final = re.compile(
    r"\b(?:select|with|update|delete|insert|create|drop|alter|truncate)\b.+", _I | re.S
)
_NUMBER: Final = re.compile(r"(?:№|#|\bid\s*=?\s*)?(?<![\w.-])(\d{1,12})(?![\w.-])", _I)
_UNIT_AFTER: Final = re.compile(
    r"\s*(?:-\s*)?(?:мин|мину|час|ч\b|мес|дн|дня|day|строк|запис|row|record|minute|min\b|hour|"
    r"h\b|%|шт|раз|times|top|last)",
    _I,
)
"""A number followed by a unit is a count, a duration or a time, not an id."""
_MINUTES: Final = re.compile(r"(\d+)\s*(?:-\s*)?(?:мин|minute|min\b)", _I)
_HOURS: Final = re.compile(
    r"(?:(\d+(?:[.,]\d+)?)\s*(?:-\s*)?|\b(?:на|for|an?)\s+)(?:час|hour|h\b)\w*"
    r"(\s+(?:с половиной|and a half))?",
    _I,
)
"""Hours: a number, or one hour («на час», "for an hour"); «в течение часов» is no figure."""
_NUMERALS: Final = {
    **{"один": "1", "одна": "1", "полтора": "1.5", "полторы": "1.5", "пару": "2", "два": "2"},
    **{"две": "2", "три": "3", "четыре": "4", "пять": "5", "шесть": "6", "десять": "10"},
    **{"пятнадцать": "15", "двадцать": "20", "тридцать": "30", "сорок": "40", "one": "1"},
    **{"a couple of": "2", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6"},
    **{"ten": "10", "fifteen": "15", "twenty": "20", "thirty": "30", "forty": "40"},
}
"""Numbers in words, so that «на два часа» is 120 minutes and not one hour."""
_ENVIRONMENT_FORMS: Final = {
    "prod": r"\bпрод(?:а|е|у|ом|ов\w*)?\b|production|\bprod\b",
    "staging": r"стейдж\w*|\bstag\w*",
    "dev": r"ss-dev|\bdev\b|\bдев\w*",
}
"""Everyday names of the tiers (an LLM knows «прод» is prod); the ids come from the registry."""
_ORDINALS: Final = (
    *(r"\bперв\w*|\bfirst\b", r"\bвтор\w*|\bsecond\b"),
    *(r"\bтрет\w*|\bthird\b", r"\bчетв[её]рт\w*|\bfourth\b"),
)
ANAPHORA: Final = re.compile(r"\b(?:его|её|ее|него|неё|нее|ней|нему|ним|it|its)\b", _I)
"""A pronoun for the object just talked about (not «этот» / "this": the page's)."""
VALUE_FORMS: Final = {
    "failed": r"упал|упавш|завалил|провалил|fail",
    "running": r"выполняют|в процессе|идут|запущен|running|in progress",
    "planned": r"запланир|в плане|planned|scheduled",
    "done": r"выполнен|заверш|done|complete|finished",
}
"""Everyday words for the status values a schema allows (an LLM knows «упали» is failed)."""
_TABLE: Final = re.compile(r"(?:\bиз|\bfrom)\s+(?:таблиц\w*\s+|table\s+)?([a-z_][\w.]*)\b")
_ROWS: Final = re.compile(r"(\d+)\s*(?:строк|записей|rows|records|sample)", _I)
_NOT_NAMES: Final = frozenset({"the", "this", "that", "and", "for", "from", "with", "as"})
_PLURAL: Final = re.compile(r"(?:s|ы|и|ов|ам|ами|ах)$")
_ABOUT: Final = re.compile(
    r"(?:\bпро|\bпо|\babout|\bon|\bwith|related to|связан\w* с|\bназвани\w*)\s+([\w-]{3,})", _I
)
MAX_ANSWER_CHARS: Final = 3000


def is_russian(text: str) -> bool:
    """Whether the user writes in Russian: their own words, quoted names and code aside."""
    return bool(_CYRILLIC.search(_FENCE.sub(" ", _QUOTED.sub(" ", text))))


def say(russian: bool, ru: str, en: str) -> str:
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
    for text in (content_text(m) for m in messages if isinstance(m, SystemMessage)):
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
    if block is not None and not isinstance(text := block.get("result", text), str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text


# -- what a message says -------------------------------------------------------------------------


def quoted(text: str) -> list[str]:
    return [next(g for g in m.groups() if g) for m in _QUOTED.finditer(text)]


def sql_in(text: str) -> str | None:
    """A statement in a code fence or span, in quotes, or written out from its first keyword."""
    for match in _FENCE.finditer(text):
        return (match.group(1) or match.group(2)).strip()
    found = [q.strip() for q in quoted(text) if _SQL.match(q.strip())]
    written = _SQL.search(text)
    return found[0] if found else (written.group(0).strip() if written else None)


def numbers(text: str) -> list[tuple[int, int]]:
    """(position, value) of each number that may be an id: not a count, a duration or a time."""
    blank = lambda m: " " * len(m.group(0))  # noqa: E731
    text = _SQL.sub(blank, _FENCE.sub(blank, text))
    found = _NUMBER.finditer(text)
    return [(m.start(), int(m.group(1))) for m in found if not _UNIT_AFTER.match(text, m.end())]


def ordinal(text: str) -> int | None:
    """Which item of a list the message points at: «второй» is 1, «последний» -1."""
    found = [i for i, p in enumerate(_ORDINALS) if re.search(p, text, _I)]
    return found[0] if found else (-1 if re.search(r"\bпоследн\w*|\blast\b", text, _I) else None)


def one_of(values: Sequence[str], text: str) -> str | None:
    """The value of a closed set (a schema's `^(a|b)$`) the message names, in either language."""
    forms = {v: VALUE_FORMS.get(v, rf"\b{re.escape(v)}\b") for v in values}
    return next((v for v, form in forms.items() if re.search(form, text, _I)), None)


def table_in(text: str) -> str | None:
    """The table after «из» / "from", as written (`payments`, `mart.energy_daily`)."""
    name = found.group(1) if (found := _TABLE.search(text)) else None
    return name if name and not environments(name) and name.lower() not in _NOT_NAMES else None


def row_count(text: str, default: int = 10) -> int:
    return int(found.group(1)) if (found := _ROWS.search(text)) else default


def minutes(text: str) -> int | None:
    """A duration as the user gave it, in minutes: «на час» is 60, «на два часа» 120, «45
    минут» 45; None for one it cannot read (a question, not a guess)."""
    numeral = re.compile(rf"\b({'|'.join(_NUMERALS)})\b", _I)
    text = numeral.sub(lambda m: _NUMERALS[m.group(1).lower()], text)
    if found := _MINUTES.search(text):
        return int(found.group(1))
    if re.search(r"полчаса|half an hour|half-hour", text, _I):
        return 30
    if not (found := _HOURS.search(text)):
        return None
    hours = float((found.group(1) or "1").replace(",", ".")) + (0.5 if found.group(2) else 0)
    return round(hours * 60)


def identifier(text: str, pattern: str) -> str | None:
    """A token shaped like an identifier (`task-17`, `feature/losses`) the pattern accepts."""
    tokens: list[str] = re.findall(r"[^\s,;!?«»\"'()]+", text)
    for token in (t.rstrip(".:") for t in tokens):
        shaped = re.search(r"[/_.-]|\d", token) and not environments(token)
        if shaped and re.fullmatch(pattern, token):
            return token
    return None


def after_colon(text: str) -> str | None:
    """What follows a colon, a dash or a comma: «на 20 минут: обновление Superset»."""
    found = re.search(r"(?::|\s[—–-])\s+(.+?)\s*$", text) or re.search(r",\s+(.+?)\s*$", text)
    return found.group(1).strip(" .") if found else None


def dotted(text: str) -> tuple[str, str] | None:
    found = re.search(r"\b([a-z_][a-z0-9_]*)\.([a-z_][a-z0-9_]*)\b", text)
    return (found.group(1), found.group(2)) if found else None


def environments(text: str) -> list[str]:
    """The environments the message names, in the order it names them."""
    by_tier = {tier: env for env, tier in DEFAULT_ENVIRONMENT_TIERS.items()}
    named = [
        (m.start(), by_tier[tier])
        for tier, pattern in _ENVIRONMENT_FORMS.items()
        for m in re.finditer(pattern, text, _I)
    ]
    return list(dict.fromkeys(env for _, env in sorted(named)))


def source_named(text: str) -> str | None:
    """The environment after «из» / "from", else the other one beside a target named after
    «в» / "into" («pull the staging version into prod»)."""
    for match in re.finditer(r"(?:\bиз|\bfrom|\bс)\s+(\S+)", text, _I):
        if found := environments(match.group(1)):
            return found[0]
    into = re.finditer(r"(?:\bв|\bна|\binto|\bto)\s+(\S+)", text, _I)
    target = next((e for m in into for e in environments(m.group(1))), None)
    others = [env for env in environments(text) if env != target]
    return others[0] if target and others else None


def noun_stems(field: str) -> tuple[str, ...]:
    """What the user calls an id argument's object: "dataset", «датас» for `dataset_id`."""
    english = field.removesuffix("_ids").removesuffix("_id").removesuffix("_name")
    label = ARGUMENT_LABELS.get(field, "").lower().split()
    return (english, label[0][:5]) if label else (english,)


def names_one(field: str, text: str) -> bool:
    """Whether the message names one object of the kind («этот дашборд»), not several."""
    words = re.findall(r"\w+", text.lower())
    return any(w.startswith(noun_stems(field)) and not _PLURAL.search(w) for w in words)


def named_value(field: str, text: str) -> str | None:
    """An identifier right after the argument's noun: «schema public», «таблица energy_hourly»."""
    for stem in noun_stems(field):
        pattern = rf"\b{re.escape(stem)}\w*\s+([a-z][a-z0-9_]{{2,}})\b(?!\s*\.)"
        for found in re.finditer(pattern, text, _I):
            if found.group(1).lower() not in _NOT_NAMES:
                return found.group(1)
    return None


def id_named_for(field: str, text: str) -> int | None:
    """The number right after the object's noun («датасет 4», "dashboard #10")."""
    for stem in noun_stems(field):
        if found := re.search(rf"{re.escape(stem)}\w*\s+(?:№|#|id\s*)?(\d+)\b", text.lower()):
            return int(found.group(1))
    return None


def topic(text: str, known: Sequence[str]) -> str | None:
    """What a search is about: an acronym («ETL»), else the word after «про» / "about", else
    the last word of substance that is no known word, as a stem («про энергию» → `энерг`)."""
    text = _QUOTED.sub(" ", text).replace("ё", "е")
    for acronym in re.findall(r"\b[A-ZА-Я]{2,6}\b", text):
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
