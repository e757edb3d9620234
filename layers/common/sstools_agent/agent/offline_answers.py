"""The offline model's answers: a tool's result as a short answer in the user's language.

An answer is chosen by the result's shape (the keys it has), as an LLM reads a result, not by
the tool's name: a new tool whose result looks like a known one is answered like it. A tool's
own facts (its Russian label, its operation) come from the catalog. Each writer returns None when
the data is not its shape; the generic writer at the end names the tool and its facts.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from sstools_agent.domain.glossary import tool_label
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.wording import counted, moment_in_words, role_words, status_words

Answer = Callable[[dict[str, Any], bool], str | None]
MAX_LISTED: Final = 5
"""How many items an answer names; the rest is counted."""


def say(russian: bool, ru: str, en: str) -> str:
    """The sentence in the user's language."""
    return ru if russian else en


def items(value: Any) -> list[Any]:
    """A list, whether passed whole or summarised as {"items": [...], "total_count": n}."""
    if isinstance(value, dict) and "items" in value:
        value = value["items"]
    return value if isinstance(value, list) else []


def _quoted(texts: Sequence[Any], russian: bool) -> str:
    """Remarks quoted as they were written (an English answer quotes Russian remarks)."""
    if russian:
        return "; ".join(str(t) for t in texts)
    return "; ".join(f"“{t}”" for t in texts)


def _listed(entries: Sequence[str], total: int, russian: bool, most: int = MAX_LISTED) -> str:
    shown = "; ".join(entries[:most])
    rest = total - min(len(entries), most)
    return shown + (say(russian, f" и ещё {rest}", f" and {rest} more") if rest > 0 else "")


def dashboard_facts(d: dict[str, Any], russian: bool) -> str:
    """One dashboard's git status, last change, validation, owners and whether it is published
    (the seed's status answer)."""
    git, change, validation = d.get("git", {}), d.get("last_change", {}), d.get("validation", {})
    issues = _quoted(items(validation.get("issues")), russian) or say(
        russian, "замечаний нет", "no issues"
    )
    owners = ", ".join(str(o) for o in items(d.get("owners"))) or "—"
    checked = validation.get("checked_at") and moment_in_words(validation["checked_at"], russian)
    at = change.get("at") and moment_in_words(change["at"], russian)
    git_status = status_words("git", git.get("status"), russian)
    validated = status_words("validation", validation.get("status"), russian)
    published = d.get("published")
    published_ru = (
        "" if published is None else ("; опубликован" if published else "; не опубликован")
    )
    published_en = "" if published is None else ("; published" if published else "; not published")
    return say(
        russian,
        f"Дашборд «{d.get('title')}» (id {d.get('id')}) в {d.get('environment')}: "
        f"git-статус — {git_status} (ветка {git.get('branch')}), "
        f"последнее изменение — {at} ({change.get('by')}), "
        f"валидация {f'от {checked} ' if checked else ''}— {validated} "
        f"({issues}); владельцы: {owners}{published_ru}.",
        f"Dashboard “{d.get('title')}” (id {d.get('id')}) in {d.get('environment')}: "
        f"git status {git_status} (branch {git.get('branch')}), "
        f"last change {at} by {change.get('by')}, "
        f"validation {validated}{f' on {checked}' if checked else ''} "
        f"({issues}); owners: {owners}{published_en}.",
    )


def _dashboards(data: dict[str, Any], russian: bool) -> str | None:
    if "dashboards" not in data:
        return None
    found = items(data["dashboards"])
    if len(found) == 1:
        return dashboard_facts(found[0], russian)
    total = int(data.get("total", len(found)))
    if not found:
        return _no_dashboards(data, russian)
    names = [f"«{d.get('title')}» (id {d.get('id')})" for d in found]
    return say(
        russian,
        f"В {data.get('environment')} {_found(total)} {counted(total, 'dashboard', True)}: "
        f"{_listed(names, total, True)}.",
        f"Found {total} dashboards in {data.get('environment')}: {_listed(names, total, False)}.",
    )


