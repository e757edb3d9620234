"""The words a person reads for the upstream's values: statuses and other enums, counts and times.

One home for them, so an answer never shows `behind`, `changes_requested` or
`2026-11-11T06:00:00Z` to someone who asked in Russian: the statuses in Russian and English,
a count with its noun in the right form («1 дашборд», «2 дашборда», «5 дашбордов») and a time in
words that says its zone («11 ноября 06:00 UTC»; the server does not know the reader's zone).
Pure: no imports of the catalog, so the plans and the glossary can both use it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

Words = tuple[str, str]
"""(Russian, English)."""

STATUS_WORDS: Final[Mapping[str, Mapping[str, Words]]] = {
    "git": {
        "clean": ("нет незакоммиченных изменений", "clean"),
        "modified": ("есть незакоммиченные изменения", "modified (uncommitted changes)"),
        "ahead": ("опережает удалённую ветку: есть неотправленные коммиты", "ahead of the remote"),
        "behind": ("отстаёт от удалённой ветки", "behind the remote"),
    },
    "validation": {
        "passed": ("пройдена", "passed"),
        "warnings": ("пройдена с предупреждениями", "passed with warnings"),
        "failed": ("не пройдена, найдены ошибки", "failed"),
    },
    "health": {
        "ok": ("в порядке", "ok"),
        "warning": ("есть предупреждения", "warning"),
        "failing": ("есть ошибки", "failing"),
    },
    "review": {
        "approved": ("одобрен", "approved"),
        "pending": ("ожидает ревью", "pending"),
        "changes_requested": ("запрошены доработки", "changes requested"),
    },
    "migration": {
        "planned": ("запланирована", "planned"),
        "running": ("выполняется", "running"),
        "done": ("выполнена", "done"),
        "failed": ("завершилась ошибкой", "failed"),
    },
    "migrations": {
        "planned": ("запланировано", "planned"),
        "running": ("выполняется", "running"),
        "done": ("выполнено", "done"),
        "failed": ("с ошибкой", "failed"),
    },
    "task": {
        "queued": ("в очереди", "queued"),
        "running": ("ещё выполняется", "running"),
        "done": ("выполнена", "done"),
        "failed": ("завершилась ошибкой", "failed"),
    },
    "task_kind": {
        "deploy": ("деплой", "deploy"),
        "validation": ("проверка", "validation"),
        "documentation": ("документация", "documentation"),
        "migration": ("миграция", "migration"),
        "backup": ("резервная копия", "backup"),
    },
    "maintenance": {
        "planned": ("запланировано", "planned"),
        "active": ("идёт", "active"),
        "finished": ("завершено", "finished"),
    },
    "backup": {
        "running": ("создаётся", "running"),
        "done": ("готова", "done"),
        "failed": ("не удалась", "failed"),
    },
    "plan_action": {
        "create": ("будет создан", "create"),
        "update": ("будет обновлён", "update"),
    },
    "page_of": {
        "dashboard": ("дашборда", "dashboard"),
        "dataset": ("датасета", "dataset"),
        "migration": ("миграции", "migration"),
    },
    "access": {
        "read": ("чтение", "read"),
        "write": ("запись", "write"),
    },
    "tier": {
        "dev": ("окружение разработки", "development"),
        "staging": ("предрелизное окружение", "staging"),
        "prod": ("рабочее окружение", "production"),
    },
    "result": {
        "ok": ("успешно", "ok"),
    },
}
"""Each kind of value the upstream (or the agent) returns, in words: the keys are the values
seen in the sample upstream and docs/upstream-api.md (git status, validation, health, review,
migration, task, maintenance and backup statuses, a plan's actions, grants, tiers). A role
(`engineer`) is not a status: `role_words` says it."""

FIELD_KINDS: Final[Mapping[str, str]] = {
    **{field: field for field in ("git", "validation", "review", "task", "backup", "tier")},
    **{"migration": "migration", "migrations": "migration", "backups": "backup"},
    **{"event": "maintenance", "events": "maintenance", "kind": "task_kind"},
    **{"access": "access", "operation": "access", "action": "plan_action", "result": "result"},
}
"""Which kind of value a field holds, by the field's name (`tier`, `access`) or, for a `status`,
by its parent's (`git.status` is a git status, a status in `backups` a backup's)."""


def field_kind(field: str, parent: str = "") -> str | None:
    """The STATUS_WORDS kind of a value in `field` under `parent`, or None when the field holds
    no enum (a name: `environment`, `title`). A `status` of an unknown parent is of a kind
    `status_words` finds by its value."""
    if field == "status":
        return FIELD_KINDS.get(parent, "")
    return FIELD_KINDS.get(field)


ROLE_WORDS: Final[Mapping[str, tuple[str, str]]] = {
    "analyst": ("аналитик", "analyst"),
    "engineer": ("инженер", "engineer"),
    "admin": ("администратор", "admin"),
}
"""ss-tools' roles as a person reads them (the token's `roles` claim spells them in English)."""


def role_words(role: Any, russian: bool) -> str:
    """«инженер» for `engineer`: the role a refusal names, quoted in Russian text. A role the
    glossary does not know is named as the identity provider spells it."""
    words = ROLE_WORDS.get(str(role))
    if words is None:
        return str(role)
    return f"«{words[0]}»" if russian else words[1]


ENUM_VALUES: Final = frozenset(value for kind in STATUS_WORDS.values() for value in kind)
"""Every value the glossary names: none of them may show in a Russian answer as it is."""


def status_words(kind: str, value: Any, russian: bool) -> str:
    """`value` of `kind` («git», «review»…) in words: «отстаёт от удалённой ветки» for a git
    status `behind`. Of a kind the glossary does not know (a new tool's list), the first kind
    that knows the value says it. A value the glossary does not know is shown as the upstream
    gave it, its underscores as spaces (it is the upstream's word, not ours to invent)."""
    known = STATUS_WORDS.get(kind)
    if known is None:
        known = next((k for k in STATUS_WORDS.values() if str(value) in k), {})
    words = known.get(str(value))
    if words is not None:
        return words[0] if russian else words[1]
    return str(value).replace("_", " ")


NOUNS: Final[Mapping[str, tuple[tuple[str, str, str], tuple[str, str]]]] = {
    "dashboard": (("дашборд", "дашборда", "дашбордов"), ("dashboard", "dashboards")),
    "chart": (("график", "графика", "графиков"), ("chart", "charts")),
    "dataset": (("датасет", "датасета", "датасетов"), ("dataset", "datasets")),
    "migration": (("миграция", "миграции", "миграций"), ("migration", "migrations")),
    "environment": (("окружение", "окружения", "окружений"), ("environment", "environments")),
    "row": (("строка", "строки", "строк"), ("row", "rows")),
    "grant": (("право", "права", "прав"), ("grant", "grants")),
    "conflict": (("конфликт", "конфликта", "конфликтов"), ("conflict", "conflicts")),
    "slow_query": (
        ("медленный запрос", "медленных запроса", "медленных запросов"),
        ("slow query", "slow queries"),
    ),
    "minute": (("минута", "минуты", "минут"), ("minute", "minutes")),
}
"""The nouns answers count, in the three Russian forms (1, 2, 5) and the two English ones."""


def plural_ru(count: int, forms: tuple[str, str, str]) -> str:
    """The form of a noun after `count`: «дашборд» after 1, 21; «дашборда» after 2–4, 22–24;
    «дашбордов» after 0, 5–20, 11–14, 25…"""
    n = abs(count)
    if n % 10 == 1 and n % 100 != 11:
        return forms[0]
    if n % 10 in (2, 3, 4) and n % 100 not in (12, 13, 14):
        return forms[1]
    return forms[2]


def counted(count: int, noun: str, russian: bool) -> str:
    """«1 дашборд», «2 дашборда», «5 дашбордов»; "1 dashboard", "5 dashboards"."""
    ru, en = NOUNS[noun]
    if russian:
        return f"{count} {plural_ru(count, ru)}"
    return f"{count} {en[0] if count == 1 else en[1]}"


_MONTHS_RU: Final = (
    *("января", "февраля", "марта", "апреля", "мая", "июня"),
    *("июля", "августа", "сентября", "октября", "ноября", "декабря"),
)
_MONTHS_EN: Final = (
    *("January", "February", "March", "April", "May", "June"),
    *("July", "August", "September", "October", "November", "December"),
)
ISO_TIMESTAMP: Final = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}")
"""An absolute time as machines write it: what no answer shows."""


def moment_in_words(stamp: Any, russian: bool = True) -> str:
    """«11 ноября 06:00 UTC» / "November 11, 06:00 UTC" of an ISO time (in UTC, whatever zone
    it was written in: the server does not know the reader's); the text as it is when it is not
    a time."""
    try:
        moment = datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp)
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    if russian:
        return f"{moment.day} {_MONTHS_RU[moment.month - 1]} {moment:%H:%M} UTC"
    return f"{_MONTHS_EN[moment.month - 1]} {moment.day}, {moment:%H:%M} UTC"


_WEEKDAYS_UNTIL_RU: Final = (
    *("понедельника", "вторника", "среды", "четверга"),
    *("пятницы", "субботы", "воскресенья"),
)
"""The days of the week as «до …» takes them."""


def until_in_words(ends: datetime, now: datetime) -> str:
    """What follows «до» for a moment in its own zone, as the reader of that zone says it:
    «18:00 сегодня», «пятницы 18:00» within the week, «11 декабря 18:00» beyond."""
    days = (ends.date() - now.astimezone(ends.tzinfo).date()).days
    if days == 0:
        return f"{ends:%H:%M} сегодня"
    if 0 < days < 7:
        return f"{_WEEKDAYS_UNTIL_RU[ends.weekday()]} {ends:%H:%M}"
    return f"{ends.day} {_MONTHS_RU[ends.month - 1]} {ends:%H:%M}"


def times_in_words(text: str, russian: bool = True) -> str:
    """`text` with every ISO time in it said in words (a value quoted from the upstream)."""
    return re.sub(
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
        lambda m: moment_in_words(m.group(0).replace(" ", "T"), russian),
        text,
    )
