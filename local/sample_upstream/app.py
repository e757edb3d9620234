"""The sample upstream's HTTP API: the endpoints of docs/upstream-api.md over seeded state.

Every request must carry a valid service JWT (`Authorization: Bearer`) and a valid user JWT
(`X-User-JWT`); the user's role decides what they may do here too (writes need an engineer, prod
writes an admin, backups and maintenance an admin), independently of the agent's own checks.
Fault injection wraps the whole app (`/_control/...`).
"""

import copy
import hashlib
import itertools
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Annotated, Any

import sqlglot
from fastapi import APIRouter, Body, Depends, FastAPI, Header, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from local.fault_injection import FaultInjectionMiddleware, FaultPlan
from local.sample_upstream.seed import UpstreamState, seeded_state
from local.sample_upstream.tables import NotEvaluated, counted, deleted
from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.identity import (
    SERVICE_SUBJECT,
    AuthenticationError,
    UserTokenVerifier,
)
from sstools_agent.domain.roles import Role
from sstools_agent.domain.sql_classifier import classify_sql


class Caller(BaseModel):
    """Who is calling: the verified user behind the agent's service identity."""

    user: str
    role: Role


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class DeployBody(_Body):
    dashboard_ids: list[int]
    source_env_id: str
    target_env_id: str


class MigrationBody(_Body):
    target_env_id: str


class BranchBody(_Body):
    branch_name: str


class CommitBody(_Body):
    message: str


class FormatBody(_Body):
    sql: str


class SqlBody(_Body):
    database_id: int
    sql: str
    limit: int = 1000


class DatasetBody(_Body):
    database_id: int
    schema_name: str
    table_name: str


class BackupBody(_Body):
    note: str | None = None


class MaintenanceBody(_Body):
    reason: str
    duration_minutes: int


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _tier(state: UpstreamState, env_id: str) -> str:
    for environment in state.environments:
        if environment["id"] == env_id:
            return str(environment["tier"])
    raise HTTPException(404, f"environment {env_id!r} not found")


def _require(
    caller: Caller, state: UpstreamState, env_id: str, *, admin_only: bool = False
) -> None:
    """The upstream's own write rule: engineer in dev/staging, admin in prod or for admin tools."""
    needed = Role.ADMIN if admin_only or _tier(state, env_id) == "prod" else Role.ENGINEER
    if not caller.role.satisfies(needed):
        raise HTTPException(403, f"{caller.role} may not do this in {env_id}; {needed} required")


router = APIRouter()
_task_numbers = itertools.count(200)


def data(request: Request) -> UpstreamState:
    """The app's state (seeded at start, changed by writes)."""
    return request.app.state.data  # type: ignore[no-any-return]


def caller(
    request: Request,
    authorization: Annotated[str, Header()] = "",
    x_user_jwt: Annotated[str, Header()] = "",
) -> Caller:
    """Both identities verified: the agent's service token and the user's token."""
    try:
        service = request.app.state.service_verifier.verify(authorization.removeprefix("Bearer "))
        user = request.app.state.user_verifier.verify(x_user_jwt)
    except AuthenticationError as error:
        raise HTTPException(401, error.detail) from None
    if service.subject != SERVICE_SUBJECT:
        raise HTTPException(401, "the service token is not the agent's")
    if user.role is None:
        raise HTTPException(403, "the user has no ss-tools role")
    return Caller(user=user.subject, role=user.role)


CallerDep = Annotated[Caller, Depends(caller)]
StateDep = Annotated[UpstreamState, Depends(data)]


def task(state: UpstreamState, kind: str, by: str, result: Any) -> dict[str, Any]:
    """Records a finished background task, as ss-tools does for deploys and validations."""
    task_id = f"task-{next(_task_numbers)}"
    state.tasks[task_id] = {
        "id": task_id,
        "kind": kind,
        "status": "done",
        "result": result,
        "started_by": by,
        "finished_at": _now(),
    }
    return state.tasks[task_id]


