"""Dashboard tools: search, health, deployment, LLM review and documentation, git."""

from __future__ import annotations

from typing import Final

from pydantic import Field

from sstools_agent.domain.catalog_types import (
    DASHBOARD_NOUN,
    CountedImpact,
    DescribedImpact,
    EnvironmentSource,
    IntentTag,
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
    DATASET,
    MIGRATION,
    DashboardIds,
    EnvId,
    ObjectId,
    ToolArgs,
    WholeNumber,
)
from sstools_agent.domain.ui_context import ObjectType


class SearchDashboardsArgs(ToolArgs):
    query: str | None = Field(default=None, max_length=200, description="Words to search titles")
    dashboard_ids: list[ObjectId] | None = Field(
        default=None, max_length=100, description="Return exactly these dashboards"
    )
    limit: WholeNumber = Field(default=20, ge=1, le=200)


class HealthSummaryArgs(ToolArgs):
    dashboard_id: ObjectId | None = Field(default=None, description="One dashboard, or all")


class DeployDashboardArgs(ToolArgs):
    dashboard_ids: DashboardIds
    source_env_id: EnvId = Field(description="Environment the dashboards come from")
    target_env_id: EnvId = Field(description="Environment to deploy to")


class DashboardArgs(ToolArgs):
    dashboard_id: ObjectId


class CreateBranchArgs(ToolArgs):
    dashboard_id: ObjectId
    branch_name: str = Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9._/-]+$")


class CommitChangesArgs(ToolArgs):
    dashboard_id: ObjectId
    message: str = Field(min_length=1, max_length=500)


_SEARCH_DASHBOARDS_WORDS: Final = (
    "where's the",
    "where is the",
    "где дашборд",
    "другие дашборд",
    "who owns",
    "are they called",
    "найди",
    "поиск",
    "search",
    "как называ",
    "названи",
    "владел",
    "owner",
)
"""Words that route to search_dashboards."""

_GET_HEALTH_SUMMARY_WORDS: Final = (
    "good shape",
    "в норме",
    "предупрежд",
    "warning",
    "красн",
    "здоров",
    "health",
    "ошибк",
    "failing",
    "медлен",
    "сломан",
    "broken",
)
"""Words that route to get_health_summary."""

_DEPLOY_DASHBOARD_WORDS: Final = (
    "закинь",
    "push this",
    "push to",
    "ship this",
    "ship the",
    "ship to",
    "pull the",
    "перекин",
    "перенеси",
    "push this dashboard",
    "ship it",
    "деплой",
    "разверн",
    "выкат",
    "deploy",
    "promote",
    "перенеси дашборд",
    "перенести дашборд",
)
"""Words that route to deploy_dashboard."""

_RUN_LLM_VALIDATION_WORDS: Final = (
    "прогони ревью",
    "запусти ревью",
    "run a review",
    "запусти проверк",
    "повторную проверк",
    "llm review",
    "llm-проверк",
    "llm-ревью",
    "llm check",
    "llm-провер",
    "валидац",
    "validat",
)
"""Words that route to run_llm_validation."""

_RUN_LLM_DOCUMENTATION_WORDS: Final = (
    "write up",
    "документ",
    "document",
    "описани",
    "опиши",
    "describe",
    "description",
)
"""Words that route to run_llm_documentation."""

