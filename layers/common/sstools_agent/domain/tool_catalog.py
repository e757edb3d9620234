"""The 22 agent tools, each declared once: schema, upstream call, operation, roles, affinity.

Every other module (role policy, affinity, guardrails, the upstream client, the agent) reads these
declarations; none keeps a list of tool names of its own. The upstream contract the paths rely on is
documented in docs/upstream-api.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field

from sstools_agent.domain.catalog_types import (
    DASHBOARD_NOUN,
    CountedImpact,
    DescribedImpact,
    EnvironmentSource,
    Operation,
    ToolSpec,
)
from sstools_agent.domain.roles import ADMIN_ONLY, READ_ACCESS, WRITE_ACCESS
from sstools_agent.domain.ui_context import ObjectType

DASHBOARD: Final = frozenset({ObjectType.DASHBOARD})
DATASET: Final = frozenset({ObjectType.DATASET})
MIGRATION: Final = frozenset({ObjectType.MIGRATION})
EVERY_OBJECT: Final = frozenset(ObjectType)

ObjectId = Annotated[int, Field(ge=1, le=10**15)]
EnvId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
DashboardIds = Annotated[list[ObjectId], Field(min_length=1, max_length=100)]


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown arguments are refused, never passed along."""

    model_config = ConfigDict(extra="forbid")


class NoArgs(ToolArgs):
    """A tool that takes no arguments."""


class SearchDashboardsArgs(ToolArgs):
    query: str | None = Field(default=None, max_length=200, description="Words to search titles")
    dashboard_ids: list[ObjectId] | None = Field(
        default=None, max_length=100, description="Return exactly these dashboards"
    )
    limit: int = Field(default=20, ge=1, le=200)


class HealthSummaryArgs(ToolArgs):
    dashboard_id: ObjectId | None = Field(default=None, description="One dashboard, or all")


class DeployDashboardArgs(ToolArgs):
    dashboard_ids: DashboardIds
    source_env_id: EnvId = Field(description="Environment the dashboards come from")
    target_env_id: EnvId = Field(description="Environment to deploy to")


class DashboardArgs(ToolArgs):
    dashboard_id: ObjectId


class MigrationArgs(ToolArgs):
    migration_id: ObjectId


class ExecuteMigrationArgs(ToolArgs):
    migration_id: ObjectId
    target_env_id: EnvId = Field(description="Environment the migration writes to")


class ListMigrationsArgs(ToolArgs):
    status: str | None = Field(default=None, pattern=r"^(planned|running|done|failed)$")
    limit: int = Field(default=20, ge=1, le=200)


class CreateBranchArgs(ToolArgs):
    dashboard_id: ObjectId
    branch_name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._/-]+$")


class CommitChangesArgs(ToolArgs):
    dashboard_id: ObjectId
    message: str = Field(min_length=1, max_length=500)


class ExploreDatabaseArgs(ToolArgs):
    dataset_id: ObjectId | None = Field(default=None, description="One dataset, in detail")
    database_id: ObjectId | None = None
    schema_name: str | None = Field(default=None, max_length=128)


class FormatSqlArgs(ToolArgs):
    sql: str = Field(min_length=1, max_length=100_000)


class AuditPermissionsArgs(ToolArgs):
    dataset_id: ObjectId | None = None
    role_name: str | None = Field(default=None, max_length=128)


class ExecuteSqlArgs(ToolArgs):
    database_id: ObjectId
    sql: str = Field(min_length=1, max_length=100_000)
    limit: int = Field(default=1000, ge=1, le=10_000)


class CreateDatasetArgs(ToolArgs):
    database_id: ObjectId
    schema_name: str = Field(min_length=1, max_length=128)
    table_name: str = Field(min_length=1, max_length=128)


class TaskStatusArgs(ToolArgs):
    task_id: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_-]+$")


class RunBackupArgs(ToolArgs):
    note: str | None = Field(default=None, max_length=200)


class StartMaintenanceArgs(ToolArgs):
    reason: str = Field(min_length=1, max_length=500)
    duration_minutes: int = Field(ge=1, le=1440)