def dashboard(state: UpstreamState, env_id: str, dashboard_id: int) -> dict[str, Any]:
    _tier(state, env_id)
    found = state.dashboards.get(env_id, {}).get(dashboard_id)
    if found is None:
        raise HTTPException(404, f"dashboard {dashboard_id} not found in {env_id}")
    return found


def migration(state: UpstreamState, migration_id: int) -> dict[str, Any]:
    if migration_id not in state.migrations:
        raise HTTPException(404, f"migration {migration_id} not found")
    return state.migrations[migration_id]


async def http_error(request: Request, error: HTTPException) -> JSONResponse:
    code = {401: "UNAUTHORIZED", 403: "FORBIDDEN", 404: "NOT_FOUND"}.get(
        error.status_code, "TOOL_FAILURE"
    )
    return JSONResponse({"code": code, "detail": error.detail}, status_code=error.status_code)


@router.get("/api/environments")
def list_environments(who: CallerDep, state: StateDep) -> dict[str, Any]:
    return {"environments": state.environments}


@router.get("/api/tasks/{task_id}")
def get_task(task_id: str, who: CallerDep, state: StateDep) -> dict[str, Any]:
    if task_id not in state.tasks:
        raise HTTPException(404, f"task {task_id} not found")
    return state.tasks[task_id]


@router.get("/api/environments/{env_id}/dashboards")
def search_dashboards(
    env_id: str,
    *,
    who: CallerDep,
    state: StateDep,
    query: str | None = None,
    dashboard_ids: Annotated[list[int] | None, Query()] = None,
    limit: int = 20,
) -> dict[str, Any]:
    _tier(state, env_id)
    found = list(state.dashboards[env_id].values())
    if dashboard_ids:
        found = [d for d in found if d["id"] in dashboard_ids]
    if query:
        words = query.lower().split()
        found = [d for d in found if any(w in d["title"].lower() for w in words)]
    return {"environment": env_id, "total": len(found), "dashboards": found[:limit]}


def health_report(
    env_id: str, dashboards: Iterable[dict[str, Any]], dashboard_id: int | None = None
) -> dict[str, Any]:
    """The health endpoint's answer over an environment's dashboards (one, when `dashboard_id`
    is given): each one's status from its validation, and how many are failing."""
    items = [
        {
            "dashboard_id": d["id"],
            "title": d["title"],
            "status": {"failed": "failing", "warnings": "warning"}.get(
                d["validation"]["status"], "ok"
            ),
            "failing_charts": 2 if d["validation"]["status"] == "failed" else 0,
            "slow_queries": d["id"] % 3,
        }
        for d in dashboards
        if dashboard_id is None or d["id"] == dashboard_id
    ]
    failing = sum(1 for item in items if item["status"] == "failing")
    return {"environment": env_id, "total": len(items), "failing": failing, "items": items}


@router.get("/api/environments/{env_id}/health")
def health(
    env_id: str, who: CallerDep, state: StateDep, dashboard_id: int | None = None
) -> dict[str, Any]:
    _tier(state, env_id)
    report = health_report(env_id, state.dashboards[env_id].values(), dashboard_id)
    if dashboard_id is not None and not report["items"]:
        raise HTTPException(404, f"dashboard {dashboard_id} not found in {env_id}")
    return report


@router.post("/api/dashboards/deploy")
def deploy(body: DeployBody, who: CallerDep, state: StateDep) -> dict[str, Any]:
    _require(who, state, body.target_env_id)
    sources = [dashboard(state, body.source_env_id, i) for i in body.dashboard_ids]
    for source in sources:
        deployed = copy.deepcopy(source)
        previous = state.dashboards[body.target_env_id].get(source["id"])
        deployed.update(
            environment=body.target_env_id,
            version=(previous["version"] + 1) if previous else 1,
            last_change={"at": _now(), "by": who.user},
        )
        deployed["git"] = {**deployed["git"], "status": "clean"}
        state.dashboards[body.target_env_id][source["id"]] = deployed
    done = task(state, "deploy", who.user, {"deployed": body.dashboard_ids})
    return {
        "task_id": done["id"],
        "status": "done",
        "target_env_id": body.target_env_id,
        "deployed": body.dashboard_ids,
    }