def _no_dashboards(data: dict[str, Any], russian: bool) -> str:
    """An empty search, said of what was asked: a dashboard named by its id (a link's, say)
    that the environment does not have is said to be missing, not «no dashboards»."""
    where = data.get("environment") or data.get("env_id")
    in_ru, in_en = (f" в {where}", f" in {where}") if where else ("", "")
    asked = items(data.get("dashboard_ids")) or (
        [data["dashboard_id"]] if data.get("dashboard_id") is not None else []
    )
    if asked:
        ids = ", ".join(str(each) for each in asked)
        return say(
            russian,
            f"{'Дашборда' if len(asked) == 1 else 'Дашбордов'} {ids}{in_ru} нет: проверьте "
            "номер (в ссылке тоже) и окружение.",
            f"There is no dashboard {ids}{in_en}: check the id (the link's too) and the "
            "environment.",
        )
    return say(russian, f"Дашборды{in_ru} не найдены.", f"No dashboards found{in_en}.")


def _found(total: int) -> str:
    """«найден 1 дашборд», «найдено 5 дашбордов»: the verb agrees with the count."""
    return "найден" if counted(total, "dashboard", True).endswith("дашборд") else "найдено"


def _rows_ru(count: Any) -> str:
    return f"; строк: {count}" if count is not None else ""


def _rows_en(count: Any) -> str:
    return f"; {count} rows" if count is not None else ""


def _dataset(data: dict[str, Any], russian: bool) -> str | None:
    d = data.get("dataset")
    if not isinstance(d, dict):
        return None
    review, deps = d.get("review", {}), d.get("dependencies", {})
    reviewer = review.get("reviewer")
    unmapped = ", ".join(items(d.get("unmapped_columns"))) or say(russian, "нет", "none")
    comments = _quoted(items(review.get("comments")), russian) or say(russian, "нет", "none")
    dashboards = ", ".join(str(i) for i in items(deps.get("dashboards"))) or "—"
    sources = ", ".join(items(deps.get("upstream_tables"))) or "—"
    return say(
        russian,
        f"Датасет {d.get('schema')}.{d.get('table_name')} (id {d.get('id')}) в "
        f"{d.get('environment')}: ревью — {status_words('review', review.get('status'), True)}"
        f"{f' ({reviewer})' if reviewer else ''} (замечания: {comments}); "
        f"колонки без маппинга: {unmapped}; зависимости: дашборды {dashboards}, "
        f"источники {sources}{_rows_ru(d.get('row_count'))}.",
        f"Dataset {d.get('schema')}.{d.get('table_name')} (id {d.get('id')}) in "
        f"{d.get('environment')}: review {status_words('review', review.get('status'), False)}"
        f"{f' by {reviewer}' if reviewer else ''} (remarks: {comments}); "
        f"unmapped columns: {unmapped}; dependencies: dashboards {dashboards}, sources {sources}"
        f"{_rows_en(d.get('row_count'))}.",
    )


def _databases(data: dict[str, Any], russian: bool) -> str | None:
    if "databases" not in data:
        return None
    bases = [f"{b.get('name')} ({b.get('backend')})" for b in items(data["databases"])]
    sets = [f"{d.get('schema')}.{d.get('table_name')}" for d in items(data.get("datasets"))]
    total = int(data.get("total", len(sets)))
    return say(
        russian,
        f"Базы данных в {data.get('environment')}: {', '.join(bases)}. "
        f"Датасетов: {total}: {_listed(sets, total, True)}.",
        f"Databases in {data.get('environment')}: {', '.join(bases)}. "
        f"{total} datasets: {_listed(sets, total, False)}.",
    )


def _charts_ru(count: Any) -> str:
    """«1 график», «2 графика», «5 графиков»; «— графиков» when the upstream gave no count."""
    return counted(count, "chart", True) if isinstance(count, int) else "— графиков"