_COMMIT_CHANGES_WORDS: Final = (
    "коммит",
    "закоммит",
    "commit",
)
"""Words that route to commit_changes."""


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        name="search_dashboards",
        description=(
            "Find dashboards in the current environment by title words or ids; returns git "
            "status, last change, validation result and owners."
        ),
        label_ru="поиск дашбордов по названию или id, их git-статус и валидация",
        title_ru="поиск дашбордов",
        args_model=SearchDashboardsArgs,
        example_args={"query": "энергопотребление"},
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/dashboards",
        affinity=DASHBOARD | DATASET | MIGRATION,
        may_retry=True,
        routing=Routing(
            keywords=(
                *_SEARCH_DASHBOARDS_WORDS,
                "are there any",
                "any other",
                "найти",
                "ищи",
                "find",
                "список дашборд",
                "какие дашборд",
                "list dashboards",
                "статус",
                "status",
                "информац",
                "сведен",
                "last modified",
                "обновлял",
                "who changed",
            ),
            examples=(
                "найди дашборды про продажи",
                "find dashboards about revenue",
                "кто владелец этого дашборда и когда он обновлялся",
                "show the status of this dashboard",
            ),
        ),
        describes=PageReader(ObjectType.DASHBOARD, "dashboard_ids", many=True),
        intents=frozenset({IntentTag.DEFAULT, IntentTag.DASHBOARD_QUERY}),
    ),
    ToolSpec(
        name="get_health_summary",
        description="Health of dashboards in the current environment: failing charts, slow SQL.",
        label_ru="здоровье дашбордов: графики с ошибками, медленные запросы",
        title_ru="здоровье дашбордов",
        args_model=HealthSummaryArgs,
        example_args={"dashboard_id": 10},
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="GET",
        path="/api/environments/{env_id}/health",
        affinity=DASHBOARD,
        may_retry=True,
        routing=Routing(
            keywords=(
                *_GET_HEALTH_SUMMARY_WORDS,
                "в порядке",
                "error",
                "падает",
                "падают",
                "fail",
                "slow",
                "сломал",
                "не грузит",
                "not loading",
                "тормоз",
            ),
            examples=(
                "какие графики падают с ошибками",
                "which charts are failing or slow",
                "почему дашборд медленно грузится",
                "health of dashboards in this environment",
            ),
        ),
        intents=frozenset({IntentTag.DEFAULT}),
    ),
    ToolSpec(
        name="deploy_dashboard",
        status_check=StatusCheck(
            "search_dashboards",
            {"dashboard_ids": "dashboard_ids"},
            environment_from="target_env_id",
        ),
        description="Deploy dashboards from a source environment to a target environment.",
        label_ru="деплой дашбордов в другое окружение",
        args_model=DeployDashboardArgs,
        example_args={
            "dashboard_ids": [10, 11],
            "source_env_id": "ss-dev",
            "target_env_id": "staging",
        },
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.ARGUMENT,
        environment_argument="target_env_id",
        method="POST",
        path="/api/dashboards/deploy",
        affinity=DASHBOARD,
        impact=CountedImpact("dashboard_ids", DASHBOARD_NOUN),
        plan=PlanRecipe.DEPLOY,
        routing=Routing(
            keywords=(
                *_DEPLOY_DASHBOARD_WORDS,
                "задеплой",
                "publish",
                "опубликуй",
                "перенеси в прод",
            ),
            examples=(
                "задеплой этот дашборд в staging",
                "deploy this dashboard to prod",
                "выкати отчёт на прод",
                "promote the dashboard from dev to staging",
            ),
        ),
    ),
    ToolSpec(
        name="run_llm_validation",
        description=(
            "Start a new, paid LLM review of a dashboard (the user confirms it first); returns a "
            "task id and the findings. What the last review found is in search_dashboards' "
            "validation: read that to answer a question about it."
        ),
        label_ru="LLM-ревью (валидация) дашборда",
        title_ru="LLM-ревью дашборда",
        args_model=DashboardArgs,
        example_args={"dashboard_id": 10},
        operation=Operation.READ,
        required_roles=READ_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/dashboards/{dashboard_id}/validation",
        affinity=DASHBOARD,
        # It changes nothing in Superset, but each POST starts a paid task: no blind retry, and
        # never without a card that says so (a question about the last review is a read).
        may_retry=False,
        cost="запускает платную LLM-задачу",
        plan=PlanRecipe.VALIDATION,
        routing=Routing(
            keywords=(
                *_RUN_LLM_VALIDATION_WORDS,
                "через llm",
                "провалид",
                "провер",
                "review",
                "ревью",
                "аудит дашборд",
                "check the dashboard",
                "lint",
            ),
            examples=(
                "проверь этот дашборд на ошибки в логике",
                "run an llm review of this dashboard",
                "провалидируй дашборд",
                "validate the dashboard before release",
            ),
        ),
    ),
    ToolSpec(
        name="run_llm_documentation",
        description="Generate documentation for a dashboard and store it as its description.",
        label_ru="LLM-документация дашборда",
        args_model=DashboardArgs,
        example_args={"dashboard_id": 10},
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/dashboards/{dashboard_id}/documentation",
        affinity=DASHBOARD,
        impact=CountedImpact("dashboard_id", DASHBOARD_NOUN),
        plan=PlanRecipe.DOCUMENTATION,
        cost="запускает платную LLM-задачу",
        routing=Routing(
            keywords=(*_RUN_LLM_DOCUMENTATION_WORDS,),
            examples=(
                "сгенерируй документацию для дашборда",
                "write documentation for this dashboard",
                "добавь описание к дашборду",
                "describe what this dashboard shows",
            ),
        ),
    ),
    ToolSpec(
        name="create_branch",
        status_check=StatusCheck(
            "search_dashboards", {"dashboard_ids": "dashboard_id"}, frozenset({"dashboard_ids"})
        ),
        description="Create a git branch for a dashboard in the current environment.",
        label_ru="создание git-ветки дашборда",
        args_model=CreateBranchArgs,
        example_args={"dashboard_id": 10, "branch_name": "feature/kpi"},
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/dashboards/{dashboard_id}/git/branches",
        affinity=DASHBOARD,
        impact=DescribedImpact("будет создана ветка {branch_name} дашборда {dashboard_id}"),
        plan=PlanRecipe.BRANCH,
        routing=Routing(
            keywords=(
                "ветк",
                "бранч",
                "branch",
            ),
            examples=(
                "создай ветку для дашборда",
                "create a git branch for this dashboard",
                "заведи новую ветку feature",
                "make a branch",
            ),
        ),
    ),
    ToolSpec(
        name="commit_changes",
        status_check=StatusCheck(
            "search_dashboards", {"dashboard_ids": "dashboard_id"}, frozenset({"dashboard_ids"})
        ),
        description="Commit a dashboard's pending changes to git with a message.",
        label_ru="коммит изменений дашборда в git",
        args_model=CommitChangesArgs,
        example_args={"dashboard_id": 10, "message": "fix colours"},
        operation=Operation.WRITE,
        required_roles=WRITE_ACCESS,
        environment_source=EnvironmentSource.UI_CONTEXT,
        method="POST",
        path="/api/environments/{env_id}/dashboards/{dashboard_id}/git/commits",
        affinity=DASHBOARD,
        impact=CountedImpact("dashboard_id", DASHBOARD_NOUN),
        plan=PlanRecipe.COMMIT,
        routing=Routing(
            keywords=(
                *_COMMIT_CHANGES_WORDS,
                "сохрани изменения в git",
                "save changes to git",
            ),
            examples=(
                "закоммить изменения дашборда",
                "commit the pending changes with a message",
                "сохрани изменения в гит",
                "commit my changes",
            ),
        ),
    ),
)