@router.post("/api/environments/{env_id}/dashboards/{dashboard_id}/validation")
def validate(env_id: str, dashboard_id: int, who: CallerDep, state: StateDep) -> dict[str, Any]:
    found = dashboard(state, env_id, dashboard_id)
    found["validation"]["checked_at"] = _now()
    done = task(state, "validation", who.user, found["validation"])
    return {"task_id": done["id"], "dashboard_id": dashboard_id, **found["validation"]}


@router.post("/api/environments/{env_id}/dashboards/{dashboard_id}/documentation")
def document(env_id: str, dashboard_id: int, who: CallerDep, state: StateDep) -> dict[str, Any]:
    _require(who, state, env_id)
    found = dashboard(state, env_id, dashboard_id)
    found["description"] = (
        f"«{found['title']}»: {found['charts']} графиков на датасетах {found['datasets']}; "
        f"владельцы {', '.join(found['owners'])}."
    )
    found["last_change"] = {"at": _now(), "by": who.user}
    return {"dashboard_id": dashboard_id, "description": found["description"]}


@router.post("/api/environments/{env_id}/dashboards/{dashboard_id}/git/branches")
def branch(
    env_id: str, dashboard_id: int, body: BranchBody, who: CallerDep, state: StateDep
) -> dict[str, Any]:
    _require(who, state, env_id)
    found = dashboard(state, env_id, dashboard_id)
    if body.branch_name in found["branches"]:
        raise HTTPException(409, f"branch {body.branch_name} already exists")
    found["branches"].append(body.branch_name)
    return {
        "dashboard_id": dashboard_id,
        "branch": body.branch_name,
        "branches": found["branches"],
    }


@router.post("/api/environments/{env_id}/dashboards/{dashboard_id}/git/commits")
def commit(
    env_id: str, dashboard_id: int, body: CommitBody, who: CallerDep, state: StateDep
) -> dict[str, Any]:
    _require(who, state, env_id)
    found = dashboard(state, env_id, dashboard_id)
    sha = f"{(hash(body.message) + state.new_id()) % 16**7:07x}"
    found["git"] = {**found["git"], "status": "clean", "last_commit": sha}
    found["last_change"] = {"at": _now(), "by": who.user}
    made = {"environment": env_id, "dashboard_id": dashboard_id, "message": body.message}
    state.commits.append(made)
    return {"dashboard_id": dashboard_id, "commit": sha, "message": body.message}


@router.get("/api/environments/{env_id}/database-explorer")
def explore(
    env_id: str,
    *,
    who: CallerDep,
    state: StateDep,
    dataset_id: int | None = None,
    database_id: int | None = None,
    schema_name: str | None = None,
) -> dict[str, Any]:
    _tier(state, env_id)
    if dataset_id is not None:
        found = state.datasets[env_id].get(dataset_id)
        if found is None:
            raise HTTPException(404, f"dataset {dataset_id} not found in {env_id}")
        return {"environment": env_id, "dataset": found}
    datasets = [
        {k: d[k] for k in ("id", "table_name", "schema", "database_id")}
        for d in state.datasets[env_id].values()
        if (database_id is None or d["database_id"] == database_id)
        and (schema_name is None or d["schema"] == schema_name)
    ]
    return {
        "environment": env_id,
        "databases": state.databases[env_id],
        "total": len(datasets),
        "datasets": datasets,
    }