def _health(data: dict[str, Any], russian: bool) -> str | None:
    if "failing" not in data or "items" not in data:
        return None
    severity = {"failing": 0, "warning": 1}
    bad = sorted(
        (i for i in items(data["items"]) if i.get("status") != "ok"),
        key=lambda i: severity.get(str(i.get("status")), 2),
    )
    lines = [
        say(
            russian,
            f"«{i.get('title')}» (id {i.get('dashboard_id')}): "
            f"{status_words('health', i.get('status'), True)}, "
            f"{_charts_ru(i.get('failing_charts'))} с ошибками, "
            f"медленных запросов: {i.get('slow_queries', 0)}",
            f"“{i.get('title')}” (id {i.get('dashboard_id')}): {i.get('status')}, "
            f"{i.get('failing_charts')} failing charts, {i.get('slow_queries', 0)} slow queries",
        )
        for i in bad
    ]
    head = say(
        russian,
        f"Здоровье дашбордов в {data.get('environment')}: всего {data.get('total')}, "
        f"с ошибками {data.get('failing')}.",
        f"Dashboard health in {data.get('environment')}: {data.get('total')} in all, "
        f"{data.get('failing')} failing.",
    )
    narrowed_to = data.get(NARROWED)
    if isinstance(narrowed_to, dict) and not narrowed_to.get("statuses"):
        head = say(
            russian,
            f"Из этих дашбордов ({data.get('total')}) в {data.get('environment')} с ошибками "
            f"{data.get('failing')}.",
            f"Of those {data.get('total')} dashboards in {data.get('environment')}, "
            f"{data.get('failing')} failing.",
        )
    if not lines:
        return head + say(russian, " Проблем нет.", " No problems.")
    # Every failing one is named (they matter most: the list comes failing first), and the
    # ones a question narrowed to, up to twice the usual; the rest is counted over the whole
    # list, not over what the model was shown of it
    failing = sum(1 for i in bad if i.get("status") == "failing")
    most = max(2 * MAX_LISTED if isinstance(narrowed_to, dict) else MAX_LISTED, failing)
    not_ok = _not_ok_counts(data["items"], bad)
    rest = sum(not_ok.values()) - min(len(lines), most)
    shown = "; ".join(lines[:most])
    if rest <= 0:
        return f"{head} {shown}."
    warnings_only = sum(not_ok.values()) - not_ok.get("warning", 0) <= min(len(lines), most)
    more = say(
        russian,
        f" и ещё {rest} с предупреждениями" if warnings_only else f" и ещё {rest}",
        f" and {rest} more with warnings" if warnings_only else f" and {rest} more",
    )
    return f"{head} {shown}{more}."


def _not_ok_counts(listed: Any, read: list[dict[str, Any]]) -> dict[str, int]:
    """How many of the whole list are not ok, by status: the summary's counts when the list
    was cut (`status_counts`), else the items read."""
    counts = listed.get("status_counts") if isinstance(listed, dict) else None
    if isinstance(counts, dict):
        return {str(k): int(v) for k, v in counts.items() if k != "ok" and isinstance(v, int)}
    tally: dict[str, int] = {}
    for item in read:
        tally[str(item.get("status"))] = tally.get(str(item.get("status")), 0) + 1
    return tally


def _url(environment: Mapping[str, Any]) -> str:
    url = environment.get("superset_url")
    return f", {url}" if url else ""


def _environments(data: dict[str, Any], russian: bool) -> str | None:
    if "environments" not in data:
        return None
    found = items(data["environments"])
    if russian:
        envs = [
            f"{e.get('id')} — {status_words('tier', e.get('tier'), True)}{_url(e)}" for e in found
        ]
        return f"ss-tools ведёт {counted(len(envs), 'environment', True)}: " + "; ".join(envs) + "."
    envs = [f"{e.get('id')} (tier {e.get('tier')}{_url(e)})" for e in found]
    return f"ss-tools manages {len(envs)} environments: {', '.join(envs)}."


def _migration_line(m: dict[str, Any], russian: bool) -> str:
    status = m.get("status")
    return say(
        russian,
        f"№{m.get('id')} «{m.get('title')}» из {m.get('source_env_id')} в {m.get('target_env_id')}"
        f" — {status_words('migration', status, True)}",
        f"#{m.get('id')} “{m.get('title')}” {m.get('source_env_id')} → {m.get('target_env_id')}: "
        f"{m.get('status')}",
    )


def _migrations(data: dict[str, Any], russian: bool) -> str | None:
    if "migrations" not in data:
        return None
    found = items(data["migrations"])
    total = int(data.get("total", len(found)))
    lines = [_migration_line(m, russian) for m in found]
    asked = data.get("status")
    if isinstance(asked, str):  # the upstream filtered by the status the user named
        named = status_words("migrations", asked, True)
        if not lines:
            return say(russian, f"Миграций со статусом «{named}» нет.", f"No {asked} migrations.")
        return say(
            russian,
            f"Миграций со статусом «{named}»: {total}. {_listed(lines, total, True)}.",
            f"{total} {asked} migrations: {_listed(lines, total, False)}.",
        )
    narrowed = data.get(NARROWED)
    if isinstance(narrowed, dict) and narrowed.get("statuses"):
        statuses = ", ".join(str(s) for s in narrowed["statuses"])
        named = ", ".join(status_words("migration", s, True) for s in narrowed["statuses"])
        tally = sorted(narrowed.get("counts", {}).items())
        head = say(
            russian,
            f"Всего миграций: {narrowed['of']} ("
            + ", ".join(f"{status_words('migrations', s, True)} {n}" for s, n in tally)
            + ")",
            f"{narrowed['of']} migrations in all (" + ", ".join(f"{s} {n}" for s, n in tally) + ")",
        )
        if not lines:
            return say(
                russian,
                f"{head}; {named} — ни одной.",
                f"{head}; none is {statuses}.",
            )
        return say(
            russian,
            f"{head}; {named}: {_listed(lines, len(lines), True)}.",
            f"{head}; {statuses}: {_listed(lines, len(lines), False)}.",
        )
    return say(
        russian,
        f"{counted(total, 'migration', True)}: {_listed(lines, total, True)}.",
        f"{total} migrations: {_listed(lines, total, False)}.",
    )


