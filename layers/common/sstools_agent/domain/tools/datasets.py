"""Dataset and SQL tools: explore, format, permissions, execute, create."""

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
    ToolSpec,
)
from sstools_agent.domain.roles import READ_ACCESS, WRITE_ACCESS
from sstools_agent.domain.tools.arguments import (
    DATASET,
    ObjectId,
    ToolArgs,
    WholeNumber,
)
from sstools_agent.domain.ui_context import ObjectType


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
    limit: WholeNumber = Field(default=1000, ge=1, le=10_000)


class CreateDatasetArgs(ToolArgs):
    database_id: ObjectId
    schema_name: str = Field(min_length=1, max_length=128)
    table_name: str = Field(min_length=1, max_length=128)


_SUPERSET_EXPLORE_DATABASE_WORDS: Final = (
    "датасет",
    "dataset",
    "колонк",
    "column",
    "схем",
    "schema",
    "зависим",
    "depend",
    "базы данных",
)
"""Words that route to superset_explore_database."""

_SUPERSET_FORMAT_SQL_WORDS: Final = (
    "don't run",
    "не выполняй",
    "tidy",
    "prettify",
    "beautify",
    "причеши",
    "отформатир",
    "format",
    "pretty",
    "читаем",
)
"""Words that route to superset_format_sql."""

_SUPERSET_AUDIT_PERMISSIONS_WORDS: Final = (
    "allowed to",
    "who can",
    "кто может",
    "права на",
    "у кого есть",
    "доступ",
    "permission",
    "access",
    "кто видит",
    "who can see",
)
"""Words that route to superset_audit_permissions."""

_SUPERSET_EXECUTE_SQL_WORDS: Final = (
    "строк из",
    "строки из",
    "rows from",
    "rows of",
    "sample values",
    "sample rows",
    "примеры значений",
    "запрос",
)
"""Words that route to superset_execute_sql."""

_SUPERSET_CREATE_DATASET_WORDS: Final = (
    "register",
    "зарегистрир",
    "создай датасет",
    "новый датасет",
    "create dataset",
    "create a dataset",
    "new dataset",
)
"""Words that route to superset_create_dataset."""


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        name="superset_explore_database",
        description=(
            "Explore databases, schemas and datasets; for one dataset: columns and their "
            "mappings, dependent dashboards, review status."
        ),
        label_ru="обзор датасета, его колонок и зависимостей, баз данных",
        title_ru="обзор датасетов и баз данных",
        args_model=ExploreDatabaseArgs,
        example_args={"dataset_id": 15},
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/database-explorer",
        affinity=DATASET,
        may_retry=True,
        routing=Routing(
            keywords=(
                *_SUPERSET_EXPLORE_DATABASE_WORDS,
                "таблиц",
                "table",
                "база данных",
                "database",
                "поля",
                "fields",
            ),
            examples=(
                "какие колонки в этом датасете",
                "show the schema of this dataset",
                "от чего зависит этот датасет",
                "which tables does the dataset use",
            ),
        ),
        describes=PageReader(ObjectType.DATASET, "dataset_id"),
    ),
    ToolSpec(
        name="superset_format_sql",
        description="Format a SQL text for reading; executes nothing.",
        label_ru="форматирование SQL",
        args_model=FormatSqlArgs,
        example_args={"sql": "select day, sum(kwh) from energy group by day"},
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.NONE,
        method="POST",
        path="/api/sql/format",
        affinity=DATASET,
        may_retry=True,
        routing=Routing(
            keywords=(
                *_SUPERSET_FORMAT_SQL_WORDS,
                "форматир",
                "beautif",
            ),
            examples=(
                "отформатируй этот sql",
                "format this query nicely",
                "сделай запрос читаемым",
                "pretty print the sql",
            ),
        ),
    ),
    ToolSpec(
        name="superset_audit_permissions",
        description="Who can see a dataset (or what a role can see) in the current environment.",
        label_ru="аудит прав доступа к датасетам",
        args_model=AuditPermissionsArgs,
        example_args={"dataset_id": 15},
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/permissions/audit",
        affinity=DATASET,
        may_retry=True,
        routing=Routing(
            keywords=(
                *_SUPERSET_AUDIT_PERMISSIONS_WORDS,
                "прав",
                "роль",
                "role",
                "видимост",
            ),
            examples=(
                "у кого есть доступ к датасету",
                "who can see this dataset",
                "какие права у роли аналитик",
                "audit the permissions of this dataset",
            ),
        ),
    ),
    ToolSpec(
        name="superset_execute_sql",
        description="Run SQL on a database of the current environment (SELECTs for analysts).",
        label_ru="выполнение SQL (SELECT — чтение, остальное — изменение)",
        title_ru="выполнение SQL",
        args_model=ExecuteSqlArgs,
        example_args={"database_id": 1, "sql": "SELECT day, kwh FROM energy LIMIT 10"},
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/sql/execute",
        affinity=DATASET,
        sql_argument="sql",
        may_retry=True,
        plan=PlanRecipe.SQL_WRITE,
        routing=Routing(
            keywords=(
                *_SUPERSET_EXECUTE_SQL_WORDS,
                "run it",
                "execute it",
                "select",
                "sql",
                "query",
                "посчитай",
                "count",
                "сколько строк",
                "how many rows",
                "выполни запрос",
                "update",
                "delete",
                "insert",
            ),
            examples=(
                "выполни запрос select count(*) from sales",
                "run this sql query",
                "сколько строк в таблице заказов",
                "how many rows are in the orders table",
            ),
        ),
    ),
    ToolSpec(
        name="superset_create_dataset",
        description="Create a Superset dataset from a table in the current environment.",
        label_ru="создание датасета из таблицы",
        args_model=CreateDatasetArgs,
        example_args={"database_id": 1, "schema_name": "public", "table_name": "energy_hourly"},
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/datasets",
        affinity=DATASET,
        impact=DescribedImpact("будет создан датасет {schema_name}.{table_name}"),
        plan=PlanRecipe.DATASET,
        routing=Routing(
            keywords=(
                *_SUPERSET_CREATE_DATASET_WORDS,
                "создать датасет",
                "заведи датасет",
            ),
            examples=(
                "создай датасет из таблицы orders",
                "create a dataset from the sales table",
                "сделай новый датасет",
                "add a dataset for this table",
            ),
        ),
    ),
)
