"""The plans of calls on one dashboard in the page's environment (a git commit, a new branch, a
generated description, a new LLM review): the dashboard as it is now, read with
`search_dashboards`, and what the call adds or changes."""

from __future__ import annotations

from abc import ABC, abstractmethod
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


def _git(dashboard: Mapping[str, Any]) -> Mapping[str, Any]:
    git = dashboard.get("git")
    return git if isinstance(git, Mapping) else {}


class _DashboardPlan(ABC):
    """A plan about one dashboard in the call's environment: one `search_dashboards` read, a
    title naming the action and the dashboard, and what the dashboard holds now (`now`); a
    dashboard the environment does not have is said, not guessed."""

    objects: tuple[str, ...] = ("dashboard_id",)
    heading = ""
    """The title before the environment, `{named}` the dashboard («Коммит дашборда {named} в
    git»); other fields are the call's arguments."""
    known: tuple[str, ...] = ()
    """Lines true without the read (a paid task says so even when the plan was not read)."""

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        if env_id is None:
            return []
        search = {"dashboard_ids": [args["dashboard_id"]], "limit": 1}
        return [PlanRead("dashboard", "search_dashboards", env_id, search)]

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        found = dashboards_by_id(outputs.get("dashboard")).get(int(args["dashboard_id"]))
        title = self._title(args, env_id, found)
        if found is None:
            missing = (
                f"в {env_id} дашборда #{args['dashboard_id']} нет — ss-tools откажет, "
                "ничего не изменится"
            )
            return ChangePlan(title, (missing,), {"dashboard": None})
        lines, state = self.now(args, found)
        return ChangePlan(title, (*lines, *self.known), state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return ChangePlan(self._title(args, env_id, None), self.known, unread=unread_line(why))

    @abstractmethod
    def now(
        self, args: Mapping[str, Any], dashboard: Mapping[str, Any]
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        """What the call will do given the dashboard as it is now, and what an approval binds."""

    def _title(
        self, args: Mapping[str, Any], env_id: str | None, dashboard: Mapping[str, Any] | None
    ) -> str:
        named = named_dashboard(int(args["dashboard_id"]), dashboard)
        where = f" ({env_id})" if env_id else ""
        return self.heading.format_map({**args, "named": named}) + where


class CommitPlan(_DashboardPlan):
    """`commit_changes`: «Коммит дашборда #10 «…» в git (ss-dev)», what is uncommitted now."""

    heading = "Коммит дашборда {named} в git"

    def now(
        self, args: Mapping[str, Any], dashboard: Mapping[str, Any]
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
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
            current = git_state(dashboard) or "git-статус неизвестен"
            line = f"{current}; будет сделан коммит {into}{message}"
        git_now = [git.get("status"), git.get("branch"), git.get("last_commit")]
        return (line,), {"dashboard": [*(stamp(dashboard) or []), *git_now]}


class BranchPlan(_DashboardPlan):
    """`create_branch`: «Новая ветка «feature/kpi» дашборда #10 «…» (ss-dev)», the branches
    there are now."""

    objects = ("dashboard_id", "branch_name")
    heading = "Новая ветка «{branch_name}» дашборда {named}"

    def now(
        self, args: Mapping[str, Any], dashboard: Mapping[str, Any]
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        branches = [str(b) for b in dashboard.get("branches") or []]
        git = _git(dashboard)
        if args["branch_name"] in branches:
            line = f"ветка {args['branch_name']} уже есть — ss-tools откажет, ничего не изменится"
        else:
            there = f"ветки сейчас: {', '.join(branches)}; " if branches else ""
            start = f" от {git['branch']}" if git.get("branch") else ""
            last = f" (последний коммит {git['last_commit']})" if git.get("last_commit") else ""
            line = f"{there}новая ветка будет создана{start}{last}"
        state = {"branches": sorted(branches), "from": [git.get("branch"), git.get("last_commit")]}
        return (line,), state


class ValidationPlan(_DashboardPlan):
    """`run_llm_validation`: «LLM-ревью дашборда #42 «…» (ss-dev)», the last review now (which
    may already answer the question), and that a new one replaces it."""

    heading = "LLM-ревью дашборда {named}"
    known = ("результат нового ревью заменит результат последнего",)

    def now(
        self, args: Mapping[str, Any], dashboard: Mapping[str, Any]
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        last = dashboard.get("validation")
        last = last if isinstance(last, Mapping) else {}
        return (_last_review(last),), {"validation": [last.get("status"), last.get("checked_at")]}


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


class DocumentationPlan(_DashboardPlan):
    """`run_llm_documentation`: «Документация дашборда #10 «…» (ss-dev)», the description it
    replaces; the generation is a paid LLM task."""

    heading = "Документация дашборда {named}"
    known = ("запускает платную LLM-задачу",)

    def now(
        self, args: Mapping[str, Any], dashboard: Mapping[str, Any]
    ) -> tuple[tuple[str, ...], dict[str, Any]]:
        current = str(dashboard.get("description") or "").strip()
        if current:
            cut = "…" if len(current) > _DESCRIPTION_SHOWN else ""
            replaced = f"текущее описание «{current[:_DESCRIPTION_SHOWN]}{cut}» будет заменено"
        else:
            replaced = "описания сейчас нет — будет добавлено"
        line = f"{replaced} текстом, который напишет LLM"
        return (line,), {"dashboard": [*(stamp(dashboard) or []), current]}