def _migration_plan(data: dict[str, Any], russian: bool) -> str | None:
    if "objects" not in data or not isinstance(data.get("migration"), dict):
        return None
    steps = [
        f"{o.get('dashboard_id')} — {status_words('plan_action', o.get('action'), russian)}"
        for o in items(data["objects"])
    ]
    conflicts = len(items(data.get("conflicts")))
    return say(
        russian,
        f"План миграции {_migration_line(data['migration'], True)}. Дашборды: "
        f"{', '.join(steps)}. "
        + (f"{counted(conflicts, 'conflict', True)}." if conflicts else "Конфликтов нет."),
        f"Plan of migration {_migration_line(data['migration'], False)}. Dashboards: "
        f"{', '.join(steps)}. " + (f"Conflicts: {conflicts}." if conflicts else "No conflicts."),
    )


def _migration_run(data: dict[str, Any], russian: bool) -> str | None:
    migration = data.get("migration")
    if not isinstance(migration, dict) or "task_id" not in data:
        return None
    return say(
        russian,
        f"Миграция выполнена: {_migration_line(migration, True)} (задача {data['task_id']}).",
        f"Migration done: {_migration_line(migration, False)} (task {data['task_id']}).",
    )


def _deployed(data: dict[str, Any], russian: bool) -> str | None:
    if "deployed" not in data:
        return None
    deployed = items(data["deployed"])
    ids = ", ".join(str(i) for i in deployed)
    what = f"дашборд {ids} задеплоен" if len(deployed) == 1 else f"дашборды {ids} задеплоены"
    return say(
        russian,
        f"Готово: {what} в {data.get('target_env_id')} "
        f"(задача {data.get('task_id')} {status_words('task', data.get('status'), True)}).",
        f"Done: dashboards {ids} deployed to {data.get('target_env_id')} "
        f"(task {data.get('task_id')}, status {data.get('status')}).",
    )


def _validation(data: dict[str, Any], russian: bool) -> str | None:
    if "issues" not in data or "dashboard_id" not in data:
        return None
    issues = _quoted(items(data["issues"]), russian) or say(russian, "замечаний нет", "no issues")
    return say(
        russian,
        f"Ревью дашборда {data['dashboard_id']}: "
        f"{status_words('validation', data.get('status'), True)} ({issues}); "
        f"задача {data.get('task_id')}.",
        f"The review of dashboard {data['dashboard_id']} is finished with the status "
        f"{data.get('status')}. What it found: {issues} (task {data.get('task_id')}).",
    )


def _documentation(data: dict[str, Any], russian: bool) -> str | None:
    if "description" not in data:
        return None
    return say(
        russian,
        f"Документация дашборда {data.get('dashboard_id')} обновлена: {data['description']}",
        f"Documentation of dashboard {data.get('dashboard_id')} updated: {data['description']}",
    )


def _branch(data: dict[str, Any], russian: bool) -> str | None:
    if "branch" not in data:
        return None
    return say(
        russian,
        f"Ветка {data['branch']} создана для дашборда {data.get('dashboard_id')}. "
        f"Ветки: {', '.join(items(data.get('branches')))}.",
        f"Branch {data['branch']} created for dashboard {data.get('dashboard_id')}. "
        f"Branches: {', '.join(items(data.get('branches')))}.",
    )


def _commit(data: dict[str, Any], russian: bool) -> str | None:
    if "commit" not in data:
        return None
    return say(
        russian,
        f"Изменения дашборда {data.get('dashboard_id')} закоммичены: {data['commit']} "
        f"(«{data.get('message')}»).",
        f"Changes of dashboard {data.get('dashboard_id')} committed: {data['commit']} "
        f"(“{data.get('message')}”).",
    )


