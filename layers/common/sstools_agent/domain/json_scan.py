"""A JSON file checked and described without building its tree (an attached file, up to 10 MB).

`json.loads` of 10 MB of `[{},{},…]` builds 3.5 million dicts (hundreds of MB) and seconds of
CPU; the stdlib has no streaming parser. ijson's C backend (yajl) reads the bytes a buffer at a
time and hands over one event per token, so memory stays a buffer whatever the file's shape:
`scan_json` decides validity, the nesting and the top level's item count from the events, and
`prefix_value` builds the value the first characters of a file hold, for the model's summary.

The C backend is asked for by name: the pure-Python one would take minutes on a file at the limit.
Strict JSON (RFC 8259): `NaN` and `Infinity`, which `json` reads, are no JSON here.
"""

from __future__ import annotations

import io
import json
import math
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import ijson  # type: ignore[import-untyped]

from sstools_agent.domain.attachments import SCAN_WINDOW_BYTES

_YAJL: Final = ijson.get_backend("yajl2_c")
MAX_DEPTH: Final = 128
"""Nesting a file may have: real exports are a few levels deep, and the model's summary walks
the value it keeps by recursion."""
MAX_DIGITS: Final = sys.get_int_max_str_digits()
"""Digits in a row a file may hold (Python's limit on converting an integer's text)."""
_LONG_DIGITS: Final = re.compile(rb"[0-9]{%d}" % (MAX_DIGITS + 1)) if MAX_DIGITS else None
_NOT_JSON_NUMBERS: Final = re.compile(rb"(?<![\w\"])-?(?:NaN|Infinity)(?![\w\"])")
_NUMBER_CHARS: Final = "0123456789.eE+-"
_OPENS: Final = frozenset({"start_map", "start_array"})
_CLOSES: Final = frozenset({"end_map", "end_array"})


class JsonInvalid(ValueError):
    """Not JSON (or nested deeper than `MAX_DEPTH`); `str()` says why in the user's words."""


@dataclass(frozen=True, slots=True)
class JsonShape:
    """What the model is told about the whole file: its top level and how many items it has."""

    top_level: str
    """array, object, str, int, float, bool or NoneType (as `type(value).__name__` says)."""
    item_count: int | None = None
    """An array's items or an object's keys."""


_SCALAR_TYPES: Final = {
    "string": "str",
    "number": "float",  # a Decimal (what has a fraction or an exponent)
    "integer": "int",
    "boolean": "bool",
    "null": "NoneType",
}


def _events(data: bytes) -> Iterator[tuple[str, Any]]:
    # Numbers as int and Decimal: any size is JSON (floats overflow on `1e400`)
    events: Iterator[tuple[str, Any]] = _YAJL.basic_parse(
        io.BytesIO(data), buf_size=SCAN_WINDOW_BYTES
    )
    return events


def _refuse_what_the_parser_must_not_see(data: bytes) -> None:
    """yajl takes a vertical tab and a form feed for whitespace, which JSON has not; and an
    integer longer than Python converts (`sys.get_int_max_str_digits`) fails inside the C
    parser, which is then unusable (the next parse crashes the process). A run of that many
    digits is refused wherever it is, a string's too: no identifier or hash is one."""
    if b"\x0b" in data or b"\x0c" in data:
        raise JsonInvalid("в нём вертикальная табуляция или перевод страницы, а в JSON их нет")
    if _LONG_DIGITS is not None and _LONG_DIGITS.search(data):
        raise JsonInvalid(f"в нём больше {MAX_DIGITS} цифр подряд")


def _why_not_json(data: bytes) -> str:
    """The parser's refusal as the user reads it (its own text is English, with a caret)."""
    if _NOT_JSON_NUMBERS.search(data):
        return "в нём NaN или Infinity, а это не числа JSON"
    if not data.strip():
        return "файл пуст"
    return "он не разбирается как JSON (проверьте кавычки, запятые и скобки)"


def scan_json(data: bytes) -> JsonShape:
    """Checks that `data` (UTF-8, no BOM) is one JSON value; its shape. JsonInvalid if not."""
    _refuse_what_the_parser_must_not_see(data)
    depth, items, top_level = 0, 0, ""
    try:
        for event, value in _events(data):
            if depth == 1 and event not in _CLOSES and (top_level == "array" or event == "map_key"):
                items += 1
            if event in _OPENS:
                depth += 1
                if depth > MAX_DEPTH:
                    raise JsonInvalid(f"JSON вложен глубже {MAX_DEPTH} уровней")
                top_level = top_level or ("array" if event == "start_array" else "object")
            elif event in _CLOSES:
                depth -= 1
            elif not top_level:
                kind = "integer" if event == "number" and isinstance(value, int) else event
                top_level = _SCALAR_TYPES[kind]
    except ijson.JSONError:
        raise JsonInvalid(_why_not_json(data)) from None
    if top_level in {"array", "object"}:
        return JsonShape(top_level, items)
    return JsonShape(top_level)


def _plain(value: Any) -> Any:
    """A number as `json` writes it: a float, or its text when no float holds it (`1e400`)."""
    if not isinstance(value, Decimal):
        return value
    number = float(value)
    return number if math.isfinite(number) else str(value)


def scalar_value(data: bytes) -> Any:
    """The one scalar a checked document is, numbers as `prefix_value` gives them."""
    return _plain(json.loads(data, parse_float=Decimal))


def prefix_value(text: str) -> tuple[Any, bool]:
    """The value `text` (the start of a valid JSON document) holds, containers left open at its
    end closed and a token it cuts left out; and whether it was whole."""
    builder = ijson.ObjectBuilder()
    # A number the cut may have shortened (`12` of `1234`) is left out: the parser would keep it
    shown = text.rstrip(_NUMBER_CHARS)
    try:
        _refuse_what_the_parser_must_not_see(shown.encode())
        for event, value in _events(shown.encode()):
            builder.event(event, _plain(value))
    except (ijson.JSONError, JsonInvalid):  # the cut: what was built so far is its value
        return getattr(builder, "value", None), False
    return getattr(builder, "value", None), True
