"""The plan of a change: what a write will do, read from the upstream before its card is shown.

The upstream has no dry run, so a plan is written from its existing read calls: a write tool's
declaration names a `PlanRecipe`, and the recipe's writer (`RECIPES`) says which reads it makes
(read tools of the catalog, each in an environment) and writes the plan from what they returned.
The plan is what the card shows in words (a title naming the object and where it goes, a short
list of what will change and what is there now), and its `state` is what an approval is bound
to: the objects, versions and last-changed stamps the card showed. A plan whose reads failed is
still a plan: it says it could not be read and why (`unread_plan`), and binds nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from sstools_agent.domain.catalog_types import PlanRecipe
from sstools_agent.domain.dashboard_plans import (
    BranchPlan,
    CommitPlan,
    DocumentationPlan,
    ValidationPlan,
)
from sstools_agent.domain.deploy_plans import DeployPlan
from sstools_agent.domain.operation_plans import (
    BackupPlan,
    DatasetPlan,
    MaintenanceEndPlan,
    MaintenanceStartPlan,
    MigrationPlan,
)
from sstools_agent.domain.plan_types import ChangePlan, PlanRead, PlanWriter
from sstools_agent.domain.sql_plans import SqlWritePlan

RECIPES: Final[Mapping[PlanRecipe, PlanWriter]] = {
    PlanRecipe.DEPLOY: DeployPlan(),
    PlanRecipe.SQL_WRITE: SqlWritePlan(),
    PlanRecipe.MIGRATION: MigrationPlan(),
    PlanRecipe.COMMIT: CommitPlan(),
    PlanRecipe.BRANCH: BranchPlan(),
    PlanRecipe.DOCUMENTATION: DocumentationPlan(),
    PlanRecipe.DATASET: DatasetPlan(),
    PlanRecipe.BACKUP: BackupPlan(),
    PlanRecipe.MAINTENANCE_START: MaintenanceStartPlan(),
    PlanRecipe.MAINTENANCE_END: MaintenanceEndPlan(),
    PlanRecipe.VALIDATION: ValidationPlan(),
}


def plan_reads(recipe: PlanRecipe, args: Mapping[str, Any], env_id: str | None) -> list[PlanRead]:
    """The reads `recipe` makes for a call with `args` (validated arguments) in `env_id` (the
    call's environment)."""
    return RECIPES[recipe].reads(args, env_id)


def written_plan(
    recipe: PlanRecipe, args: Mapping[str, Any], env_id: str | None, outputs: Mapping[str, Any]
) -> ChangePlan:
    """The plan from what each read returned (`outputs` by `PlanRead.key`)."""
    return RECIPES[recipe].written(args, env_id, outputs)


def unread_plan(
    recipe: PlanRecipe, args: Mapping[str, Any], env_id: str | None, why: str
) -> ChangePlan:
    """The plan of a call whose reads failed: what is known without them, and why nothing
    more is (a SQL card still shows its statement; its count is then unknown)."""
    return RECIPES[recipe].unread(args, env_id, why)


def plan_objects(recipe: PlanRecipe, args: Mapping[str, Any]) -> dict[str, Any]:
    """What a plan of `recipe` is about, of a call's validated `args`: an edit that changes it
    is another plan, which the card's approval does not cover."""
    return {name: args.get(name) for name in RECIPES[recipe].objects}