def _grants(data: dict[str, Any], russian: bool) -> str | None:
    if "grants" not in data:
        return None
    grants = [
        f"роль {g.get('role')} — {status_words('access', g.get('access'), True)} "
        f"(датасет {g.get('dataset_id')})"
        if russian
        else f"role {g.get('role')} — {g.get('access')} (dataset {g.get('dataset_id')})"
        for g in items(data["grants"])
    ]
    total = int(data.get("total", len(grants)))
    return say(
        russian,
        f"В {data.get('environment')} {counted(total, 'grant', True)}: "
        f"{_listed(grants, total, True)}.",
        f"{total} grants in {data.get('environment')}: {_listed(grants, total, False)}.",
    )


def _rows(data: dict[str, Any], russian: bool) -> str | None:
    if "rows" not in data or "columns" not in data:
        return None
    columns = ", ".join(str(c) for c in items(data["columns"]))
    first = items(data["rows"])[:1]
    sample = ""
    if first:
        sample = say(russian, f" Первая строка: {first[0]}.", f" First row: {first[0]}.")
    return say(
        russian,
        f"Запрос выполнен в {data.get('environment')}: строк {data.get('row_count')}, "
        f"колонки {columns}.{sample}",
        f"Query run in {data.get('environment')}: {data.get('row_count')} rows, "
        f"columns {columns}.{sample}",
    )


def _rows_affected(data: dict[str, Any], russian: bool) -> str | None:
    if "rows_affected" not in data:
        return None
    kinds = ", ".join(str(k) for k in items(data.get("statements")))
    return say(
        russian,
        f"SQL выполнен в {data.get('environment')} ({kinds}): изменено строк "
        f"{data['rows_affected']}.",
        f"SQL run in {data.get('environment')} ({kinds}): {data['rows_affected']} rows changed.",
    )


def _formatted_sql(data: dict[str, Any], russian: bool) -> str | None:
    if set(data) != {"sql"}:
        return None
    return say(russian, "Отформатированный SQL:\n```sql\n", "Formatted SQL:\n```sql\n") + (
        f"{data['sql']}\n```"
    )


def _created_dataset(data: dict[str, Any], russian: bool) -> str | None:
    if "dataset_id" not in data or "dataset" in data or "grants" in data:
        return None
    table = f"{data.get('schema_name')}.{data.get('table_name')}" if "table_name" in data else ""
    return say(
        russian,
        f"Датасет {table} создан в {data.get('environment')}: id {data['dataset_id']}.",
        f"Dataset {table} created in {data.get('environment')}: id {data['dataset_id']}.",
    ).replace("  ", " ")


def _backup(data: dict[str, Any], russian: bool) -> str | None:
    backup = data.get("backup")
    if not isinstance(backup, dict):
        return None
    return say(
        russian,
        f"Резервная копия окружения {data.get('environment')} создана: id {backup.get('id')}, "
        f"{status_words('backup', backup.get('status'), True)}, "
        f"{moment_in_words(backup.get('created_at'), True)}.",
        f"Backup of {data.get('environment')} created: id {backup.get('id')}, "
        f"status {backup.get('status')}, {moment_in_words(backup.get('created_at'), False)}.",
    )


def _maintenance_line(e: dict[str, Any], russian: bool) -> str:
    when = moment_in_words(e["starts_at"], russian) if e.get("starts_at") else "—"
    minutes = e.get("duration_minutes")
    status = str(e.get("status"))
    if russian:
        length = f", {minutes} мин" if minutes else ""
        return (
            f"№{e.get('id')} «{e.get('reason')}», начало {when}{length} — "
            f"{status_words('maintenance', status, True)}"
        )
    length = f", {minutes} min" if minutes else ""
    return f"№{e.get('id')} “{e.get('reason')}”, starts {when}{length}, status {status}"


def _maintenance_events(data: dict[str, Any], russian: bool) -> str | None:
    if "events" not in data:
        return None
    events = [_maintenance_line(e, russian) for e in items(data["events"])]
    if not events:
        return say(russian, "Обслуживаний нет.", "No maintenance windows.")
    return say(
        russian,
        f"Обслуживание в {data.get('environment')}: {_listed(events, len(events), True)}.",
        f"Maintenance in {data.get('environment')}: {_listed(events, len(events), False)}.",
    )