@router.post("/api/sql/format")
def format_sql(body: FormatBody, who: CallerDep) -> dict[str, Any]:
    try:
        pretty = ";\n".join(s.sql(pretty=True) for s in sqlglot.parse(body.sql) if s)
    except sqlglot.errors.SqlglotError as error:
        raise HTTPException(422, f"SQL does not parse: {error}") from None
    return {"sql": pretty}


@router.get("/api/environments/{env_id}/permissions/audit")
def audit_permissions(
    env_id: str,
    who: CallerDep,
    state: StateDep,
    dataset_id: int | None = None,
    role_name: str | None = None,
) -> dict[str, Any]:
    _tier(state, env_id)
    grants = [
        {"role": "Gamma", "dataset_id": d, "access": "read"} for d in state.datasets[env_id]
    ] + [{"role": "Alpha", "dataset_id": d, "access": "write"} for d in (1, 2, 15)]
    grants = [g for g in grants if dataset_id is None or g["dataset_id"] == dataset_id]
    grants = [g for g in grants if role_name is None or g["role"] == role_name]
    return {"environment": env_id, "total": len(grants), "grants": grants}


@router.post("/api/environments/{env_id}/sql/execute")
def execute_sql(env_id: str, body: SqlBody, who: CallerDep, state: StateDep) -> dict[str, Any]:
    _tier(state, env_id)
    classification = classify_sql(body.sql)
    tables = state.tables[env_id]
    writes = classification.operation is Operation.WRITE
    state.statements.append({"environment": env_id, "sql": body.sql, "write": writes})
    if writes:
        _require(who, state, env_id)
        try:
            affected = deleted(body.sql, tables)
        except NotEvaluated:
            affected = 3  # a statement this sample does not evaluate
        return {
            "environment": env_id,
            "statements": list(classification.statement_kinds),
            "rows_affected": affected,
        }
    try:
        count = counted(body.sql, tables)
    except NotEvaluated as unknown:
        raise HTTPException(400, f"cannot evaluate: {unknown}") from None
    if count is not None:
        return {"environment": env_id, "columns": ["count"], "row_count": 1, "rows": [[count]]}
    rows = min(body.limit, 10_000)
    return {
        "environment": env_id,
        "columns": ["object_id", "day", "kwh", "comment", "reading_hash"],
        "row_count": rows,
        "rows": [
            [
                r % 50 + 1,
                f"2026-11-{1 + r % 28:02d}",
                round(100 + r * 0.37, 2),
                f"показание счётчика №{r}, сверено",
                hashlib.sha256(f"{env_id}:{r}".encode()).hexdigest(),
            ]
            for r in range(rows)
        ],
    }


@router.post("/api/environments/{env_id}/datasets")
def create_dataset(
    env_id: str, body: DatasetBody, who: CallerDep, state: StateDep
) -> dict[str, Any]:
    _require(who, state, env_id)
    dataset_id = state.new_id()
    state.datasets[env_id][dataset_id] = {
        "id": dataset_id,
        "table_name": body.table_name,
        "schema": body.schema_name,
        "database_id": body.database_id,
        "environment": env_id,
        "columns": [],
        "mappings": {},
        "unmapped_columns": [],
        "dependencies": {"dashboards": []},
        "review": {"status": "pending", "reviewer": None, "comments": []},
        "row_count": 0,
    }
    return {"dataset_id": dataset_id, "environment": env_id}


@router.get("/api/environments/{env_id}/backups")
def backups(env_id: str, who: CallerDep, state: StateDep) -> dict[str, Any]:
    _tier(state, env_id)
    newest_first = sorted(state.backups[env_id], key=lambda b: b["created_at"], reverse=True)
    return {"environment": env_id, "backups": newest_first}


@router.post("/api/environments/{env_id}/backups")
def backup(
    env_id: str, who: CallerDep, state: StateDep, body: Annotated[BackupBody, Body()]
) -> dict[str, Any]:
    _require(who, state, env_id, admin_only=True)
    record = {
        "id": state.new_id(),
        "created_at": _now(),
        "status": "done",
        "note": body.note,
        "by": who.user,
    }
    state.backups[env_id].append(record)
    return {"environment": env_id, "backup": record}


