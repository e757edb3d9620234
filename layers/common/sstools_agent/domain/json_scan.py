"""A JSON file checked and described without building its tree (an attached file, up to 10 MB).

`json.loads` of 10 MB of `[{},{},…]` builds 3.5 million dicts (hundreds of MB) and seconds of
CPU; the stdlib has no streaming parser. `scan_json` decides validity with bytes operations
that run in C over the file a window at a time, never one Python step per token:

1. escaped backslashes and quotes become one-byte stand-ins, then a split on `"` tells strings
   from the rest (window by window); string contents are checked for raw control characters and
   bad escapes, and each string becomes one byte;
2. what is left is numbers, literals, whitespace and punctuation: the scalar tokens are checked
   against the grammar by one regex match per window (over their distinct spellings), each token
   becomes one byte, whitespace goes;
3. the skeleton (`[`, `]`, `{`, `}`, `,`, a key, a value) is reduced by sound rewrite rules
   (`[]` → value, `,V,V` → `,V`, `{K V}` → value, …) until it is one value, or it stops
   shrinking (invalid), or takes more passes than `MAX_DEPTH` allows (nested too deep).

Memory is a few copies of the file's bytes; the count of the top level's items is read from the
skeleton; `prefix_value` parses the first characters into a value for the model's summary.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from dataclasses import dataclass
from json import decoder as json_decoder
from typing import Any, Final

MAX_DEPTH: Final = 32
"""Nesting always accepted; the reduction gives up somewhat deeper (`_MAX_PASSES`). Each level
costs a pass over the skeleton: 10 MB of 60-deep chains took 7 s, at 32 about half."""
_MAX_PASSES: Final = MAX_DEPTH + 24
"""A pass lowers the nesting by one, or halves the widest list: 24 halvings cover 10 MB."""
WINDOW: Final = 256 * 1024
"""Bytes a C call handles at once: another turn's thread waits at most one such call."""

_STRING, _VALUE, _KEY = b"\x01", b"V", b"K"
_ESCAPED_BACKSLASH, _ESCAPED_QUOTE = b"\x05", b"\x06"
_CONTROLS: Final = bytes(set(range(0x20)) - set(b"\t\n\r"))
"""Never in JSON, inside a string or out: so the stand-ins above cannot be forged."""
_BAD_IN_STRING: Final = re.compile(rb"[\t\n\r]|\\(?![/bfnrt]|u[0-9a-fA-F]{4})")
_SCALAR_CHARS: Final = b"+-.0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
_SCALARS_AS_SPACE: Final = bytes(c if c in _SCALAR_CHARS else 0x20 for c in range(256))
_SCALARS_AS_VALUE: Final = bytes(ord(_VALUE) if c in _SCALAR_CHARS else c for c in range(256))
_SCALAR: Final = (
    rb"(?:-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?+(?:[eE][+-]?[0-9]++)?+"
    rb"|true|false|null|NaN|-?Infinity)"
)
_SCALARS: Final = re.compile(_SCALAR + rb"(?: " + _SCALAR + rb")*+")
_SKELETON_BYTES: Final = _STRING + _VALUE + b"[]{}:,"
_RULES: Final = (
    (b"[]", b"V"),
    (b"{}", b"V"),
    (b",V,V", b",V"),
    (b",KV,KV", b",KV"),
    (b"[V]", b"V"),
    (b"[V,V]", b"V"),
    (b"{KV}", b"V"),
    (b"{KV,KV}", b"V"),
)
"""Sound both ways: a skeleton is one valid value exactly when its rewrite is (`,V` follows only
an array's item; `,K` only an object's member)."""
_DEPTH_STEP: Final = tuple(
    {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}.get(c, 0) for c in range(256)
)
_MARKS: Final = bytes(1 if c in b",K" else 0 for c in range(256))


class JsonInvalid(ValueError):
    """Not JSON (or nested deeper than `MAX_DEPTH` allows)."""


@dataclass(frozen=True, slots=True)
class JsonShape:
    """What the model is told about the whole file: its top level and how many items it has."""

    top_level: str
    """array, object, str, int, float, bool or NoneType (as `type(value).__name__` says)."""
    item_count: int | None = None
    """An array's items or an object's keys."""


