"""Migration tools: list migrations, read a plan, execute one."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from sstools_agent.domain.catalog_types import (
    DescribedImpact,
    EnvironmentSource,
    Operation,
    PageReader,
    PlanRecipe,
    Routing,
    StatusCheck,
    ToolSpec,
)
from sstools_agent.domain.roles import READ_ACCESS, WRITE_ACCESS
from sstools_agent.domain.tools.arguments import (
    DASHBOARD,
    MIGRATION,
    EnvId,
    ObjectId,
    ToolArgs,
    WholeNumber,
)
from sstools_agent.domain.ui_context import ObjectType


class MigrationArgs(ToolArgs):
    migration_id: ObjectId


class ExecuteMigrationArgs(ToolArgs):
    migration_id: ObjectId
    target_env_id: EnvId = Field(description="Environment the migration writes to")


class ListMigrationsArgs(ToolArgs):
    status: str | None = Field(default=None, pattern=r"^(planned|running|done|failed)$")
    limit: WholeNumber = Field(default=20, ge=1, le=200)


_EXECUTE_MIGRATION_WORDS: Final = (
    "запускай",
    "run number",
    "kick off",
    "launch",
    "rerun",
    "re-run",
    "выполни миграц",
    "запусти миграц",
    "run migration",
    "run the migration",
    "execute migration",
    "execute the migration",
)
"""Words that route to execute_migration."""

_LIST_MIGRATIONS_WORDS: Final = (
    "переносы",
    "переносов",
    "planned ones",
    "failed ones",
    "running ones",
    "запланированные",
    "упавшие",
)
"""Words that route to list_migrations."""


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        name="execute_migration",
        status_check=StatusCheck("get_migration_plan", {"migration_id": "migration_id"}),
        description="Run a planned migration of Superset objects into the target environment.",
        label_ru="запуск миграции",
        args_model=ExecuteMigrationArgs,
        example_args={"migration_id": 3, "target_env_id": "staging"},
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.ARGUMENT,
        environment_argument="target_env_id",
        method="POST",
        path="/api/migrations/{migration_id}/execute",
        affinity=DASHBOARD | MIGRATION,
        impact=DescribedImpact("миграция {migration_id} изменит объекты в окружении {env}"),
        plan=PlanRecipe.MIGRATION,
        routing=Routing(
            keywords=(
                *_EXECUTE_MIGRATION_WORDS,
                "kick it off",
                "run it",
                "перезапуст",
                "примени миграц",
                "apply migration",
                "apply the migration",
                "start the migration",
            ),
            examples=(
                "запусти миграцию в прод",
                "execute the migration now",
                "примени эту миграцию",
                "run the planned migration",
            ),
        ),
    ),
    ToolSpec(
        name="list_migrations",
        description="Migrations between environments: planned, running, done, failed.",
        label_ru="список миграций и их статусы",
        title_ru="список миграций",
        args_model=ListMigrationsArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="GET",
        path="/api/migrations",
        affinity=MIGRATION,
        may_retry=True,
        routing=Routing(
            keywords=(
                *_LIST_MIGRATIONS_WORDS,
                "planned",
                "миграци",
                "migration",
            ),
            examples=(
                "какие миграции сейчас идут",
                "list all migrations",
                "покажи упавшие миграции",
                "which migrations failed",
            ),
        ),
    ),
    ToolSpec(
        name="get_migration_plan",
        description="What a migration would change: objects, mappings, conflicts.",
        label_ru="план миграции: что будет создано и обновлено",
        title_ru="план миграции",
        args_model=MigrationArgs,
        example_args={"migration_id": 3},
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="GET",
        path="/api/migrations/{migration_id}/plan",
        affinity=MIGRATION,
        may_retry=True,
        routing=Routing(
            keywords=(
                "contain",
                "содерж",
                "план миграц",
                "migration plan",
                "plan of the migration",
                "что изменит",
                "what will change",
                "what would change",
                "конфликт",
                "conflict",
                "маппинг",
                "mapping",
                "план",
                "plan",
            ),
            examples=(
                "покажи план миграции",
                "what will this migration change",
                "какие конфликты у миграции",
                "show the object mappings of the migration",
            ),
        ),
        describes=PageReader(ObjectType.MIGRATION, "migration_id"),
    ),
)
