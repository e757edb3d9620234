"""The plan of a dashboard deploy: each dashboard in the source and in the target environment as
they are now (`search_dashboards` in each), and what the deploy replaces or creates."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sstools_agent.domain.catalog_types import DASHBOARD_NOUN
from sstools_agent.domain.plan_types import (
    ChangePlan,
    PlanRead,
    changed,
    dashboards_by_id,
    listed,
    named_dashboard,
    stamp,
    unread_line,
)

GIT_STATES: Final = {
    "modified": "есть незакоммиченные изменения",
    "ahead": "есть коммиты, не отправленные в git",
    "behind": "копия отстаёт от git: в репозитории есть более новые коммиты",
}
"""What a dashboard's copy is, by its git status, in words (clean: nothing to say)."""


def git_state(dashboard: Mapping[str, Any]) -> str | None:
    """The dashboard's git status in words; None when it is clean or not known."""
    git = dashboard.get("git")
    status = git.get("status") if isinstance(git, Mapping) else None
    if not status or status == "clean":
        return None
    return GIT_STATES.get(str(status), f"git-статус «{status}»")


class DeployPlan:
    """`deploy_dashboard`: «Деплой дашборда #10 «…»: ss-dev → prod», a line per dashboard."""

    objects = ("dashboard_ids", "source_env_id", "target_env_id")

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        ids = list(args["dashboard_ids"])
        search = {"dashboard_ids": ids, "limit": len(ids)}
        return [
            PlanRead("source", "search_dashboards", str(args["source_env_id"]), search),
            PlanRead("target", "search_dashboards", str(args["target_env_id"]), search),
        ]

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        sources = dashboards_by_id(outputs.get("source"))
        targets = dashboards_by_id(outputs.get("target"))
        ids: list[int] = list(args["dashboard_ids"])
        lines = [_line(i, sources.get(i), targets.get(i), args) for i in ids]
        state = {
            "source": {str(i): stamp(sources.get(i)) for i in ids},
            "target": {str(i): stamp(targets.get(i)) for i in ids},
        }
        return ChangePlan(_title(args, sources), listed(lines, DASHBOARD_NOUN.counted), state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return ChangePlan(_title(args, {}), unread=unread_line(why))


def _title(args: Mapping[str, Any], source: Mapping[int, Mapping[str, Any]]) -> str:
    ids = list(args["dashboard_ids"])
    route = f"{args['source_env_id']} → {args['target_env_id']}"
    if len(ids) == 1:
        return f"Деплой дашборда {named_dashboard(ids[0], source.get(ids[0]))}: {route}"
    return f"Деплой {_genitive(len(ids))}: {route}"


def _genitive(count: int) -> str:
    """«21 дашборда», «5 дашбордов»: the count after «Деплой»."""
    last_two, last = count % 100, count % 10
    if last == 1 and last_two != 11:
        return f"{count} дашборда"
    return f"{count} дашбордов"


def _differences(source: Mapping[str, Any], target: Mapping[str, Any]) -> list[str]:
    differs = []
    if source.get("charts") != target.get("charts"):
        differs.append(f"графиков {target.get('charts')} → {source.get('charts')}")
    if sorted(source.get("datasets") or []) != sorted(target.get("datasets") or []):
        before = ", ".join(str(d) for d in target.get("datasets") or []) or "нет"
        after = ", ".join(str(d) for d in source.get("datasets") or []) or "нет"
        differs.append(f"датасеты {before} → {after}")
    return differs


def _line(
    dashboard_id: int,
    source: Mapping[str, Any] | None,
    target: Mapping[str, Any] | None,
    args: Mapping[str, Any],
) -> str:
    source_env, target_env = args["source_env_id"], args["target_env_id"]
    if source is None:
        return f"#{dashboard_id}: в {source_env} такого дашборда нет — деплоить нечего"
    named = named_dashboard(dashboard_id, source)
    if target is None:
        line = (
            f"{named}: в {target_env} его ещё нет — будет создан из {source_env} "
            f"(версия {changed(source)})"
        )
    else:
        version = f"версия {target['version']}" if target.get("version") is not None else "версия"
        line = (
            f"{named}: {version} в {target_env} ({changed(target)}) будет заменена версией "
            f"из {source_env} ({changed(source)})"
        )
        differs = _differences(source, target)
        if differs:
            line += f"; {', '.join(differs)}"
    said = git_state(source)
    if said:
        line += f"; в {source_env} {said}"
    return line