def _windows(data: bytes, cut_before: bytes = b"") -> list[tuple[int, int]]:
    """Window bounds over `data`, a cut moved back to before any of `cut_before` near it."""
    bounds, start = [], 0
    while start < len(data):
        end = min(start + WINDOW, len(data))
        if end < len(data) and cut_before:
            back = data.rfind(cut_before, max(start, end - 6), end)
            end = back if back > start else end
        bounds.append((start, end))
        start = end
    return bounds


def _without_strings(data: bytes) -> bytes:
    """The document with each string one byte; JsonInvalid for a bad string."""
    escaped = data.replace(b"\\\\", _ESCAPED_BACKSLASH).replace(b'\\"', _ESCAPED_QUOTE)
    parts: list[bytes] = []
    inside = False
    # A window never ends inside an escape (`\uXXXX`): its backslash starts the next one
    for start, end in _windows(escaped, b"\\"):
        pieces = escaped[start:end].split(b'"')
        outs, ins = (pieces[1::2], pieces[0::2]) if inside else (pieces[0::2], pieces[1::2])
        # Joined by a quote: an escape never borrows the next string's characters
        if _BAD_IN_STRING.search(b'"'.join(ins)):
            raise JsonInvalid("a string holds a raw control character or a bad escape")
        parts.append(_STRING.join(outs))
        inside ^= bool((len(pieces) - 1) & 1)
        if inside and len(pieces) > 1:  # a string opened here goes on in the next window
            parts.append(_STRING)
    if inside:
        raise JsonInvalid("a string is not closed")
    return b"".join(parts)


def _check_scalars(rest: bytes) -> None:
    """Every number and literal outside strings against the grammar (distinct spellings once)."""
    spaced = rest.translate(_SCALARS_AS_SPACE)
    start, size = 0, len(spaced)
    while start < size:
        end = min(start + WINDOW, size)
        if end < size:  # never split a token: cut at a space (after a token longer than that)
            cut = spaced.rfind(b" ", start, end)
            if cut <= start:
                cut = spaced.find(b" ", end)
            end = size if cut == -1 else cut
        tokens = set(spaced[start:end].split())
        if tokens and not _SCALARS.fullmatch(b" ".join(tokens)):
            raise JsonInvalid("a number or literal is not JSON")
        start = end


def _skeleton(data: bytes) -> bytes:
    rest = _without_strings(data)
    _check_scalars(rest)
    skeleton = rest.translate(_SCALARS_AS_VALUE)
    while b"VV" in skeleton:  # one byte a token (halving runs; digits of one number)
        skeleton = skeleton.replace(b"VV", b"V")
    # Only now whitespace goes: two tokens apart (`1 2`) stay two values, which no rule reduces
    skeleton = skeleton.translate(None, b" \t\n\r")
    if skeleton.translate(None, _SKELETON_BYTES):
        raise JsonInvalid("a character outside strings is not JSON")
    return skeleton.replace(_STRING + b":", _KEY).replace(_STRING, _VALUE)


def _reduced(skeleton: bytes) -> None:
    # A run of openings deeper than the limit is refused before any pass (one C search)
    if b"[" * (MAX_DEPTH + 1) in skeleton.replace(b"{", b"["):
        raise JsonInvalid(f"nested deeper than {MAX_DEPTH} levels")
    for _ in range(_MAX_PASSES):
        if skeleton == _VALUE:
            return
        before = len(skeleton)
        for rule, into in _RULES:
            skeleton = skeleton.replace(rule, into)
        if len(skeleton) == before:
            raise JsonInvalid("not JSON")
    if skeleton != _VALUE:
        raise JsonInvalid(f"nested deeper than {MAX_DEPTH} levels")


