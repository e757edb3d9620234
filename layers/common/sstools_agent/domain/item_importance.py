"""Which items of a list matter most, read from the items' own fields: used when a list is cut.

The order is declared once, generically, by what the fields say rather than by which tool made
the list: first a status-like field (failing before warning before anything else before ok),
then the newest by a timestamp field, then the largest by a size or count field. Each field is
found by its name (`status`, `git_status`, `validation.status`; `created_at`, `last_change.at`;
`row_count`, `size_bytes`), at the top of an item or one level down. Items the fields do not
tell apart keep the order they came in, so a list with none of these fields (SQL rows) is kept
as it was.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import IntEnum
from functools import lru_cache
from typing import Any, Final

FieldPath = tuple[str, ...]
"""A field of an item: a top-level key, or a key one level down (`("validation", "status")`)."""


class Severity(IntEnum):
    """How much an item's status asks for attention; lower comes first."""

    FAILING = 0
    WARNING = 1
    OTHER = 2
    """A status word not declared below (running, planned): neither a problem nor settled."""
    OK = 3


SEVERITY_WORDS: Final[Mapping[str, Severity]] = {
    **dict.fromkeys(
        (
            "failing",
            "failed",
            "failure",
            "fail",
            "error",
            "errored",
            "errors",
            "broken",
            "critical",
            "fatal",
            "down",
            "unhealthy",
            "timed_out",
            "timeout",
            "crashed",
            "aborted",
        ),
        Severity.FAILING,
    ),
    **dict.fromkeys(
        (
            "warning",
            "warnings",
            "warn",
            "degraded",
            "unstable",
            "partial",
            "at_risk",
            "changes_requested",
        ),
        Severity.WARNING,
    ),
    **dict.fromkeys(
        (
            "ok",
            "passed",
            "pass",
            "success",
            "succeeded",
            "successful",
            "healthy",
            "done",
            "completed",
            "finished",
            "clean",
            "approved",
            "green",
            "up",
        ),
        Severity.OK,
    ),
}
"""Status words by severity (compared in lower case, `-` and spaces read as `_`)."""

_STATUS_FIELD: Final = re.compile(
    r"^(.*_)?(status|state|health|result|outcome|severity|level|conclusion)$", re.IGNORECASE
)
_TIME_FIELD: Final = re.compile(
    r"^(at|when|date|time|timestamp|created|updated|.*_(at|on|date|time|timestamp))$",
    re.IGNORECASE,
)
_SIZE_FIELD: Final = re.compile(
    r"^(count|size|length|bytes|rows|total|.*_(count|size|bytes|length|rows|total)"
    r"|(count|num|n)_.*)$",
    re.IGNORECASE,
)
_ISO_DATE: Final = re.compile(r"^\d{4}-\d{2}-\d{2}")
MISSING: Final = "(missing)"
"""The status counted for an item that has no value in the status field."""
OTHER_STATUSES: Final = "(other statuses)"
"""The statuses counted together past MAX_STATUSES kinds."""
MAX_STATUSES: Final = 8
STATUS_LABEL_CHARS: Final = 40


def severity_of(value: Any) -> Severity:
    """A status value's severity; a word not declared (or not a word) is OTHER."""
    if not isinstance(value, str):
        return Severity.OTHER
    word = value.strip().lower().replace("-", "_").replace(" ", "_")
    return SEVERITY_WORDS.get(word, Severity.OTHER)


def field_value(item: Any, path: FieldPath) -> Any:
    """The value at `path` in an item (parsed JSON: dicts), or None."""
    value = item
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    return value


def moment(value: Any) -> float | None:
    """A timestamp's position in time (ISO 8601 text, or epoch seconds), or None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return float(value)
    if not isinstance(value, str) or not _ISO_DATE.match(value):
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).timestamp()


def _size(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


class _Role(IntEnum):
    NONE = 0
    STATUS = 1
    TIME = 2
    SIZE = 3


@lru_cache(maxsize=1024)
def _role(name: str) -> _Role:
    """What a field's name says it may hold (the names repeat in every item: read once; the
    cache is bounded, since an attached file may hold any number of distinct keys)."""
    if _STATUS_FIELD.match(name):
        return _Role.STATUS
    if _TIME_FIELD.match(name):
        return _Role.TIME
    if _SIZE_FIELD.match(name):
        return _Role.SIZE
    return _Role.NONE


def _paths(item: dict[str, Any]) -> list[FieldPath]:
    """The item's top-level keys and the keys one level down, in the order they come."""
    paths: list[FieldPath] = []
    for key, value in item.items():
        paths.append((str(key),))
        if isinstance(value, dict):
            paths.extend((str(key), str(inner)) for inner in value)
    return paths


def _best(scores: Counter[FieldPath], seen: Mapping[FieldPath, int]) -> FieldPath | None:
    """The field that tells the most items apart; ties go to a shallower, then earlier one."""
    if not scores:
        return None
    return min(scores, key=lambda path: (-scores[path], len(path), seen[path]))


