"""Seeded, realistic ss-tools data: environments, dashboards, datasets, migrations and more.

Deterministic (no randomness), so tests and demos can name what they will find: dashboard 10
«Отчёт по энергопотреблению» and dashboard 42 in ss-dev, dataset 15 in staging with review remarks.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from local.sample_upstream.tables import table_rows

ENVIRONMENTS: list[dict[str, Any]] = [
    {"id": "ss-dev", "tier": "dev", "superset_url": "https://superset-dev.example.internal"},
    {"id": "staging", "tier": "staging", "superset_url": "https://superset-stage.example.internal"},
    {"id": "prod", "tier": "prod", "superset_url": "https://superset.example.internal"},
]

_TITLES = [
    "Продажи по регионам",
    "Воронка подключений",
    "Отток абонентов",
    "Финансовый план-факт",
    "Загрузка ЦОД",
    "Инциденты поддержки",
    "SLA подрядчиков",
    "Складские остатки",
    "Качество данных DWH",
    "Отчёт по энергопотреблению",
    "Маркетинговые кампании",
    "Платежи и задолженность",
    "Тарифы и выручка",
    "Мониторинг ETL",
    "HR: найм и текучесть",
    "Логистика доставки",
    "Обращения клиентов",
    "Сетевые аварии",
    "Бюджет ИТ",
    "Продуктовые метрики",
    "Энергопотребление по объектам",
    "Закупки",
    "Выручка по каналам",
    "Когорты пользователей",
    "Остатки на счетах",
    "Качество связи",
    "Ремонты оборудования",
    "KPI филиалов",
    "Прогноз спроса",
    "Нагрузка колл-центра",
    "Договоры и акты",
    "Энергобаланс подстанций",
    "Аудит доступа",
    "Карта покрытия",
    "Себестоимость",
    "Дебиторка по срокам",
    "Сезонность продаж",
    "Скорость закрытия заявок",
    "Парк устройств",
    "Эффективность смен",
    "Охрана труда",
    "Потери электроэнергии",
    "Экспорт отчётов",
    "Контроль качества",
    "Пилот: новые тарифы",
]
_OWNERS = ["ivanova", "petrov", "smirnova", "kuznetsov", "orlova"]
_GIT_STATUSES = ["clean", "modified", "ahead", "clean", "behind"]
# Ids present per environment: everything is built in ss-dev, a subset reaches staging and prod.
_DASHBOARD_IDS = {"ss-dev": range(1, 46), "staging": range(1, 31), "prod": range(1, 21)}
_DATASET_IDS = range(1, 25)


_RELEASE_LAG = {"ss-dev": 0, "staging": 1, "prod": 2}
"""How many releases an environment's copy of a dashboard is behind ss-dev's (a deploy's plan
then replaces an older version, changed earlier and by someone else)."""


def _dashboard(dashboard_id: int, env_id: str) -> dict[str, Any]:
    index = dashboard_id - 1
    failing = dashboard_id % 7 == 0
    warnings = dashboard_id % 4
    lag = _RELEASE_LAG.get(env_id, 0)
    return {
        "id": dashboard_id,
        "title": _TITLES[index % len(_TITLES)],
        "environment": env_id,
        "owners": [_OWNERS[index % 5], _OWNERS[(index + 2) % 5]],
        "git": {
            "status": _GIT_STATUSES[index % 5] if env_id == "ss-dev" else "clean",
            "branch": "main",
            "last_commit": f"{(dashboard_id * 7919) % 16**7:07x}",
        },
        "last_change": {
            "at": f"2026-{11 - lag:02d}-{1 + (dashboard_id * 3) % 27:02d}T"
            f"{8 + dashboard_id % 10:02d}:15:00Z",
            "by": _OWNERS[(index + 1) % 5],
        },
        "validation": {
            "status": "failed" if failing else ("warnings" if warnings == 3 else "passed"),
            "issues": (["2 графика ссылаются на удалённую колонку kwh_total"] if failing else [])
            + (["фильтр по региону не применяется к 1 графику"] if warnings == 3 else []),
            "checked_at": f"2026-11-{1 + dashboard_id % 27:02d}T06:00:00Z",
        },
        "datasets": [1 + (index % 24), 1 + ((index + 5) % 24)],
        "charts": 4 + dashboard_id % 9,
        "version": 3 + dashboard_id % 5 - lag,
        "description": "",
        "branches": ["main"],
        "published": env_id != "ss-dev" or dashboard_id % 3 != 0,
    }


_DATASET_TABLES = [
    "energy_readings",
    "substations",
    "subscribers",
    "payments",
    "tariffs",
    "incidents",
    "deliveries",
    "warehouses",
    "contracts",
    "tickets",
    "devices",
    "network_events",
    "budget_lines",
    "campaigns",
    "employees",
    "energy_balance",
    "purchases",
    "revenue",
    "cohorts",
    "accounts",
    "coverage",
    "repairs",
    "forecasts",
    "call_center",
]


def _dataset(dataset_id: int, env_id: str) -> dict[str, Any]:
    table = _DATASET_TABLES[(dataset_id - 1) % len(_DATASET_TABLES)]
    unmapped = ["region_code", "kwh_total"] if dataset_id == 15 else []
    columns = [
        {"name": "id", "type": "BIGINT", "mapped_to": "id"},
        {"name": "reported_at", "type": "TIMESTAMP", "mapped_to": "reported_at"},
        {"name": "object_id", "type": "BIGINT", "mapped_to": "object_id"},
        {"name": "value", "type": "NUMERIC", "mapped_to": "value"},
    ] + [{"name": name, "type": "VARCHAR", "mapped_to": None} for name in unmapped]
    review = {15: "changes_requested", 3: "pending", 8: "pending"}.get(dataset_id, "approved")
    dependents = [
        d for d in _DASHBOARD_IDS[env_id] if dataset_id in (1 + (d - 1) % 24, 1 + (d + 4) % 24)
    ]
    return {
        "id": dataset_id,
        "table_name": table,
        "schema": "mart" if dataset_id % 2 else "public",
        "database_id": 1,
        "environment": env_id,
        "columns": columns,
        "mappings": {c["name"]: c["mapped_to"] for c in columns},
        "unmapped_columns": unmapped,
        "dependencies": {"dashboards": dependents, "upstream_tables": [f"raw.{table}"]},
        "review": {
            "status": review,
            "reviewer": "smirnova" if review != "pending" else None,
            "comments": (
                ["колонки region_code и kwh_total без маппинга", "нет описания метрики value"]
                if dataset_id == 15
                else []
            ),
        },
        "row_count": 1000 * dataset_id + 250,
    }


def _migrations() -> list[dict[str, Any]]:
    statuses = ["planned", "done", "failed", "planned", "running"]
    return [
        {
            "id": mid,
            "title": f"Перенос пакета отчётов №{mid}",
            "source_env_id": "ss-dev" if mid % 2 else "staging",
            "target_env_id": "staging" if mid % 2 else "prod",
            "dashboard_ids": [mid * 2, mid * 2 + 1, 10] if mid == 3 else [mid * 2, mid * 2 + 1],
            "status": statuses[(mid - 1) % 5],
            "created_by": _OWNERS[mid % 5],
        }
        for mid in range(1, 6)
    ]


@dataclass
class UpstreamState:
    """Everything the sample upstream knows; writes change it."""

    environments: list[dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(ENVIRONMENTS))
    dashboards: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    datasets: dict[str, dict[int, dict[str, Any]]] = field(default_factory=dict)
    databases: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    migrations: dict[int, dict[str, Any]] = field(default_factory=dict)
    tasks: dict[str, dict[str, Any]] = field(default_factory=dict)
    maintenance: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    backups: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    tables: dict[str, dict[str, set[int]]] = field(default_factory=dict)
    """Each environment's dataset tables (`schema.table`) with their rows' ids."""
    statements: list[dict[str, Any]] = field(default_factory=list)
    """Every SQL text run, in order: `environment`, `sql`, `write` (a plan's count is a read)."""
    commits: list[dict[str, Any]] = field(default_factory=list)
    """Each commit made, with its message (tests read what a commit was sent with)."""
    next_id: int = 1000

    def new_id(self) -> int:
        """A fresh id for anything created by a write."""
        self.next_id += 1
        return self.next_id


def seeded_state() -> UpstreamState:
    """A fresh copy of the seeded data."""
    state = UpstreamState()
    for env_id, ids in _DASHBOARD_IDS.items():
        state.dashboards[env_id] = {i: _dashboard(i, env_id) for i in ids}
        state.datasets[env_id] = {i: _dataset(i, env_id) for i in _DATASET_IDS}
        state.tables[env_id] = table_rows(state.datasets[env_id])
        state.databases[env_id] = [
            {"id": 1, "name": "energy_dwh", "backend": "postgresql", "schemas": ["public", "mart"]},
            {"id": 2, "name": "crm", "backend": "clickhouse", "schemas": ["default"]},
        ]
        state.maintenance[env_id] = [
            {
                "id": 500 + len(env_id),
                "reason": "обновление Superset до 4.1",
                "starts_at": "2026-11-20T22:00:00Z",
                "ends_at": "2026-11-20T23:00:00Z",
                "status": "finished",
            }
        ]
        state.backups[env_id] = [
            {"id": 700 + len(env_id), "created_at": "2026-11-29T03:00:00Z", "status": "done"}
        ]
    state.migrations = {m["id"]: m for m in _migrations()}
    state.tasks = {
        "task-101": {"id": "task-101", "kind": "deploy", "status": "done", "result": "ok"},
        "task-102": {"id": "task-102", "kind": "validation", "status": "running", "result": None},
    }
    return state
