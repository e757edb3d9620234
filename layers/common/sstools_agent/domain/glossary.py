"""The words a person reads for the catalog's identifiers: each tool's Russian label and each
argument's, one home for both, exported for the /agent page (`make schema` writes
`web/src/lib/generated/glossary.json`), so a card names «Деплой дашбордов в другое окружение»
and «Дашборды», never `deploy_dashboard` or `dashboard_ids` (those stay in a tooltip and in the
arguments' disclosure). The words for the upstream's values (statuses, counts, times) are in
`wording.py`, which the plans use too (this module reads the catalog; the plans are part of it).
"""

from __future__ import annotations

import json
from typing import Any, Final

from sstools_agent.domain.read_retries import retry_glossary
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.ui_context import OBJECT_TYPE_LABELS
from sstools_agent.domain.wording import ROLE_WORDS, STATUS_WORDS

ARGUMENT_LABELS: Final = {
    "branch_name": "Имя ветки",
    "dashboard_id": "Дашборд",
    "dashboard_ids": "Дашборды",
    "database_id": "База данных",
    "dataset_id": "Датасет",
    "duration_minutes": "Длительность, мин",
    "event_id": "Окно обслуживания",
    "limit": "Не больше записей",
    "message": "Сообщение коммита",
    "migration_id": "Миграция",
    "note": "Пометка",
    "query": "Поиск",
    "reason": "Причина",
    "role_name": "Роль",
    "schema_name": "Схема",
    "source_env_id": "Откуда (окружение)",
    "sql": "SQL-запрос",
    "status": "Статус",
    "table_name": "Таблица",
    "target_env_id": "Куда (окружение)",
    "task_id": "Задача",
}
"""Every argument of the catalog, as a form labels it (a test keeps the list whole)."""

FIELD_LABELS: Final = {
    "access": "доступ",
    "action": "действие",
    "at": "когда",
    "backend": "движок",
    "backup": "резервная копия",
    "backups": "резервные копии",
    "branch": "ветка",
    "branches": "ветки",
    "by": "кто",
    "chars": "символов",
    "charts": "графиков",
    "checked_at": "проверено",
    "classification": "разбор SQL",
    "classified_chars": "разобрано символов",
    "column_count": "столбцов",
    "columns": "колонки",
    "comments": "комментарии",
    "commit": "коммит",
    "conflicts": "конфликты",
    "content_type": "тип файла",
    "created_at": "создана",
    "created_by": "автор",
    "csv": "CSV",
    "dashboards": "дашборды",
    "database_mappings": "соответствие баз данных",
    "databases": "базы данных",
    "dataset": "датасет",
    "datasets": "датасеты",
    "dependencies": "зависимости",
    "deployed": "задеплоены",
    "description": "описание",
    "destructive": "удаляет данные",
    "detail": "подробности",
    "ends_at": "конец",
    "environment": "окружение",
    "environments": "окружения",
    "event": "окно обслуживания",
    "events": "окна обслуживания",
    "failing": "с ошибками",
    "failing_charts": "графиков с ошибками",
    "first_rows": "первые строки",
    "git": "git-статус",
    "grants": "права",
    "id": "номер",
    "issues": "замечания",
    "items": "список",
    "json": "JSON",
    "key_count": "ключей",
    "keys": "ключи",
    "kind": "вид",
    "last_change": "последнее изменение",
    "last_commit": "последний коммит",
    "lines": "строк текста",
    "mapped_to": "маппинг",
    "mappings": "маппинг колонок",
    "migration": "миграция",
    "migrations": "миграции",
    "name": "имя",
    "not_read": "не прочитано",
    "objects": "объекты",
    "omitted_keys": "ещё полей",
    "operation": "операция",
    "owners": "владельцы",
    "published": "опубликован",
    "result": "результат",
    "review": "ревью",
    "reviewer": "ревьюер",
    "role": "роль",
    "row_count": "строк",
    "row_count_note": "как считаны строки",
    "rows": "строки",
    "rows_affected": "изменено строк",
    "schema": "схема",
    "schemas": "схемы",
    "size": "размер",
    "size_bytes": "размер, байт",
    "slow_queries": "медленных запросов",
    "starts_at": "начало",
    "statement_count": "инструкций",
    "statements": "инструкции",
    "status_counts": "по статусам",
    "superset_url": "адрес Superset",
    "tier": "уровень",
    "title": "название",
    "tools": "инструменты",
    "top_level": "верхний уровень",
    "total": "всего",
    "type": "тип",
    "unmapped_columns": "колонки без маппинга",
    "upstream_tables": "исходные таблицы",
    "validation": "валидация",
    "version": "версия",
}
"""The fields of the upstream's results (and of an attached file's facts) as an answer names them
(an argument that comes back in a result is named by ARGUMENT_LABELS); a test keeps the sample
upstream's fields covered."""

ENVIRONMENT_ARGUMENTS: Final = frozenset(
    spec.environment_argument for spec in CATALOG if spec.environment_argument is not None
) | {"source_env_id"}
"""Arguments that name an environment: the page offers the environments to choose from."""


def tool_label(name: str) -> str:
    """«Деплой дашбордов в другое окружение»: the tool's label as a heading; the name itself for
    a tool the catalog does not know."""
    spec = CATALOG.get(name)
    label = (spec.title_ru or spec.label_ru) if spec is not None else ""
    return label[:1].upper() + label[1:] if label else name


def glossary() -> dict[str, Any]:
    """What the page reads: tool and argument labels, the environment arguments, the object types
    (the conversation list's rows name them as the list's search finds them), which failed
    calls it offers to repeat (the server checks again), and the roles and tiers in words."""
    return {
        "objectTypes": {str(kind): label for kind, label in OBJECT_TYPE_LABELS.items()},
        "tools": {spec.name: tool_label(spec.name) for spec in CATALOG},
        "arguments": dict(sorted(ARGUMENT_LABELS.items())),
        "environmentArguments": sorted(ENVIRONMENT_ARGUMENTS),
        "retry": retry_glossary(),
        "roles": {role: words[0] for role, words in ROLE_WORDS.items()},
        "tiers": {tier: words[0] for tier, words in STATUS_WORDS["tier"].items()},
    }


def glossary_json() -> str:
    """The glossary as the committed file holds it."""
    return json.dumps(glossary(), ensure_ascii=False, indent=2) + "\n"