class EndMaintenanceArgs(ToolArgs):
    event_id: ObjectId


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        name="show_capabilities",
        description="List what the agent can do for this user on this page.",
        args_model=NoArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        affinity=EVERY_OBJECT,
    ),
    ToolSpec(
        name="search_dashboards",
        description=(
            "Find dashboards in the current environment by title words or ids; returns git "
            "status, last change, validation result and owners."
        ),
        args_model=SearchDashboardsArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/dashboards",
        affinity=DASHBOARD | DATASET | MIGRATION,
        may_retry=True,
    ),
    ToolSpec(
        name="get_health_summary",
        description="Health of dashboards in the current environment: failing charts, slow SQL.",
        args_model=HealthSummaryArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/health",
        affinity=DASHBOARD,
        may_retry=True,
    ),
    ToolSpec(
        name="deploy_dashboard",
        description="Deploy dashboards from a source environment to a target environment.",
        args_model=DeployDashboardArgs,
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.ARGUMENT,
        environment_argument="target_env_id",
        method="POST",
        path="/api/dashboards/deploy",
        affinity=DASHBOARD,
        impact=CountedImpact("dashboard_ids", DASHBOARD_NOUN),
    ),
    ToolSpec(
        name="run_llm_validation",
        description="Start an LLM review of a dashboard; returns a task id and the findings.",
        args_model=DashboardArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/dashboards/{dashboard_id}/validation",
        affinity=DASHBOARD,
        # It changes nothing in Superset, but each POST starts a paid task: no blind retry.
        may_retry=False,
    ),
    ToolSpec(
        name="run_llm_documentation",
        description="Generate documentation for a dashboard and store it as its description.",
        args_model=DashboardArgs,
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/dashboards/{dashboard_id}/documentation",
        affinity=DASHBOARD,
        impact=CountedImpact("dashboard_id", DASHBOARD_NOUN),
    ),
    ToolSpec(
        name="execute_migration",
        description="Run a planned migration of Superset objects into the target environment.",
        args_model=ExecuteMigrationArgs,
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.ARGUMENT,
        environment_argument="target_env_id",
        method="POST",
        path="/api/migrations/{migration_id}/execute",
        affinity=DASHBOARD | MIGRATION,
        impact=DescribedImpact("миграция {migration_id} изменит объекты в окружении {env}"),
    ),
    ToolSpec(
        name="create_branch",
        description="Create a git branch for a dashboard in the current environment.",
        args_model=CreateBranchArgs,
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/dashboards/{dashboard_id}/git/branches",
        affinity=DASHBOARD,
        impact=DescribedImpact("будет создана ветка {branch_name} дашборда {dashboard_id}"),
    ),
    ToolSpec(
        name="commit_changes",
        description="Commit a dashboard's pending changes to git with a message.",
        args_model=CommitChangesArgs,
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/dashboards/{dashboard_id}/git/commits",
        affinity=DASHBOARD,
        impact=CountedImpact("dashboard_id", DASHBOARD_NOUN),
    ),
    ToolSpec(
        name="superset_explore_database",
        description=(
            "Explore databases, schemas and datasets; for one dataset: columns and their "
            "mappings, dependent dashboards, review status."
        ),
        args_model=ExploreDatabaseArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/database-explorer",
        affinity=DATASET,
        may_retry=True,
    ),
    ToolSpec(
        name="superset_format_sql",
        description="Format a SQL text for reading; executes nothing.",
        args_model=FormatSqlArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="POST",
        path="/api/sql/format",
        affinity=DATASET,
        may_retry=True,
    ),
    ToolSpec(
        name="superset_audit_permissions",
        description="Who can see a dataset (or what a role can see) in the current environment.",
        args_model=AuditPermissionsArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/permissions/audit",
        affinity=DATASET,
        may_retry=True,
    ),
    ToolSpec(
        name="superset_execute_sql",
        description="Run SQL on a database of the current environment (SELECTs for analysts).",
        args_model=ExecuteSqlArgs,
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/sql/execute",
        affinity=DATASET,
        sql_argument="sql",
        may_retry=True,
    ),
    ToolSpec(
        name="superset_create_dataset",
        description="Create a Superset dataset from a table in the current environment.",
        args_model=CreateDatasetArgs,
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/datasets",
        affinity=DATASET,
        impact=DescribedImpact("будет создан датасет {schema_name}.{table_name}"),
    ),
    ToolSpec(
        name="get_task_status",
        description="Status and result of a background task (deploy, validation, migration).",
        args_model=TaskStatusArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="GET",
        path="/api/tasks/{task_id}",
        affinity=DATASET | MIGRATION,
        may_retry=True,
    ),
    ToolSpec(
        name="list_environments",
        description="The Superset environments ss-tools manages, with their tiers.",
        args_model=NoArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="GET",
        path="/api/environments",
        affinity=DATASET | MIGRATION,
        may_retry=True,
    ),
    ToolSpec(
        name="run_backup",
        description="Back up the current environment's Superset metadata.",
        args_model=RunBackupArgs,
        operation=Operation.WRITE,
        required_roles=ADMIN_ONLY,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/backups",
        impact=DescribedImpact("будет создана резервная копия окружения {env}"),
    ),
    ToolSpec(
        name="list_maintenance_events",
        description="Past and planned maintenance windows of the current environment.",
        args_model=NoArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/maintenance",
        may_retry=True,
    ),
    ToolSpec(
        name="start_maintenance",
        description="Put the current environment into maintenance mode for a while.",
        args_model=StartMaintenanceArgs,
        operation=Operation.WRITE,
        required_roles=ADMIN_ONLY,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/maintenance",
        impact=DescribedImpact(
            "окружение {env} будет в режиме обслуживания {duration_minutes} мин"
        ),
    ),
    ToolSpec(
        name="end_maintenance",
        description="End a maintenance window of the current environment.",
        args_model=EndMaintenanceArgs,
        operation=Operation.WRITE,
        required_roles=ADMIN_ONLY,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/maintenance/{event_id}/end",
        impact=DescribedImpact("окружение {env} выйдет из режима обслуживания"),
    ),
    ToolSpec(
        name="list_migrations",
        description="Migrations between environments: planned, running, done, failed.",
        args_model=ListMigrationsArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="GET",
        path="/api/migrations",
        affinity=MIGRATION,
        may_retry=True,
    ),
    ToolSpec(
        name="get_migration_plan",
        description="What a migration would change: objects, mappings, conflicts.",
        args_model=MigrationArgs,
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="GET",
        path="/api/migrations/{migration_id}/plan",
        affinity=MIGRATION,
        may_retry=True,
    ),
)


class ToolCatalog:
    """Look-up over tool declarations, in declaration order."""

    def __init__(self, tools: Iterable[ToolSpec]) -> None:
        self._by_name: dict[str, ToolSpec] = {}
        for tool in tools:
            if tool.name in self._by_name:
                raise ValueError(f"tool {tool.name!r} is declared twice")
            self._by_name[tool.name] = tool

    def get(self, name: str) -> ToolSpec | None:
        """The tool with this name, or None for a name the catalog does not know."""
        return self._by_name.get(name)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names in declaration order."""
        return tuple(self._by_name)


CATALOG: Final = ToolCatalog(TOOLS)
CAPABILITIES_TOOL: Final = "show_capabilities"