@router.get("/api/environments/{env_id}/maintenance")
def maintenance(env_id: str, who: CallerDep, state: StateDep) -> dict[str, Any]:
    _tier(state, env_id)
    return {"environment": env_id, "events": state.maintenance[env_id]}


@router.post("/api/environments/{env_id}/maintenance")
def start_maintenance(
    env_id: str, body: MaintenanceBody, who: CallerDep, state: StateDep
) -> dict[str, Any]:
    _require(who, state, env_id, admin_only=True)
    event = {
        "id": state.new_id(),
        "reason": body.reason,
        "starts_at": _now(),
        "duration_minutes": body.duration_minutes,
        "status": "active",
        "by": who.user,
    }
    state.maintenance[env_id].append(event)
    return {"environment": env_id, "event": event}


@router.post("/api/environments/{env_id}/maintenance/{event_id}/end")
def end_maintenance(env_id: str, event_id: int, who: CallerDep, state: StateDep) -> dict[str, Any]:
    _require(who, state, env_id, admin_only=True)
    for event in state.maintenance[env_id]:
        if event["id"] == event_id:
            event.update(status="finished", ends_at=_now())
            return {"environment": env_id, "event": event}
    raise HTTPException(404, f"maintenance event {event_id} not found in {env_id}")


@router.get("/api/migrations")
def list_migrations(
    who: CallerDep, state: StateDep, status: str | None = None, limit: int = 20
) -> dict[str, Any]:
    found = [m for m in state.migrations.values() if status is None or m["status"] == status]
    return {"total": len(found), "migrations": found[:limit]}


@router.get("/api/migrations/{migration_id}/plan")
def migration_plan(migration_id: int, who: CallerDep, state: StateDep) -> dict[str, Any]:
    found = migration(state, migration_id)
    target = state.dashboards[found["target_env_id"]]
    return {
        "migration": found,
        "objects": [
            {"dashboard_id": i, "action": "update" if i in target else "create"}
            for i in found["dashboard_ids"]
        ],
        "database_mappings": {"energy_dwh": "energy_dwh"},
        "conflicts": [],
    }


@router.post("/api/migrations/{migration_id}/execute")
def execute_migration(
    migration_id: int, body: MigrationBody, who: CallerDep, state: StateDep
) -> dict[str, Any]:
    found = migration(state, migration_id)
    if body.target_env_id != found["target_env_id"]:
        raise HTTPException(422, f"migration {migration_id} targets {found['target_env_id']}")
    _require(who, state, body.target_env_id)
    for dashboard_id in found["dashboard_ids"]:
        source = state.dashboards[found["source_env_id"]].get(dashboard_id)
        if source is not None:
            moved = copy.deepcopy(source) | {"environment": body.target_env_id}
            state.dashboards[body.target_env_id][dashboard_id] = moved
    found["status"] = "done"
    done = task(state, "migration", who.user, {"migration_id": migration_id})
    return {"task_id": done["id"], "migration": found}


def create_app(
    user_verifier: UserTokenVerifier,
    service_verifier: UserTokenVerifier,
    *,
    state: UpstreamState | None = None,
    plan: FaultPlan | None = None,
) -> FaultInjectionMiddleware:
    """The sample upstream as an ASGI app (FastAPI behind fault injection); serve it with
    `serve_with_faults`, so its reset faults reset."""
    app = FastAPI(title="ss-tools sample upstream", version="1.0")
    app.state.data = state or seeded_state()
    app.state.user_verifier = user_verifier
    app.state.service_verifier = service_verifier
    app.add_exception_handler(HTTPException, http_error)  # type: ignore[arg-type]
    app.include_router(router)
    return FaultInjectionMiddleware(app, plan or FaultPlan())