def _top_level_items(skeleton: bytes) -> int:
    """Items of the top-level array or keys of the top-level object (the skeleton is valid)."""
    inner = skeleton[1:-1]
    # Containers of one value or none first (cheap, and they never touch the top level's commas)
    while True:
        shorter = inner.replace(b"[]", b"V").replace(b"{}", b"V")
        shorter = shorter.replace(b"[V]", b"V").replace(b"{KV}", b"V")
        if len(shorter) == len(inner):
            break
        inner = shorter
    inner = inner.translate(None, b"V:")
    if not inner:
        return 0
    mark = ord(",") if skeleton[:1] == b"[" else ord("K")
    extra = 1 if mark == ord(",") else 0  # n items, n - 1 commas
    if not inner.translate(None, b",K"):  # nothing nested is left: the common case
        return inner.count(mark) + extra
    count, depth = 0, 0
    for start, end in _windows(inner):
        window = inner[start:end]
        steps = list(map(_DEPTH_STEP.__getitem__, window))
        depths = itertools.accumulate(steps, initial=depth)  # the depth before each byte
        marked = itertools.compress(zip(depths, window, strict=False), window.translate(_MARKS))
        count += operator.countOf(marked, (0, mark))
        depth += sum(steps)
    return count + extra


def scan_json(data: bytes) -> JsonShape:
    """Checks that `data` (UTF-8, no BOM) is one JSON value; its shape. JsonInvalid if not."""
    if data.translate(None, _CONTROLS) != data:
        raise JsonInvalid("a control character")
    skeleton = _skeleton(data)
    _reduced(skeleton)
    first = skeleton[:1]
    if first in (b"[", b"{"):
        kind = "array" if first == b"[" else "object"
        return JsonShape(kind, _top_level_items(skeleton))
    # One scalar: a string at most as long as the file
    return JsonShape(type(json.loads(data)).__name__)


_scanstring: Final = json_decoder.scanstring  # type: ignore[attr-defined]  # C; not in the stubs
_NUMBER: Final = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS: Final = {
    "true": True,
    "false": False,
    "null": None,
    "NaN": float("nan"),
    "Infinity": float("inf"),
    "-Infinity": float("-inf"),
}
_NO_KEY: Final = object()


def _literal(text: str, at: int) -> tuple[Any, int] | None:
    for spelling, value in _LITERALS.items():
        if text.startswith(spelling, at):
            return value, at + len(spelling)
    number = _NUMBER.match(text, at)
    if number is None or number.end() == len(text):  # a number the prefix may have cut
        return None
    digits = number.group()
    return (float(digits) if any(c in digits for c in ".eE") else int(digits)), number.end()


class _Prefix:
    """The value being built: open containers, each with the key waiting for its value."""

    def __init__(self) -> None:
        self.stack: list[list[Any]] = []
        self.root: Any = _NO_KEY

    def add(self, value: Any) -> None:
        if not self.stack:
            self.root = value
            return
        frame = self.stack[-1]
        if isinstance(frame[0], list):
            frame[0].append(value)
        else:
            frame[0][frame[1]] = value
            frame[1] = _NO_KEY

    def string(self, value: str) -> None:
        frame = self.stack[-1] if self.stack else None
        if frame is not None and isinstance(frame[0], dict) and frame[1] is _NO_KEY:
            frame[1] = value  # a key
        else:
            self.add(value)

    def open(self, char: str) -> None:
        container: Any = [] if char == "[" else {}
        self.add(container)
        self.stack.append([container, _NO_KEY])


def prefix_value(text: str) -> tuple[Any, bool]:
    """The value `text` (the start of a valid JSON document) holds, containers left open at its
    end closed and a token it cuts left out; and whether it was whole. No recursion: any depth."""
    built, at, end = _Prefix(), 0, len(text)
    while at < end:
        char = text[at]
        if char in " \t\n\r,:":
            at += 1
        elif char in "[{":
            built.open(char)
            at += 1
        elif char in "]}":
            built.stack.pop()
            at += 1
        elif char == '"':
            try:
                string, at = _scanstring(text, at + 1)
            except ValueError:
                break
            built.string(string)
        else:
            found = _literal(text, at)
            if found is None:
                break
            value, at = found
            built.add(value)
    whole = at >= end and not built.stack
    return (None if built.root is _NO_KEY else built.root), whole
