"""The plan of a change: what a write will do, read from the upstream before its card is shown.

The upstream has no dry run, so a plan is written from its existing read calls: a write tool's
declaration names a `PlanRecipe`; `plan_reads` says which reads that recipe makes (read tools of
the catalog, each in an environment), and `written_plan` writes the plan from what they returned.
The plan is what the card shows in words (a title naming the object and where it goes, a short
list of what will change and what is there now), and its `state` is what an approval is bound
to: the objects, versions and last-changed stamps the card showed. A plan whose reads failed is
still a plan: it says it could not be read and why (`unread_plan`), and binds nothing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from sstools_agent.domain.catalog_types import DASHBOARD_NOUN, PlanRecipe
from sstools_agent.domain.sql_plans import counted_rows, rows_band, rows_line, sql_shape

MAX_PLAN_LINES: Final = 12
"""Lines a card lists; the rest is counted («… и ещё 5 дашбордов»)."""

_MONTHS: Final = (
    "января",
    "февраля",
    "марта",
    "апреля",
    "мая",
    "июня",
    "июля",
    "августа",
    "сентября",
    "октября",
    "ноября",
    "декабря",
)


@dataclass(frozen=True, slots=True)
class PlanRead:
    """One read a plan makes: a read tool of the catalog, in an environment."""

    key: str
    """What the read is for in the plan ("source", "target")."""
    tool: str
    env_id: str
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


def plan_reads(recipe: PlanRecipe, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
    """The reads `recipe` makes for a call with `args` (validated arguments) in `env_id` (the
    call's environment)."""
    match recipe:
        case PlanRecipe.DEPLOY:
            ids = list(args["dashboard_ids"])
            search = {"dashboard_ids": ids, "limit": len(ids)}
            return [
                PlanRead("source", "search_dashboards", str(args["source_env_id"]), search),
                PlanRead("target", "search_dashboards", str(args["target_env_id"]), search),
            ]
        case PlanRecipe.SQL_WRITE:
            query = sql_shape(str(args["sql"])).count_query
            if query is None or env_id is None:
                return []
            count = {"database_id": args["database_id"], "sql": query, "limit": 1}
            return [PlanRead("count", "superset_execute_sql", env_id, count)]


def written_plan(
    recipe: PlanRecipe, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
) -> ChangePlan:
    """The plan from what each read returned (`outputs` by `PlanRead.key`)."""
    match recipe:
        case PlanRecipe.DEPLOY:
            return _deploy_plan(args, outputs)
        case PlanRecipe.SQL_WRITE:
            return _sql_plan(args, env_id, outputs)


def unread_plan(
    recipe: PlanRecipe, args: Mapping[str, Any], env_id: str | None, why: str
) -> ChangePlan:
    """The plan of a call whose reads failed: what is known without them, and why nothing
    more is (a SQL card still shows its statement; its count is then unknown)."""
    unread = f"План изменения прочитать не удалось: {why}."
    match recipe:
        case PlanRecipe.DEPLOY:
            return ChangePlan(_deploy_title(args, {}), unread=unread)
        case PlanRecipe.SQL_WRITE:
            known = _sql_plan(args, env_id, {})
            return ChangePlan(known.title, known.lines, None, unread, known.statement)


# ---- SQL ------------------------------------------------------------------------------------


def _sql_plan(
    args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
) -> ChangePlan:
    shape = sql_shape(str(args["sql"]))
    count = counted_rows(outputs.get("count")) if "count" in outputs else None
    where = f" в {env_id}" if env_id else ""
    lines = (rows_line(shape.kind, shape.tables, count, shape.count_query is not None),)
    state = {"statement": shape.statement, "rows": rows_band(count) if count is not None else None}
    return ChangePlan(f"SQL{where}: {shape.kind}", lines, state, statement=shape.statement)


# ---- deploy ---------------------------------------------------------------------------------

_GIT_STATES: Final = {
    "modified": "есть незакоммиченные изменения",
    "ahead": "есть коммиты, не отправленные в git",
    "behind": "копия отстаёт от git: в репозитории есть более новые коммиты",
}
"""What a deploy's source copy is, by its git status, in words (clean: nothing to say)."""


def _by_id(output: Any) -> dict[int, Mapping[str, Any]]:
    found = output.get("dashboards") if isinstance(output, Mapping) else None
    return {
        int(each["id"]): each
        for each in found or []
        if isinstance(each, Mapping) and isinstance(each.get("id"), int)
    }


def _deploy_title(args: Mapping[str, Any], source: Mapping[int, Mapping[str, Any]]) -> str:
    ids = list(args["dashboard_ids"])
    route = f"{args['source_env_id']} → {args['target_env_id']}"
    if len(ids) == 1:
        title = source.get(ids[0], {}).get("title")
        named = f"#{ids[0]} «{title}»" if title else f"#{ids[0]}"
        return f"Деплой дашборда {named}: {route}"
    return f"Деплой {_dashboards(len(ids))}: {route}"


def _dashboards(count: int) -> str:
    last_two, last = count % 100, count % 10
    if last == 1 and last_two != 11:
        return f"{count} дашборда"
    return f"{count} дашбордов"


def _when(stamp: Any) -> str:
    """«4 ноября 10:15 UTC» of an ISO stamp; the text as it is when it is none."""
    try:
        moment = datetime.fromisoformat(str(stamp))
    except ValueError:
        return str(stamp)
    return f"{moment.day} {_MONTHS[moment.month - 1]} {moment:%H:%M} UTC"


def _changed(dashboard: Mapping[str, Any]) -> str:
    """«изменена 4 ноября 10:15 UTC, ivanova»: the dashboard's last change."""
    change = dashboard.get("last_change")
    if not isinstance(change, Mapping) or not change.get("at"):
        return "когда изменена — неизвестно"
    by = f", {change['by']}" if change.get("by") else ""
    return f"изменена {_when(change['at'])}{by}"


def _stamp(dashboard: Mapping[str, Any] | None) -> list[Any] | None:
    """What an approval binds of one dashboard: its version and last change."""
    if dashboard is None:
        return None
    change = dashboard.get("last_change")
    at = change.get("at") if isinstance(change, Mapping) else None
    return [dashboard.get("version"), at]


def _differences(source: Mapping[str, Any], target: Mapping[str, Any]) -> list[str]:
    differs = []
    if source.get("charts") != target.get("charts"):
        differs.append(f"графиков {target.get('charts')} → {source.get('charts')}")
    if sorted(source.get("datasets") or []) != sorted(target.get("datasets") or []):
        before = ", ".join(str(d) for d in target.get("datasets") or []) or "нет"
        after = ", ".join(str(d) for d in source.get("datasets") or []) or "нет"
        differs.append(f"датасеты {before} → {after}")
    return differs


def _deploy_line(
    dashboard_id: int,
    source: Mapping[str, Any] | None,
    target: Mapping[str, Any] | None,
    args: Mapping[str, Any],
) -> str:
    source_env, target_env = args["source_env_id"], args["target_env_id"]
    if source is None:
        return f"#{dashboard_id}: в {source_env} такого дашборда нет — деплоить нечего"
    named = f"#{dashboard_id} «{source.get('title')}»"
    if target is None:
        line = (
            f"{named}: в {target_env} его ещё нет — будет создан из {source_env} "
            f"(версия {_changed(source)})"
        )
    else:
        version = f"версия {target['version']}" if target.get("version") is not None else "версия"
        line = (
            f"{named}: {version} в {target_env} ({_changed(target)}) будет заменена версией "
            f"из {source_env} ({_changed(source)})"
        )
        differs = _differences(source, target)
        if differs:
            line += f"; {', '.join(differs)}"
    git = source.get("git")
    status = git.get("status") if isinstance(git, Mapping) else None
    if status and status != "clean":
        said = _GIT_STATES.get(str(status), f"git-статус «{status}»")
        line += f"; в {source_env} {said}"
    return line


def _deploy_plan(args: Mapping[str, Any], outputs: Mapping[str, Any]) -> ChangePlan:
    sources, targets = _by_id(outputs.get("source")), _by_id(outputs.get("target"))
    ids: Sequence[int] = list(args["dashboard_ids"])
    lines = [_deploy_line(i, sources.get(i), targets.get(i), args) for i in ids]
    if len(lines) > MAX_PLAN_LINES:
        rest = len(lines) - MAX_PLAN_LINES + 1
        lines = [*lines[: MAX_PLAN_LINES - 1], f"… и ещё {DASHBOARD_NOUN.counted(rest)}"]
    state = {
        "source": {str(i): _stamp(sources.get(i)) for i in ids},
        "target": {str(i): _stamp(targets.get(i)) for i in ids},
    }
    return ChangePlan(_deploy_title(args, sources), tuple(lines), state)
