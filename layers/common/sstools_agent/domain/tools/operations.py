"""Service operations: environments, background tasks, backups, maintenance windows."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from sstools_agent.domain.catalog_types import (
    DescribedImpact,
    EnvironmentSource,
    IntentTag,
    Operation,
    PlanRecipe,
    Routing,
    StatusCheck,
    ToolSpec,
)
from sstools_agent.domain.roles import ADMIN_ONLY, READ_ACCESS
from sstools_agent.domain.tools.arguments import (
    DATASET,
    MIGRATION,
    NoArgs,
    ObjectId,
    ToolArgs,
    WholeNumber,
)


class TaskStatusArgs(ToolArgs):
    task_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")


class RunBackupArgs(ToolArgs):
    note: str | None = Field(default=None, max_length=200)


class StartMaintenanceArgs(ToolArgs):
    reason: str = Field(min_length=1, max_length=500)
    duration_minutes: WholeNumber = Field(ge=1, le=1440)


class EndMaintenanceArgs(ToolArgs):
    event_id: ObjectId


_RUN_BACKUP_WORDS: Final = (
    "бэкап",
    "бекап",
    "резервн",
    "backup",
    "back up",
)
"""Words that route to run_backup."""

_START_MAINTENANCE_WORDS: Final = (
    "minute maintenance",
    "minute window",
    "into maintenance",
    "начни обслуж",
    "включи обслуж",
    "режим обслуж",
    "переведи в обслуж",
    "start maintenance",
)
"""Words that route to start_maintenance."""

_END_MAINTENANCE_WORDS: Final = (
    "сними с обслуж",
    "выведи из обслуж",
    "close the window",
    "заверши обслуж",
    "выключи обслуж",
    "закончи обслуж",
    "end maintenance",
    "stop maintenance",
    "finish maintenance",
)
"""Words that route to end_maintenance."""


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        name="list_environments",
        description="The Superset environments ss-tools manages, with their tiers.",
        label_ru="список окружений и их уровни",
        title_ru="список окружений",
        args_model=NoArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="GET",
        path="/api/environments",
        affinity=DATASET | MIGRATION,
        may_retry=True,
        routing=Routing(
            keywords=(
                "url",
                "ссылк",
                "окружен",
                "environment",
                "сред",
                "стенд",
                "envs",
                "инстанс",
            ),
            examples=(
                "какие есть окружения",
                "list the environments",
                "на каких стендах работает ss-tools",
                "which superset environments exist",
            ),
        ),
        intents=frozenset({IntentTag.DEFAULT}),
    ),
    ToolSpec(
        name="get_task_status",
        description="Status and result of a background task (deploy, validation, migration).",
        label_ru="статус фоновой задачи",
        args_model=TaskStatusArgs,
        example_args={"task_id": "task-101"},
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="GET",
        path="/api/tasks/{task_id}",
        affinity=DATASET | MIGRATION,
        may_retry=True,
        routing=Routing(
            keywords=(
                "задач",
                "task",
                "job",
                "прогресс",
                "progress",
                "готово ли",
                "is it done",
                "выполнилось",
            ),
            examples=(
                "какой статус задачи 42",
                "what is the status of task 42",
                "закончился ли деплой",
                "is the background job finished",
            ),
        ),
        intents=frozenset({IntentTag.DEFAULT}),
    ),
    ToolSpec(
        name="run_backup",
        status_check=StatusCheck("list_backups"),
        description="Back up the current environment's Superset metadata.",
        label_ru="резервная копия метаданных окружения",
        args_model=RunBackupArgs,
        example_args={"note": "before the release"},
        operation=Operation.WRITE,
        required_roles=ADMIN_ONLY,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/backups",
        impact=DescribedImpact("будет создана резервная копия окружения {env}"),
        plan=PlanRecipe.BACKUP,
        routing=Routing(
            keywords=(
                *_RUN_BACKUP_WORDS,
                "снапшот",
                "snapshot",
            ),
            examples=(
                "сделай бэкап окружения",
                "back up the superset metadata",
                "создай резервную копию",
                "take a snapshot before the release",
            ),
        ),
    ),
    ToolSpec(
        name="list_backups",
        description="The backups of the current environment's Superset metadata, newest first.",
        label_ru="резервные копии окружения",
        args_model=NoArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/backups",
        may_retry=True,
        routing=Routing(
            keywords=(
                "какие бэкап",
                "список бэкап",
                "последний бэкап",
                "последняя резервн",
                "резервные копии",
                "когда был бэкап",
                "list backups",
                "last backup",
                "latest backup",
                "which backups",
            ),
            examples=(
                "какие есть бэкапы",
                "когда был последний бэкап",
                "list the backups of this environment",
                "when was the last backup taken",
            ),
        ),
    ),
    ToolSpec(
        name="list_maintenance_events",
        description="Past and planned maintenance windows of the current environment.",
        label_ru="окна обслуживания окружения",
        args_model=NoArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/maintenance",
        may_retry=True,
        routing=Routing(
            keywords=(
                "техработ",
                "технические работы",
                "окна обслуж",
                "список обслуж",
                "история обслуж",
                "когда обслуж",
                "когда было обслуж",
                "запланированн",
                "maintenance windows",
                "maintenance events",
                "planned maintenance",
                "maintenance history",
                "when is maintenance",
            ),
            examples=(
                "когда следующее обслуживание",
                "list the maintenance windows",
                "какие были техработы",
                "show planned maintenance",
            ),
        ),
        intents=frozenset({IntentTag.MAINTENANCE}),
    ),
    ToolSpec(
        name="start_maintenance",
        status_check=StatusCheck("list_maintenance_events"),
        description="Put the current environment into maintenance mode for a while.",
        label_ru="начало обслуживания окружения",
        args_model=StartMaintenanceArgs,
        example_args={"reason": "upgrade", "duration_minutes": 30},
        operation=Operation.WRITE,
        required_roles=ADMIN_ONLY,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/maintenance",
        impact=DescribedImpact(
            "окружение {env} будет в режиме обслуживания {duration_minutes} мин"
        ),
        plan=PlanRecipe.MAINTENANCE_START,
        routing=Routing(
            keywords=(
                *_START_MAINTENANCE_WORDS,
                "maintenance window",
                "техработ",
                "enable maintenance",
                "begin maintenance",
                "put into maintenance",
                "maintenance mode",
            ),
            examples=(
                "включи режим обслуживания на час",
                "put staging into maintenance mode",
                "начни техработы",
                "start maintenance for 30 minutes",
            ),
        ),
        intents=frozenset({IntentTag.MAINTENANCE}),
    ),
    ToolSpec(
        name="end_maintenance",
        status_check=StatusCheck("list_maintenance_events"),
        description="End a maintenance window of the current environment.",
        label_ru="завершение обслуживания",
        args_model=EndMaintenanceArgs,
        example_args={"event_id": 506},
        operation=Operation.WRITE,
        required_roles=ADMIN_ONLY,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/maintenance/{event_id}/end",
        impact=DescribedImpact("окружение {env} выйдет из режима обслуживания"),
        plan=PlanRecipe.MAINTENANCE_END,
        routing=Routing(
            keywords=(
                *_END_MAINTENANCE_WORDS,
                "заканчивай",
                "end it",
                "close it",
                "останови обслуж",
                "disable maintenance",
                "exit maintenance",
            ),
            examples=(
                "заверши обслуживание",
                "end the maintenance window",
                "выключи режим обслуживания",
                "stop maintenance now",
            ),
        ),
        intents=frozenset({IntentTag.MAINTENANCE}),
    ),
)
