"""What the offline model says about the files a message attaches (docs/attachments.md).

It reads the files' data blocks (`domain.attachment_content`), never their bytes: a CSV's row
count and columns, a JSON document's shape and keys, a SQL file's classification (never run), and
for anything else what the file is. Questions about rows or columns get those facts; any other
message with files gets an acknowledgement of each.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

from sstools_agent.agent.offline_answers import say
from sstools_agent.domain.attachments import BINARY_TYPES

ROWS_QUESTION: Final = re.compile(
    r"сколько\s+(?:\w+\s+)?строк|числ\w*\s+строк|количеств\w*\s+строк|how\s+many\s+(?:\w+\s+)?rows"
    r"|row\s+count|number\s+of\s+rows|сколько\s+(?:записей|элементов)|how\s+many\s+(?:records|items)",
    re.IGNORECASE,
)
COLUMNS_QUESTION: Final = re.compile(
    r"колонк|столб|column|ключ|\bkeys?\b|\bполя\b|\bfields?\b|заголов|header", re.IGNORECASE
)
FILE_QUESTION: Final = re.compile(
    r"файл|\bfile|вложени|attach|что\s+(?:в|там|внутри)|what'?s\s+in|summar|опиши|расскажи",
    re.IGNORECASE,
)
MAX_NAMED: Final = 12


def grouped(count: int) -> str:
    """A count as Russian text groups it: «50 000»."""
    return f"{count:,}".replace(",", " ")


def _plural(count: int, one: str, few: str, many: str) -> str:
    tail = count % 100
    if 11 <= tail <= 14:
        return many
    return {1: one, 2: few, 3: few, 4: few}.get(count % 10, many)


def _names(values: Sequence[Any]) -> str:
    shown = ", ".join(str(value) for value in values[:MAX_NAMED])
    return shown + (", …" if len(values) > MAX_NAMED else "")


def _csv_answer(name: str, csv: Mapping[str, Any], ru: bool, *, rows: bool, columns: bool) -> str:
    count = int(csv.get("row_count") or 0)
    header = list(csv.get("columns") or [])
    width = int(csv.get("column_count") or len(header))
    parts = []
    if rows or not columns:
        parts.append(
            say(
                ru,
                f"В файле «{name}» {grouped(count)} "
                f"{_plural(count, 'строка', 'строки', 'строк')} данных (без строки заголовка)",
                f"“{name}” has {grouped(count)} data rows (the header row not counted)",
            )
        )
    if columns or not rows:
        parts.append(
            say(
                ru,
                f"{width} {_plural(width, 'столбец', 'столбца', 'столбцов')}: {_names(header)}",
                f"{width} columns: {_names(header)}",
            )
        )
    if not (rows or columns):
        return (
            say(ru, f"Получил CSV «{name}»: ", f"Got the CSV “{name}”: ") + "; ".join(parts) + "."
        )
    return "; ".join(parts) + "."


def _json_answer(name: str, file: Mapping[str, Any], ru: bool) -> str:
    if file.get("top_level") == "array":
        count = int(file.get("item_count") or 0)
        return say(
            ru,
            f"Файл «{name}» — JSON-массив из {grouped(count)} "
            f"{_plural(count, 'элемента', 'элементов', 'элементов')}.",
            f"“{name}” is a JSON array of {grouped(count)} items.",
        )
    if file.get("top_level") == "object":
        keys = list(file.get("keys") or [])
        count = int(file.get("key_count") or len(keys))
        return say(
            ru,
            f"Файл «{name}» — JSON-объект, {count} {_plural(count, 'ключ', 'ключа', 'ключей')}: "
            f"{_names(keys)}.",
            f"“{name}” is a JSON object with {count} keys: {_names(keys)}.",
        )
    return say(ru, f"Файл «{name}» — JSON-значение.", f"“{name}” is a JSON value.")


def _sql_answer(name: str, file: Mapping[str, Any], ru: bool) -> str:
    verdict = file.get("classification") or {}
    statements = list(verdict.get("statements") or [])
    reads = verdict.get("operation") == "read" and not verdict.get("destructive")
    kind = say(ru, "только читает", "only reads") if reads else say(ru, "изменяет данные", "writes")
    return say(
        ru,
        f"Файл «{name}» — SQL, {len(statements)} "
        f"{_plural(len(statements), 'запрос', 'запроса', 'запросов')} ({_names(statements)}); "
        f"он {kind}. Я его не выполнял: попросите, если нужно, и он пройдёт обычные проверки.",
        f"“{name}” is SQL, {len(statements)} statements ({_names(statements)}); it {kind}. "
        "I did not run it: ask if you want it run, through the usual checks.",
    )


def _other_answer(name: str, file: Mapping[str, Any], ru: bool) -> str:
    kind = str(file.get("content_type") or "")
    if kind not in BINARY_TYPES and "lines" not in file:  # its summary did not fit
        return say(
            ru,
            f"Получил файл «{name}» ({kind}), но он слишком велик, чтобы прочитать его здесь.",
            f"Got “{name}” ({kind}), but it is too large to read here.",
        )
    if "lines" in file:
        lines = int(file.get("lines") or 0)
        return say(
            ru,
            f"Получил файл «{name}» ({kind}, {grouped(lines)} "
            f"{_plural(lines, 'строка', 'строки', 'строк')}).",
            f"Got “{name}” ({kind}, {grouped(lines)} lines).",
        )
    return say(
        ru,
        f"Получил файл «{name}» ({kind}, {file.get('size', '')}); офлайн-модель не видит "
        "содержимое изображений и PDF, только имя, тип и размер.",
        f"Got “{name}” ({kind}, {file.get('size', '')}); the offline model cannot see images "
        "or PDFs, only their name, type and size.",
    )


def file_answer(question: str, files: Sequence[Mapping[str, Any]], ru: bool) -> str | None:
    """The answer about a message's files, when the message asks about them (or says nothing
    else); None when it asks for something else (a tool answers that)."""
    rows, columns = bool(ROWS_QUESTION.search(question)), bool(COLUMNS_QUESTION.search(question))
    if not files or not (rows or columns or FILE_QUESTION.search(question) or not question):
        return None
    parts = []
    for file in files:
        name = str(file.get("file", ""))
        if isinstance(file.get("csv"), Mapping):
            parts.append(_csv_answer(name, file["csv"], ru, rows=rows, columns=columns))
        elif "json" in file:
            parts.append(_json_answer(name, file, ru))
        elif "sql" in file:
            parts.append(_sql_answer(name, file, ru))
        else:
            parts.append(_other_answer(name, file, ru))
    return " ".join(parts)
