"""The offline model's answers: a tool's result as a short answer in the user's language.

An answer is chosen by the result's shape (the keys it has), as an LLM reads a result, not by
the tool's name: a new tool whose result looks like a known one is answered like it. A tool's
own facts (its Russian label, its operation) come from the catalog. Each writer returns None when
the data is not its shape; the generic writer at the end names the tool and its facts.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from sstools_agent.domain.tool_catalog import CATALOG

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


def _listed(entries: Sequence[str], total: int, russian: bool) -> str:
    shown = "; ".join(entries[:MAX_LISTED])
    rest = total - min(len(entries), MAX_LISTED)
    return shown + (say(russian, f" и ещё {rest}", f" and {rest} more") if rest > 0 else "")


def dashboard_facts(d: dict[str, Any], russian: bool) -> str:
    """One dashboard's git status, last change and validation (the seed's status answer)."""
    git, change, validation = d.get("git", {}), d.get("last_change", {}), d.get("validation", {})
    issues = _quoted(items(validation.get("issues")), russian) or say(
        russian, "замечаний нет", "no issues"
    )
    return say(
        russian,
        f"Дашборд «{d.get('title')}» (id {d.get('id')}) в {d.get('environment')}: "
        f"git-статус — {git.get('status')} (ветка {git.get('branch')}), "
        f"последнее изменение — {change.get('at')} ({change.get('by')}), "
        f"валидация — {validation.get('status')} ({issues}).",
        f"Dashboard “{d.get('title')}” (id {d.get('id')}) in {d.get('environment')}: "
        f"git status {git.get('status')} (branch {git.get('branch')}), "
        f"last change {change.get('at')} by {change.get('by')}, "
        f"validation {validation.get('status')} ({issues}).",
    )


def _dashboards(data: dict[str, Any], russian: bool) -> str | None:
    if "dashboards" not in data:
        return None
    found = items(data["dashboards"])
    if len(found) == 1:
        return dashboard_facts(found[0], russian)
    total = int(data.get("total", len(found)))
    if not found:
        return say(russian, "Дашборды не найдены.", "No dashboards found.")
    names = [f"«{d.get('title')}» (id {d.get('id')})" for d in found]
    return say(
        russian,
        f"Найдено дашбордов в {data.get('environment')}: {total}. {_listed(names, total, True)}.",
        f"Found {total} dashboards in {data.get('environment')}: {_listed(names, total, False)}.",
    )


def _dataset(data: dict[str, Any], russian: bool) -> str | None:
    d = data.get("dataset")
    if not isinstance(d, dict):
        return None
    review, deps = d.get("review", {}), d.get("dependencies", {})
    unmapped = ", ".join(items(d.get("unmapped_columns"))) or say(russian, "нет", "none")
    comments = _quoted(items(review.get("comments")), russian) or say(russian, "нет", "none")
    dashboards = ", ".join(str(i) for i in items(deps.get("dashboards"))) or "—"
    sources = ", ".join(items(deps.get("upstream_tables"))) or "—"
    return say(
        russian,
        f"Датасет {d.get('schema')}.{d.get('table_name')} (id {d.get('id')}) в "
        f"{d.get('environment')}: статус ревью — {review.get('status')} (замечания: {comments}); "
        f"колонки без маппинга: {unmapped}; зависимости: дашборды {dashboards}, "
        f"источники {sources}.",
        f"Dataset {d.get('schema')}.{d.get('table_name')} (id {d.get('id')}) in "
        f"{d.get('environment')}: review status {review.get('status')} (remarks: {comments}); "
        f"unmapped columns: {unmapped}; dependencies: dashboards {dashboards}, sources {sources}.",
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


def _health(data: dict[str, Any], russian: bool) -> str | None:
    if "failing" not in data or "items" not in data:
        return None
    bad = [i for i in items(data["items"]) if i.get("status") != "ok"]
    lines = [
        say(
            russian,
            f"«{i.get('title')}» (id {i.get('dashboard_id')}): {i.get('status')}, "
            f"графиков с ошибками {i.get('failing_charts')}",
            f"“{i.get('title')}” (id {i.get('dashboard_id')}): {i.get('status')}, "
            f"{i.get('failing_charts')} failing charts",
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
    if not lines:
        return head + say(russian, " Проблем нет.", " No problems.")
    return f"{head} {_listed(lines, len(lines), russian)}."


_TIERS_RU: Final = {"dev": "разработка", "staging": "предрелизное", "prod": "рабочее"}


def _environments(data: dict[str, Any], russian: bool) -> str | None:
    if "environments" not in data:
        return None
    found = items(data["environments"])
    if russian:
        envs = [
            f"{e.get('id')} — уровень {e.get('tier')} ({_TIERS_RU.get(str(e.get('tier')), '—')})"
            for e in found
        ]
        return f"Окружений ss-tools: {len(envs)}. " + "; ".join(envs) + "."
    envs = [f"{e.get('id')} (tier {e.get('tier')})" for e in found]
    return f"ss-tools manages {len(envs)} environments: {', '.join(envs)}."


_STATUS_RU: Final = {
    "planned": "запланирована",
    "running": "выполняется",
    "done": "выполнена",
    "failed": "завершилась ошибкой",
}


def _migration_line(m: dict[str, Any], russian: bool) -> str:
    status = m.get("status")
    return say(
        russian,
        f"№{m.get('id')} «{m.get('title')}» из {m.get('source_env_id')} в {m.get('target_env_id')}"
        f" — {_STATUS_RU.get(str(status), status)} ({status})",
        f"#{m.get('id')} “{m.get('title')}” {m.get('source_env_id')} → {m.get('target_env_id')}: "
        f"{m.get('status')}",
    )


def _migrations(data: dict[str, Any], russian: bool) -> str | None:
    if "migrations" not in data:
        return None
    found = items(data["migrations"])
    total = int(data.get("total", len(found)))
    lines = [_migration_line(m, russian) for m in found]
    return say(
        russian,
        f"Миграций: {total}. {_listed(lines, total, True)}.",
        f"{total} migrations: {_listed(lines, total, False)}.",
    )


def _migration_plan(data: dict[str, Any], russian: bool) -> str | None:
    if "objects" not in data or not isinstance(data.get("migration"), dict):
        return None
    steps = [f"{o.get('dashboard_id')}: {o.get('action')}" for o in items(data["objects"])]
    conflicts = len(items(data.get("conflicts")))
    return say(
        russian,
        f"План миграции {_migration_line(data['migration'], True)}. Дашборды: "
        f"{', '.join(steps)}. Конфликтов: {conflicts}.",
        f"Plan of migration {_migration_line(data['migration'], False)}. Dashboards: "
        f"{', '.join(steps)}. Conflicts: {conflicts}.",
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
    ids = ", ".join(str(i) for i in items(data["deployed"]))
    return say(
        russian,
        f"Готово: дашборды {ids} задеплоены в {data.get('target_env_id')} "
        f"(задача {data.get('task_id')}, статус {data.get('status')}).",
        f"Done: dashboards {ids} deployed to {data.get('target_env_id')} "
        f"(task {data.get('task_id')}, status {data.get('status')}).",
    )


def _validation(data: dict[str, Any], russian: bool) -> str | None:
    if "issues" not in data or "dashboard_id" not in data:
        return None
    issues = _quoted(items(data["issues"]), russian) or say(russian, "замечаний нет", "no issues")
    return say(
        russian,
        f"Ревью дашборда {data['dashboard_id']}: {data.get('status')} ({issues}); "
        f"задача {data.get('task_id')}.",
        f"Review of dashboard {data['dashboard_id']}: {data.get('status')} ({issues}); "
        f"task {data.get('task_id')}.",
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
    access_ru = {"read": "чтение", "write": "запись"}
    grants = [
        f"роль {g.get('role')} — {access_ru.get(str(g.get('access')), g.get('access'))} "
        f"(датасет {g.get('dataset_id')})"
        if russian
        else f"role {g.get('role')} — {g.get('access')} (dataset {g.get('dataset_id')})"
        for g in items(data["grants"])
    ]
    total = int(data.get("total", len(grants)))
    return say(
        russian,
        f"Права в {data.get('environment')}: {total}. {_listed(grants, total, True)}.",
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
        f"статус {backup.get('status')}, {backup.get('created_at')}.",
        f"Backup of {data.get('environment')} created: id {backup.get('id')}, "
        f"status {backup.get('status')}, {backup.get('created_at')}.",
    )


def _maintenance_line(e: dict[str, Any], russian: bool) -> str:
    when = e.get("starts_at") or "—"
    minutes = e.get("duration_minutes")
    length = say(russian, f", {minutes} мин", f", {minutes} min") if minutes else ""
    return f"№{e.get('id')} «{e.get('reason')}» {when}{length}: {e.get('status')}"


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
    tail = say(russian, f", результат: {result}", f", result: {result}") if result else ""
    return say(
        russian,
        f"Задача {data.get('id')} ({data['kind']}): статус {data['status']}{tail}.",
        f"Task {data.get('id')} ({data['kind']}): status {data['status']}{tail}.",
    )


def _capabilities(data: dict[str, Any], russian: bool) -> str | None:
    tools = items(data.get("tools"))
    if not tools or "role" not in data:
        return None
    groups: dict[str, list[str]] = {"read": [], "write": []}
    for tool in tools:
        spec = CATALOG.get(str(tool.get("name")))
        label = spec.label_ru if russian and spec is not None else tool.get("description")
        groups.setdefault(str(tool.get("operation")), []).append(f"- {tool.get('name')}: {label}")
    reads, writes = "\n".join(groups["read"]), "\n".join(groups["write"])
    head = say(
        russian,
        f"Вот что я могу здесь (роль {data['role']}):\nСмотреть:\n{reads}",
        f"Here is what I can do here (role {data['role']}):\nLook up:\n{reads}",
    )
    if not writes:
        return head
    return head + say(
        russian,
        f"\nИзменять (каждое изменение — после вашего подтверждения):\n{writes}",
        f"\nChange (each change after your confirmation):\n{writes}",
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
    tool: str, data: Any, russian: bool, args: Mapping[str, Any] | None = None
) -> str:
    """The answer for a successful call of `tool` with `args` that returned `data`: the writers
    read the call's arguments and its result together (the result wins where both say)."""
    if isinstance(data, dict):
        data = {**(args or {}), **data}
        for writer in _WRITERS:
            answer = writer(data, russian)
            if answer is not None:
                return answer
    facts = ", ".join(
        f"{k}: {v}"
        for k, v in (data.items() if isinstance(data, dict) else [])
        if isinstance(v, str | int | float | bool)
    )[:300]
    return say(russian, f"Готово ({tool}). {facts}", f"Done ({tool}). {facts}").strip()