def _label(value: Any) -> str:
    """A status as counted: its text, at most STATUS_LABEL_CHARS long (MISSING for none)."""
    if value is None:
        return MISSING
    text = str(value)
    return text if len(text) <= STATUS_LABEL_CHARS else text[: STATUS_LABEL_CHARS - 1] + "…"


def _by_severity(counts: Counter[str]) -> dict[str, int]:
    """The counts, the most severe status first, then the most frequent; past MAX_STATUSES
    kinds the rest are added up under OTHER_STATUSES, so the counts still sum to the whole."""
    ordered = sorted(counts.items(), key=lambda pair: (severity_of(pair[0]), -pair[1]))
    if len(ordered) <= MAX_STATUSES:
        return dict(ordered)
    kept = dict(ordered[: MAX_STATUSES - 1])
    return kept | {OTHER_STATUSES: sum(count for _, count in ordered[MAX_STATUSES - 1 :])}


def _key(status: Any, when: float | None, size: float | None) -> tuple[int, float, float]:
    return (
        int(severity_of(status)),
        -when if when is not None else float("inf"),
        -size if size is not None else float("inf"),
    )


@dataclass(frozen=True, slots=True)
class RankedItems:
    """A list's items ranked once, with what each says, so any tail of the ranking (what a cut
    leaves out) is counted without reading the items again."""

    fields: dict[str, str]
    """The fields that ranked them (`ImportanceOrder.fields`)."""
    indices: list[int]
    """The items' indices, the most important first (ties keep their order)."""
    statuses: list[str] | None
    moments: list[float | None]
    times: list[Any]
    sizes: list[float | None]

    def status_counts(self, start: int = 0) -> dict[str, int] | None:
        """How many items from `start` on have each status, the most severe first (MISSING
        for none); None when there is no status field."""
        if self.statuses is None:
            return None
        return _by_severity(Counter(self.statuses[start:]))

    def newest(self, start: int = 0) -> Any:
        """The newest timestamp from `start` on, as written, or None."""
        timed = [(m, n) for n, m in enumerate(self.moments[start:], start) if m is not None]
        return self.times[max(timed)[1]] if timed else None

    def largest(self, start: int = 0) -> float | int | None:
        """The largest size from `start` on, or None."""
        sizes = [size for size in self.sizes[start:] if size is not None]
        if not sizes:
            return None
        largest = max(sizes)
        return int(largest) if largest.is_integer() else largest


@dataclass(frozen=True, slots=True)
class ImportanceOrder:
    """The fields that rank one list's items: a status, a timestamp, a size (each optional)."""

    status: FieldPath | None = None
    time: FieldPath | None = None
    size: FieldPath | None = None

    @classmethod
    def of(cls, items: Sequence[Any]) -> ImportanceOrder | None:
        """The order these items declare by their fields, or None when no field ranks them.

        A status field must hold a declared status word in at least one item; a timestamp or
        size field is taken where its values are timestamps or numbers; of several, the one
        most items have."""
        found: dict[_Role, Counter[FieldPath]] = {role: Counter() for role in _Role}
        seen: dict[FieldPath, int] = {}  # each field's first place, for ties
        for item in items:
            if not isinstance(item, dict):
                continue
            for path in _paths(item):
                seen.setdefault(path, len(seen))
                role = _role(path[-1])
                if role is _Role.NONE:
                    continue
                value = field_value(item, path)
                if (
                    (role is _Role.STATUS and severity_of(value) is not Severity.OTHER)
                    or (role is _Role.TIME and moment(value) is not None)
                    or (role is _Role.SIZE and _size(value) is not None)
                ):
                    found[role][path] += 1
        ranking = cls(
            *(_best(found[role], seen) for role in (_Role.STATUS, _Role.TIME, _Role.SIZE))
        )
        return ranking if ranking != cls() else None

    def rank(self, item: Any) -> tuple[int, float, float]:
        """The sort key: severity, then newest, then largest (an item without a field last)."""
        return _key(*self._facts(item))

    def _facts(self, item: Any) -> tuple[Any, float | None, float | None]:
        status = field_value(item, self.status) if self.status else None
        when = moment(field_value(item, self.time)) if self.time else None
        size = _size(field_value(item, self.size)) if self.size else None
        return status, when, size

    def ranked(self, items: Sequence[Any]) -> RankedItems:
        """The items ranked, the most important first."""
        facts = [self._facts(item) for item in items]  # each item read once
        indices = sorted(range(len(items)), key=lambda index: _key(*facts[index]))
        ordered = [facts[index] for index in indices]
        statuses = [_label(status) for status, _, _ in ordered] if self.status else None
        times = [field_value(items[index], self.time) for index in indices] if self.time else []
        return RankedItems(
            self.fields(),
            indices,
            statuses,
            [when for _, when, _ in ordered],
            times,
            [size for _, _, size in ordered],
        )

    def fields(self) -> dict[str, str]:
        """The fields the order uses, named for the model: {"status": "validation.status", ...}."""
        named = {"status": self.status, "newest": self.time, "largest": self.size}
        return {role: ".".join(path) for role, path in named.items() if path is not None}
