"""The plans of writes to one dashboard in the page's environment (a git commit, a new branch, a
generated description): the dashboard as it is now, read with `search_dashboards`, and what the
call adds or changes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sstools_agent.domain.deploy_plans import git_state
from sstools_agent.domain.plan_types import (
    ChangePlan,
    PlanRead,
    dashboards_by_id,
    last_change,
    named_dashboard,
    stamp,
    unread_line,
    when,
)

_DESCRIPTION_SHOWN = 120
"""Characters of a current description a card quotes."""


def _dashboard_reads(args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
    if env_id is None:
        return []
    search = {"dashboard_ids": [args["dashboard_id"]], "limit": 1}
    return [PlanRead("dashboard", "search_dashboards", env_id, search)]


def _dashboard(args: Mapping[str, Any], outputs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    return dashboards_by_id(outputs.get("dashboard")).get(int(args["dashboard_id"]))


def _git(dashboard: Mapping[str, Any]) -> Mapping[str, Any]:
    git = dashboard.get("git")
    return git if isinstance(git, Mapping) else {}


def _missing(args: Mapping[str, Any], env_id: str | None) -> str:
    named = f"#{args['dashboard_id']}"
    return f"в {env_id} дашборда {named} нет — ss-tools откажет, ничего не изменится"


class CommitPlan:
    """`commit_changes`: «Коммит дашборда #10 «…» в git (ss-dev)», what is uncommitted now."""

    objects = ("dashboard_id",)

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        return _dashboard_reads(args, env_id)

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        dashboard = _dashboard(args, outputs)
        title = _commit_title(args, env_id, dashboard)
        if dashboard is None:
            return ChangePlan(title, (_missing(args, env_id),), {"dashboard": None})
        git = _git(dashboard)
        into = f"в ветку {git['branch']} " if git.get("branch") else ""
        message = f"с сообщением «{args['message']}»"
        if git.get("status") == "modified":
            last = last_change(dashboard)
            latest = f" (последнее — {last})" if last else ""
            line = f"незакоммиченные изменения{latest} будут закоммичены {into}{message}"
        elif git.get("status") == "clean":
            last = f" (последний коммит {git['last_commit']})" if git.get("last_commit") else ""
            line = f"незакоммиченных изменений нет{last}: коммит {message} может оказаться пустым"
        else:
            now = git_state(dashboard) or "git-статус неизвестен"
            line = f"{now}; будет сделан коммит {into}{message}"
        git_now = [git.get("status"), git.get("branch"), git.get("last_commit")]
        state = {"dashboard": [*(stamp(dashboard) or []), *git_now]}
        return ChangePlan(title, (line,), state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return ChangePlan(_commit_title(args, env_id, None), unread=unread_line(why))


def _commit_title(
    args: Mapping[str, Any], env_id: str | None, dashboard: Mapping[str, Any] | None
) -> str:
    where = f" ({env_id})" if env_id else ""
    return f"Коммит дашборда {named_dashboard(int(args['dashboard_id']), dashboard)} в git{where}"


class BranchPlan:
    """`create_branch`: «Новая ветка «feature/kpi» дашборда #10 «…» (ss-dev)», the branches
    there are now."""

    objects = ("dashboard_id", "branch_name")

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        return _dashboard_reads(args, env_id)

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        dashboard = _dashboard(args, outputs)
        title = _branch_title(args, env_id, dashboard)
        if dashboard is None:
            return ChangePlan(title, (_missing(args, env_id),), {"dashboard": None})
        branches = [str(b) for b in dashboard.get("branches") or []]
        git = _git(dashboard)
        if args["branch_name"] in branches:
            line = f"ветка {args['branch_name']} уже есть — ss-tools откажет, ничего не изменится"
        else:
            now = f"ветки сейчас: {', '.join(branches)}; " if branches else ""
            start = f" от {git['branch']}" if git.get("branch") else ""
            last = f" (последний коммит {git['last_commit']})" if git.get("last_commit") else ""
            line = f"{now}новая ветка будет создана{start}{last}"
        state = {
            "branches": sorted(branches),
            "from": [git.get("branch"), git.get("last_commit")],
        }
        return ChangePlan(title, (line,), state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return ChangePlan(_branch_title(args, env_id, None), unread=unread_line(why))


def _branch_title(
    args: Mapping[str, Any], env_id: str | None, dashboard: Mapping[str, Any] | None
) -> str:
    where = f" ({env_id})" if env_id else ""
    named = named_dashboard(int(args["dashboard_id"]), dashboard)
    return f"Новая ветка «{args['branch_name']}» дашборда {named}{where}"


class ValidationPlan:
    """`run_llm_validation`: «LLM-ревью дашборда #42 «…» (ss-dev)», the last review now (which
    may already answer the question), and that a new one is a paid task replacing it."""

    objects = ("dashboard_id",)

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        return _dashboard_reads(args, env_id)

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        dashboard = _dashboard(args, outputs)
        title = _validation_title(args, env_id, dashboard)
        if dashboard is None:
            return ChangePlan(title, (_missing(args, env_id),), {"dashboard": None})
        last = dashboard.get("validation")
        last = last if isinstance(last, Mapping) else {}
        lines = [_last_review(last), _PAID_REVIEW]
        state = {"validation": [last.get("status"), last.get("checked_at")]}
        return ChangePlan(title, tuple(lines), state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        title = _validation_title(args, env_id, None)
        return ChangePlan(title, (_PAID_REVIEW,), unread=unread_line(why))


_PAID_REVIEW = "результат нового ревью заменит результат последнего"
_REVIEW_STATES = {"passed": "пройдено", "failed": "не пройдено", "warnings": "с предупреждениями"}


def _last_review(last: Mapping[str, Any]) -> str:
    """«последнее ревью 28 ноября 06:00 UTC: не пройдено — 2 графика …»."""
    if not last.get("status"):
        return "ревью ещё не было"
    status = str(last["status"])
    when_checked = f" {when(last['checked_at'])}" if last.get("checked_at") else ""
    issues = "; ".join(str(each) for each in last.get("issues") or [])
    said = _REVIEW_STATES.get(status, f"статус «{status}»")
    return f"последнее ревью{when_checked}: {said}" + (f" — {issues}" if issues else "")


def _validation_title(
    args: Mapping[str, Any], env_id: str | None, dashboard: Mapping[str, Any] | None
) -> str:
    where = f" ({env_id})" if env_id else ""
    return f"LLM-ревью дашборда {named_dashboard(int(args['dashboard_id']), dashboard)}{where}"


class DocumentationPlan:
    """`run_llm_documentation`: «Документация дашборда #10 «…» (ss-dev)», the description it
    replaces; the generation is a paid LLM task."""

    objects = ("dashboard_id",)

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        return _dashboard_reads(args, env_id)

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        dashboard = _dashboard(args, outputs)
        title = _documentation_title(args, env_id, dashboard)
        if dashboard is None:
            return ChangePlan(title, (_missing(args, env_id),), {"dashboard": None})
        current = str(dashboard.get("description") or "").strip()
        if current:
            cut = "…" if len(current) > _DESCRIPTION_SHOWN else ""
            quoted = current[:_DESCRIPTION_SHOWN] + cut
            now = f"текущее описание «{quoted}» будет заменено"
        else:
            now = "описания сейчас нет — будет добавлено"
        lines = (f"{now} текстом, который напишет LLM", "запускает платную LLM-задачу")
        state = {"dashboard": [*(stamp(dashboard) or []), current]}
        return ChangePlan(title, lines, state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        title = _documentation_title(args, env_id, None)
        return ChangePlan(title, ("запускает платную LLM-задачу",), unread=unread_line(why))


def _documentation_title(
    args: Mapping[str, Any], env_id: str | None, dashboard: Mapping[str, Any] | None
) -> str:
    where = f" ({env_id})" if env_id else ""
    return f"Документация дашборда {named_dashboard(int(args['dashboard_id']), dashboard)}{where}"
