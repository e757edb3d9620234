"""The plans of writes to an environment as a whole or to its catalog: a migration (its own plan,
`get_migration_plan`), a new dataset (the datasets of its schema now), a backup (no read: it only
adds), and maintenance (the windows there are now, `list_maintenance_events`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sstools_agent.domain.catalog_types import DASHBOARD_NOUN
from sstools_agent.domain.plan_types import ChangePlan, PlanRead, unread_line, when

_MIGRATION_STATES: Final = {
    "done": "миграция уже выполнена — её объекты будут перенесены ещё раз",
    "running": "миграция выполняется сейчас — второй запуск пойдёт одновременно с ним",
    "failed": "прошлый запуск миграции завершился ошибкой",
}
"""What a migration's status says before it runs again (planned: nothing to say)."""


def _mapping(output: Any, key: str) -> Mapping[str, Any]:
    found = output.get(key) if isinstance(output, Mapping) else None
    return found if isinstance(found, Mapping) else {}


def _items(output: Any, key: str) -> list[Mapping[str, Any]]:
    found = output.get(key) if isinstance(output, Mapping) else None
    return [each for each in found or [] if isinstance(each, Mapping)]


def _dashboards(ids: list[Any]) -> str:
    noun = DASHBOARD_NOUN.one if len(ids) == 1 else DASHBOARD_NOUN.plural
    return f"{noun} {', '.join(str(each) for each in ids)}"


