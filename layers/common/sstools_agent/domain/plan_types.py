"""The plan of a change as a card shows it, the reads it is written from, and the words plans
share (dates, last changes).

A plan is written by its tool's recipe (`change_plans.RECIPES`): the reads it makes (read tools of
the catalog, each in an environment), the plan written from what they returned, and the arguments
that name the plan's objects (an edit that changes one of them is another plan: it asks again).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from sstools_agent.domain.wording import moment_in_words

MAX_PLAN_LINES: Final = 12
"""Lines a card lists; the rest is counted («… и ещё 5 дашбордов»)."""


@dataclass(frozen=True, slots=True)
class PlanRead:
    """One read a plan makes: a read tool of the catalog, in an environment (None: the tool
    acts in none, as the migration plan)."""

    key: str
    """What the read is for in the plan ("source", "target")."""
    tool: str
    env_id: str | None
    args: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ChangePlan:
    """What the card says a write will do, and the view of the world an approval is bound to."""

    title: str
    """The action and its object in words: «Деплой дашборда #10 «Продажи»: ss-dev → prod»."""
    lines: tuple[str, ...] = ()
    """What will change and what is there now, one line per object."""
    state: Mapping[str, Any] | None = field(default=None, hash=False)
    """What the plan read of the objects it names (None: the plan could not be read)."""
    unread: str | None = None
    """Why the plan could not be read, in words; None when it was."""
    statement: str | None = None
    """For SQL: the statement, formatted, shown as code."""

    @property
    def digest(self) -> str | None:
        """The fingerprint of `state`: an approval runs only while the world still reads so."""
        if self.state is None:
            return None
        canonical = json.dumps(self.state, sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(canonical.encode()).hexdigest()

    def to_payload(self) -> dict[str, Any]:
        """What the card event carries (and the confirmation keeps to show the card again)."""
        return {
            "title": self.title,
            "lines": list(self.lines),
            "unread": self.unread,
            "digest": self.digest,
            "statement": self.statement,
        }


class PlanWriter(Protocol):
    """How one recipe reads and writes its plan (`args` are the call's validated arguments,
    `env_id` the environment the call acts in)."""

    @property
    def objects(self) -> tuple[str, ...]:
        """The arguments that name what the plan is about; the others (a commit's message, a
        maintenance reason) may be edited under the same approval."""
        ...

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]: ...

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan: ...

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        """The plan when its reads failed: what is known without them, and `why` not more."""
        ...


def unread_line(why: str) -> str:
    """What a card says when its plan could not be read."""
    return f"План изменения прочитать не удалось: {why}."


def when(stamp: Any) -> str:
    """«4 ноября 10:15 UTC» of an ISO stamp; the text as it is when it is none."""
    return moment_in_words(stamp)


def changed(dashboard: Mapping[str, Any]) -> str:
    """«изменена 4 ноября 10:15 UTC, ivanova»: a dashboard's last change (of its version)."""
    last = last_change(dashboard)
    return f"изменена {last}" if last else "когда изменена — неизвестно"


def last_change(dashboard: Mapping[str, Any]) -> str | None:
    """«4 ноября 10:15 UTC, ivanova»: when and by whom a dashboard last changed, if known."""
    change = dashboard.get("last_change")
    if not isinstance(change, Mapping) or not change.get("at"):
        return None
    by = f", {change['by']}" if change.get("by") else ""
    return f"{when(change['at'])}{by}"


def stamp(dashboard: Mapping[str, Any] | None) -> list[Any] | None:
    """What an approval binds of one dashboard: its version and last change."""
    if dashboard is None:
        return None
    change = dashboard.get("last_change")
    at = change.get("at") if isinstance(change, Mapping) else None
    return [dashboard.get("version"), at]


def dashboards_by_id(output: Any) -> dict[int, Mapping[str, Any]]:
    """The dashboards a `search_dashboards` read answered, by id."""
    found = output.get("dashboards") if isinstance(output, Mapping) else None
    return {
        int(each["id"]): each
        for each in found or []
        if isinstance(each, Mapping) and isinstance(each.get("id"), int)
    }


def named_dashboard(dashboard_id: int, dashboard: Mapping[str, Any] | None) -> str:
    """«#10 «Отчёт по энергопотреблению»», or «#10» when its title is not known."""
    title = dashboard.get("title") if dashboard else None
    return f"#{dashboard_id} «{title}»" if title else f"#{dashboard_id}"


def listed(lines: Sequence[str], counted: Callable[[int], str]) -> tuple[str, ...]:
    """At most MAX_PLAN_LINES lines; past that, the last says how many more («… и ещё
    5 дашбордов», the count in `counted`'s words)."""
    if len(lines) <= MAX_PLAN_LINES:
        return tuple(lines)
    more = len(lines) - MAX_PLAN_LINES + 1
    return (*lines[: MAX_PLAN_LINES - 1], f"… и ещё {counted(more)}")