def _maintenance_event(data: dict[str, Any], russian: bool) -> str | None:
    event = data.get("event")
    if not isinstance(event, dict):
        return None
    line = _maintenance_line(event, russian)
    if event.get("status") == "finished":
        return say(
            russian,
            f"Обслуживание завершено в {data.get('environment')}: {line}.",
            f"Maintenance finished in {data.get('environment')}: {line}.",
        )
    return say(
        russian,
        f"Обслуживание начато в {data.get('environment')}: {line}.",
        f"Maintenance started in {data.get('environment')}: {line}.",
    )


def _task(data: dict[str, Any], russian: bool) -> str | None:
    if "kind" not in data or "status" not in data:
        return None
    result = data.get("result")
    # A result in words (a structured one is the card's to show)
    said = status_words("result", result, russian) if isinstance(result, str) else ""
    tail = say(russian, f", результат: {said}", f", result: {said}") if said else ""
    kind, status = str(data["kind"]), str(data["status"])
    return say(
        russian,
        f"Задача {data.get('id')} ({status_words('task_kind', kind, True)}): "
        f"{status_words('task', status, True)}{tail}.",
        f"Task {data.get('id')} ({data['kind']}): status {data['status']}{tail}.",
    )


def _capabilities(data: dict[str, Any], russian: bool) -> str | None:
    tools = items(data.get("tools"))
    if not tools or "role" not in data:
        return None
    groups: dict[str, list[str]] = {"read": [], "write": []}
    for tool in tools:
        name = str(tool.get("name"))
        # The catalog's words, never the tool's id (a person reads this list)
        label = tool_label(name) if russian else str(tool.get("description", name))
        groups.setdefault(str(tool.get("operation")), []).append(f"- {label}")
    reads, writes = "\n".join(groups["read"]), "\n".join(groups["write"])
    head = say(
        russian,
        f"Вот что я могу здесь (ваша роль — {role_words(data['role'], True)}).\n\n"
        f"Смотреть:\n{reads}",
        f"Here is what I can do here (your role: {data['role']}).\n\nLook up:\n{reads}",
    )
    if not writes:
        return head
    return head + say(
        russian,
        f"\n\nИзменять (каждое изменение — после вашего подтверждения):\n{writes}",
        f"\n\nChange (each change after your confirmation):\n{writes}",
    )


_WRITERS: Final[tuple[Answer, ...]] = (
    _capabilities,
    _dashboards,
    _dataset,
    _databases,
    _health,
    _environments,
    _migration_plan,
    _migration_run,
    _migrations,
    _deployed,
    _validation,
    _documentation,
    _branch,
    _commit,
    _grants,
    _rows,
    _rows_affected,
    _formatted_sql,
    _backup,
    _maintenance_events,
    _maintenance_event,
    _task,
    _created_dataset,
)


def describe_result(
    tool: str,
    data: Any,
    russian: bool,
    args: Mapping[str, Any] | None = None,
    focus: Focus | None = None,
) -> str:
    """The answer for a successful call of `tool` with `args` that returned `data`: the writers
    read the call's arguments and its result together (the result wins where both say), narrowed
    to what the question is about (`focus`)."""
    if isinstance(data, dict):
        data = narrowed({**(args or {}), **data}, focus or Focus())
        for writer in _WRITERS:
            answer = writer(data, russian)
            if answer is not None:
                return answer
    return _generic(tool, data, russian)


def _generic(tool: str, data: Any, russian: bool) -> str:
    """A result no writer knows, by its shape: the tool named as the catalog names it, the
    environment, and the first list's items (each by its id, then its short facts, times in
    words), or the result's own facts: a new tool is answered without an answer of its own."""
    spec = CATALOG.get(tool) if tool in CATALOG.names else None
    title = (spec.label_ru if russian and spec else "") or (
        spec.description.rstrip(".") if spec else tool
    )
    fields = data if isinstance(data, dict) else {}
    environment = fields.get("environment")
    heading = title[:1].upper() + title[1:] + (f" ({environment})" if environment else "")
    key, listed = next(((k, items(v)) for k, v in fields.items() if items(v)), ("", items(data)))
    kind = key.removesuffix("s")  # «backups»: each a backup, its status a backup's
    entries = [_item_line(each, kind, russian) for each in listed if isinstance(each, dict)]
    if entries:
        return f"{heading}: {_listed(entries, len(listed), russian)}."
    if listed == [] and any(isinstance(v, list) for v in fields.values()):
        return heading + say(russian, ": пусто.", ": none.")
    facts = ", ".join(f"{k}: {_fact(k, v, '', russian)}" for k, v in fields.items() if _scalar(v))
    return f"{heading}. {facts[:300]}".strip()


