"""What the seeds state, written out once for every test that checks against them."""

from __future__ import annotations

from typing import Any, Final

# Story 1, acceptance 3 and 4 (seed 002), copied verbatim.
SEED_DASHBOARD_TOOLS: Final = frozenset(
    {
        "search_dashboards",
        "get_health_summary",
        "deploy_dashboard",
        "run_llm_validation",
        "run_llm_documentation",
        "execute_migration",
        "create_branch",
        "commit_changes",
        "show_capabilities",
    }
)
SEED_DATASET_TOOLS: Final = frozenset(
    {
        "superset_explore_database",
        "superset_format_sql",
        "superset_audit_permissions",
        "superset_execute_sql",
        "superset_create_dataset",
        "search_dashboards",
        "get_task_status",
        "list_environments",
        "show_capabilities",
    }
)

# The intent table (seed 000): what an unknown query and a
# maintenance query are offered besides show_capabilities.
SEED_DEFAULT_TOOLS: Final = frozenset(
    {"search_dashboards", "get_health_summary", "list_environments", "get_task_status"}
)
SEED_MAINTENANCE_TOOLS: Final = frozenset(
    {"list_maintenance_events", "start_maintenance", "end_maintenance"}
)

# Every tool a seed names (seed 002 also names run_backup, an admin-only write); the seeds' catalog
# had 22, the two migration tools being this project's choice (docs/policy.md).
SEED_NAMED_TOOLS: Final = (
    SEED_DASHBOARD_TOOLS
    | SEED_DATASET_TOOLS
    | SEED_DEFAULT_TOOLS
    | SEED_MAINTENANCE_TOOLS
    | {"run_backup"}
)
SEED_CATALOG_SIZE: Final = 22

# The page of the seed's example: /agent?objectType=dashboard&objectId=10&envId=ss-dev
DASHBOARD_10: Final[dict[str, Any]] = {
    "contextVersion": 1,
    "objectType": "dashboard",
    "objectId": "10",
    "objectName": "Отчёт по энергопотреблению",
    "envId": "ss-dev",
    "route": "/dashboards/10",
}

# The same page as the link to /agent names it (its query parameters, no version).
DASHBOARD_10_LINK: Final[dict[str, Any]] = {
    key: value for key, value in DASHBOARD_10.items() if key != "contextVersion"
}

# A dataset page of staging, the scenarios' dataset.
DATASET_15: Final[dict[str, Any]] = {
    "contextVersion": 1,
    "objectType": "dataset",
    "objectId": "15",
    "envId": "staging",
    "route": "/datasets/15",
}