class MigrationPlan:
    """`execute_migration`: «Миграция #3 «…»: ss-dev → staging», what it creates and replaces."""

    objects = ("migration_id", "target_env_id")

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        migration = {"migration_id": args["migration_id"]}
        return [PlanRead("plan", "get_migration_plan", None, migration)]

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        found = outputs.get("plan")
        migration = _mapping(found, "migration")
        target = args["target_env_id"]
        lines = []
        if migration.get("target_env_id") not in (None, target):
            lines.append(
                f"миграция настроена на {migration['target_env_id']}, а не на {target} — "
                "ss-tools её отклонит, ничего не изменится"
            )
        said = _MIGRATION_STATES.get(str(migration.get("status")))
        if said:
            lines.append(said)
        objects = _items(found, "objects")
        by_action: dict[str, list[Any]] = {}
        for each in objects:
            by_action.setdefault(str(each.get("action")), []).append(each.get("dashboard_id"))
        if by_action.get("create"):
            lines.append(f"будут созданы в {target}: {_dashboards(by_action['create'])}")
        if by_action.get("update"):
            lines.append(f"будут заменены в {target}: {_dashboards(by_action['update'])}")
        mappings = _mapping(found, "database_mappings")
        if mappings:
            pairs = ", ".join(f"{source} → {mapped}" for source, mapped in mappings.items())
            lines.append(f"базы данных: {pairs}")
        conflicts = [str(each) for each in (found or {}).get("conflicts") or []]
        lines.append(f"конфликты: {'; '.join(conflicts)}" if conflicts else "конфликтов нет")
        state = {
            "status": migration.get("status"),
            "route": [migration.get("source_env_id"), migration.get("target_env_id")],
            "objects": sorted([str(o.get("dashboard_id")), str(o.get("action"))] for o in objects),
            "mappings": dict(sorted(mappings.items())),
            "conflicts": conflicts,
        }
        return ChangePlan(_migration_title(args, migration), tuple(lines), state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return ChangePlan(_migration_title(args, {}), unread=unread_line(why))


def _migration_title(args: Mapping[str, Any], migration: Mapping[str, Any]) -> str:
    named = f"#{args['migration_id']}"
    if migration.get("title"):
        named += f" «{migration['title']}»"
    source = f"{migration['source_env_id']} → " if migration.get("source_env_id") else "→ "
    return f"Миграция {named}: {source}{args['target_env_id']}"


class DatasetPlan:
    """`superset_create_dataset`: «Новый датасет mart.energy (staging)», whether one is there."""

    objects = ("database_id", "schema_name", "table_name")

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        if env_id is None:
            return []
        scope = {"database_id": args["database_id"], "schema_name": args["schema_name"]}
        return [PlanRead("datasets", "superset_explore_database", env_id, scope)]

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        found = outputs.get("datasets")
        table = f"{args['schema_name']}.{args['table_name']}"
        same = sorted(
            int(each["id"])
            for each in _items(found, "datasets")
            if each.get("table_name") == args["table_name"]
            and each.get("schema") == args["schema_name"]
            and isinstance(each.get("id"), int)
        )
        database = next(
            (
                str(each.get("name"))
                for each in _items(found, "databases")
                if each.get("id") == args["database_id"]
            ),
            f"#{args['database_id']}",
        )
        if same:
            ids = ", ".join(f"#{each}" for each in same)
            line = f"на таблице {table} уже есть датасет {ids} — будет создан ещё один"
        else:
            line = f"датасета на таблице {table} нет — будет создан (база {database})"
        return ChangePlan(_dataset_title(args, env_id), (line,), {"same_table": same})

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return ChangePlan(_dataset_title(args, env_id), unread=unread_line(why))


def _dataset_title(args: Mapping[str, Any], env_id: str | None) -> str:
    where = f" ({env_id})" if env_id else ""
    return f"Новый датасет {args['schema_name']}.{args['table_name']}{where}"


class BackupPlan:
    """`run_backup`: it only adds a copy, so there is nothing to read."""

    objects: tuple[str, ...] = ()

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        return []

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        note = f" с пометкой «{args['note']}»" if args.get("note") else ""
        line = f"будет создана новая копия{note}; дашборды, датасеты и прежние копии не меняются"
        return ChangePlan(f"Резервная копия метаданных {env_id or ''}".strip(), (line,), {})

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return self.written(args, env_id, {})


def _window_reads(env_id: str | None) -> list[PlanRead]:
    return [] if env_id is None else [PlanRead("windows", "list_maintenance_events", env_id, {})]


def _windows(output: Any) -> list[Mapping[str, Any]]:
    return _items(output, "events")


def _window(event: Mapping[str, Any]) -> str:
    """«#507 «обновление Superset до 4.1», с 20 ноября 22:00 UTC, petrov»."""
    parts = [f"#{event.get('id')}"]
    if event.get("reason"):
        parts[0] += f" «{event['reason']}»"
    if event.get("starts_at"):
        parts.append(f"с {when(event['starts_at'])}")
    if event.get("by"):
        parts.append(str(event["by"]))
    return ", ".join(parts)


class MaintenanceStartPlan:
    """`start_maintenance`: «Обслуживание staging на 30 мин», the windows open now."""

    objects = ("duration_minutes",)

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        return _window_reads(env_id)

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        active = [e for e in _windows(outputs.get("windows")) if e.get("status") == "active"]
        if active:
            now = "сейчас уже идёт обслуживание " + "; ".join(_window(e) for e in active)
        else:
            now = "сейчас обслуживания нет"
        line = f"начнётся обслуживание на {args['duration_minutes']} мин: «{args['reason']}»"
        state = {"active": sorted(str(e.get("id")) for e in active)}
        return ChangePlan(_start_title(args, env_id), (now, line), state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return ChangePlan(_start_title(args, env_id), unread=unread_line(why))


def _start_title(args: Mapping[str, Any], env_id: str | None) -> str:
    return f"Обслуживание {env_id or 'окружения'} на {args['duration_minutes']} мин"


class MaintenanceEndPlan:
    """`end_maintenance`: «Завершение обслуживания #507 (staging)», the window as it is now."""

    objects = ("event_id",)

    def reads(self, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
        return _window_reads(env_id)

    def written(
        self, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
    ) -> ChangePlan:
        event = next(
            (e for e in _windows(outputs.get("windows")) if e.get("id") == args["event_id"]), None
        )
        if event is None:
            line = f"в {env_id} обслуживания #{args['event_id']} нет — ss-tools откажет"
        elif event.get("status") == "active":
            line = f"идёт обслуживание {_window(event)} — будет завершено"
        else:
            reason = f" «{event['reason']}»" if event.get("reason") else ""
            ended = f" ({when(event['ends_at'])})" if event.get("ends_at") else ""
            line = (
                f"обслуживание #{args['event_id']}{reason} уже завершено{ended} — завершать нечего"
            )
        state = {"status": event.get("status") if event else None}
        return ChangePlan(_end_title(args, env_id), (line,), state)

    def unread(self, args: Mapping[str, Any], env_id: str | None, why: str) -> ChangePlan:
        return ChangePlan(_end_title(args, env_id), unread=unread_line(why))


def _end_title(args: Mapping[str, Any], env_id: str | None) -> str:
    where = f" ({env_id})" if env_id else ""
    return f"Завершение обслуживания #{args['event_id']}{where}"