def _scalar(value: Any) -> bool:
    return isinstance(value, str | int | float | bool) and value != ""


def _fact(key: str, value: Any, kind: str, russian: bool) -> str:
    """A value as a person reads it: a time in words («29 ноября 03:00 UTC»), a status in
    words («готова»)."""
    if key.endswith("_at") and isinstance(value, str):
        return moment_in_words(value, russian)
    if key == "status" and isinstance(value, str):
        return status_words(kind, value, russian)
    return str(value)


def _item_line(entry: dict[str, Any], kind: str, russian: bool) -> str:
    """«#706 — 29 ноября 03:00 UTC, done»: an item's id, then its short facts."""
    facts = [_fact(k, v, kind, russian) for k, v in entry.items() if k != "id" and _scalar(v)]
    ident = f"#{entry['id']}" if _scalar(entry.get("id")) else ""
    return " — ".join(part for part in (ident, ", ".join(facts[:3])) if part)


# What a question is about, and the objects an exchange named: the offline model's memory

NARROWED: Final = "narrowed"
"""The key a narrowed result carries: the statuses it was narrowed to and the count before."""
STATUS_VOCABULARIES: Final = (
    frozenset({"planned", "running", "done", "failed"}),
    frozenset({"ok", "warning", "failing"}),
)
"""The statuses a question can name: of migrations, and of dashboards' health."""


@dataclass(frozen=True, slots=True)
class Focus:
    """What a question narrows a result to: objects an earlier answer named (by kind, «which of
    them are broken?») and statuses it names («which migrations failed?»)."""

    ids: Mapping[str, Collection[Any]] = field(default_factory=dict)
    statuses: frozenset[str] = frozenset()


def _key_of(entry: Mapping[str, Any], kind: str, listed_as: str) -> Any:
    """An entry's id as an object of `kind`: its own `id` in a list named after the kind
    («dashboards»), else its `<kind>_id` (health items' «dashboard_id»)."""
    if listed_as == f"{kind}s" and "id" in entry:
        return entry["id"]
    return entry.get(f"{kind}_id")


def _named_statuses(entries: list[dict[str, Any]], focus: Focus) -> frozenset[str] | None:
    """The statuses of the focus in the vocabulary of these entries, or None when the question
    names none of it (a list of another kind is not narrowed by status)."""
    present = {str(e.get("status")) for e in entries}
    vocabulary = next((v for v in STATUS_VOCABULARIES if present <= v), frozenset())
    named = focus.statuses & vocabulary
    return named or None


def _kept_by_ids(key: str, entries: list[dict[str, Any]], focus: Focus) -> list[dict[str, Any]]:
    kept = entries
    for kind, ids in focus.ids.items():
        if all(_key_of(e, kind, key) is not None for e in kept):
            kept = [e for e in kept if _key_of(e, kind, key) in ids]
    return kept


def narrowed(data: dict[str, Any], focus: Focus) -> dict[str, Any]:
    """`data` with its complete lists of objects narrowed to the focus: to the ids of a kind the
    question refers back to (the counts then count what is kept), and to the statuses it names
    (the counts stay the whole list's, and each status's count is noted). A summarised (partial)
    list is left whole: narrowing what was cut would tell the user «none» of unread rows."""
    if not (focus.ids or focus.statuses):
        return data
    lists = [v for v in data.values() if isinstance(v, list) and v and isinstance(v[0], dict)]
    # Complete only when the result counts its rows and every list shows all of them
    if not isinstance(data.get("total"), int) or any(len(v) != data["total"] for v in lists):
        return data
    result = dict(data)
    for key, value in data.items():
        if not (isinstance(value, list) and value and all(isinstance(e, dict) for e in value)):
            continue
        kept = _kept_by_ids(key, value, focus)
        if len(kept) != len(value):
            result[NARROWED] = {"of": len(value)}
            if "total" in result:
                result["total"] = len(kept)
            if "failing" in result:
                result["failing"] = sum(1 for e in kept if e.get("status") == "failing")
        # A call that filtered by status itself (`list_migrations(status=…)`) is not narrowed
        statuses = None if isinstance(data.get("status"), str) else _named_statuses(kept, focus)
        if statuses is not None:
            present = sorted({str(e.get("status")) for e in kept})
            result[NARROWED] = {
                "statuses": sorted(statuses),
                "of": len(kept),
                "counts": {s: sum(1 for e in kept if e.get("status") == s) for s in present},
            }
            kept = [e for e in kept if e.get("status") in statuses]
        result[key] = kept
    return result


COUNTS: Final = frozenset({"total", "failing"})
"""The counts that add up when results of one tool over several objects are merged."""


def merged(outputs: Sequence[tuple[Any, Mapping[str, Any]]]) -> tuple[Any, dict[str, Any]] | None:
    """The results of one tool called once per object, as one result: lists joined (whole or
    summarised), counts added, the rest as the first says; the arguments the calls shared. None
    when the results are not lists of the same shape (each is then answered on its own)."""
    results = [data for data, _ in outputs]
    if not all(isinstance(data, dict) for data in results):
        return None
    listed = [k for k, v in results[0].items() if isinstance(v, list) or _summarised(v)]
    if not listed or any(set(data) != set(results[0]) for data in results):
        return None
    joined: dict[str, Any] = dict(results[0])
    for key in listed:
        joined[key] = [entry for data in results for entry in items(data.get(key))]
    for key in COUNTS & set(joined):
        counts = [data.get(key) for data in results]
        if all(isinstance(c, int) for c in counts):
            joined[key] = sum(c for c in counts if isinstance(c, int))
    shared = {k: v for k, v in outputs[0][1].items() if all(a.get(k) == v for _, a in outputs)}
    return joined, shared


def _summarised(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("items"), list)


def _reference(key: str, value: Any) -> tuple[str, list[Any]] | None:
    """The kind and ids one entry of a result names: `<kind>_id`, `<kind>_ids`, a `<kind>s`
    list (of ids, or of objects with an id), a list of objects with a `<kind>_id`, a `<kind>`
    object with an id; `sql`, a statement."""
    value = items(value) if isinstance(value, dict) and "items" in value else value
    if key == "sql" and isinstance(value, str):
        return "sql", [value]
    if key.endswith("_id") and isinstance(value, int | str) and value != "":
        return key.removesuffix("_id"), [value]
    if isinstance(value, dict) and isinstance(value.get("id"), int | str):
        return key, [value["id"]]
    return _listed_reference(key, value) if isinstance(value, list) and value else None


def _listed_reference(key: str, value: list[Any]) -> tuple[str, list[Any]] | None:
    """The kind and ids a non-empty list names (see `_reference`)."""
    if key.endswith("_ids") and all(isinstance(v, int | str) for v in value):
        return key.removesuffix("_ids"), list(value)
    if key.endswith("s") and all(isinstance(v, int) for v in value):
        return key.removesuffix("s"), list(value)
    if not all(isinstance(v, dict) for v in value):
        return None
    if key.endswith("s") and all("id" in v for v in value):
        return key.removesuffix("s"), [v["id"] for v in value]
    kinds = [k for k in value[0] if k.endswith("_id") and all(k in v for v in value)]
    return (kinds[0].removesuffix("_id"), [v[kinds[0]] for v in value]) if kinds else None


def described(data: Any) -> dict[tuple[str, int], dict[str, Any]]:
    """(kind, id) -> the entry, of every object a result lists: what the model knows of an
    object an earlier answer showed (its title, its status)."""
    found: dict[tuple[str, int], dict[str, Any]] = {}
    if not isinstance(data, dict):
        return found
    for key, value in data.items():
        for entry in items(value) if isinstance(value, list | dict) else []:
            reference = _reference(key, [entry]) if isinstance(entry, dict) else None
            if reference is not None and isinstance(reference[1][0], int):
                found[(reference[0], reference[1][0])] = entry
    return found


def mentions(data: Any, args: Mapping[str, Any] | None = None) -> dict[str, list[Any]]:
    """The objects a call and its result named, by kind («dashboard», «migration», «event»,
    «task», «sql»): what a follow-up ("which of them…", "show its plan", "end it") refers to.
    Read by shape, like the answers: the result's own entries first (what the answer showed),
    then those of the objects nested in it, then the call's arguments."""
    found: dict[str, list[Any]] = {}
    level = [data] if isinstance(data, dict) else []
    while level:
        nested: list[dict[str, Any]] = []
        for entry in level:
            for key, value in entry.items():
                reference = _reference(key, value)
                if reference is not None:
                    found.setdefault(*reference)
                if isinstance(value, dict) and "items" not in value:
                    nested.append(value)
        level = nested
    for key, value in (args or {}).items():
        reference = _reference(key, value)
        if reference is not None:
            found.setdefault(*reference)
    return found
