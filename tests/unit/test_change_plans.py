"""The plan of a change, written from what its reads returned: what the card says in words, and
what an approval is bound to."""

from __future__ import annotations

from typing import Any

import pytest

from sstools_agent.domain.catalog_types import PlanRecipe
from sstools_agent.domain.change_plans import plan_reads, unread_plan, written_plan
from sstools_agent.domain.tool_catalog import CATALOG


def dashboard(dashboard_id: int, **fields: Any) -> dict[str, Any]:
    return {
        "id": dashboard_id,
        "title": "Отчёт по энергопотреблению",
        "version": 5,
        "last_change": {"at": "2026-11-12T14:15:00Z", "by": "petrov"},
        "charts": 8,
        "datasets": [10, 15],
        "git": {"status": "clean"},
    } | fields


def deploy(ids: list[int], target: str = "prod") -> dict[str, Any]:
    return {"dashboard_ids": ids, "source_env_id": "ss-dev", "target_env_id": target}


def found(*dashboards: dict[str, Any]) -> dict[str, Any]:
    return {"total": len(dashboards), "dashboards": list(dashboards)}


SOURCE_10 = dashboard(10, last_change={"at": "2026-11-04T10:15:00Z", "by": "ivanova"}, charts=9)


def test_the_deploy_is_declared_with_its_plan_and_reads_both_environments():
    spec = CATALOG.get("deploy_dashboard")
    assert spec is not None
    assert spec.plan is PlanRecipe.DEPLOY
    reads = plan_reads(PlanRecipe.DEPLOY, deploy([10, 11]), "prod")
    assert [(r.key, r.tool, r.env_id) for r in reads] == [
        ("source", "search_dashboards", "ss-dev"),
        ("target", "search_dashboards", "prod"),
    ]
    assert reads[0].args == {"dashboard_ids": [10, 11], "limit": 2}


def test_a_deploy_over_a_dashboard_names_it_what_prod_holds_and_what_replaces_it():
    plan = written_plan(
        PlanRecipe.DEPLOY,
        deploy([10]),
        "prod",
        {"source": found(SOURCE_10), "target": found(dashboard(10))},
    )
    assert plan.title == "Деплой дашборда #10 «Отчёт по энергопотреблению»: ss-dev → prod"
    assert plan.lines == (
        "#10 «Отчёт по энергопотреблению»: версия 5 в prod (изменена 12 ноября 14:15 UTC, "
        "petrov) будет заменена версией из ss-dev (изменена 4 ноября 10:15 UTC, ivanova); "
        "графиков 8 → 9",
    )
    assert plan.unread is None
    assert plan.digest is not None


def test_a_dashboard_prod_does_not_have_yet_is_created_and_a_dirty_source_is_said():
    source = dashboard(42, title="Потери электроэнергии", git={"status": "modified"})
    plan = written_plan(
        PlanRecipe.DEPLOY, deploy([42]), "prod", {"source": found(source), "target": found()}
    )
    assert plan.lines == (
        "#42 «Потери электроэнергии»: в prod его ещё нет — будет создан из ss-dev "
        "(версия изменена 12 ноября 14:15 UTC, petrov); в ss-dev есть незакоммиченные изменения",
    )


def test_a_dashboard_missing_from_the_source_is_said_not_guessed():
    plan = written_plan(
        PlanRecipe.DEPLOY, deploy([99]), "prod", {"source": found(), "target": found()}
    )
    assert plan.title == "Деплой дашборда #99: ss-dev → prod"
    assert plan.lines == ("#99: в ss-dev такого дашборда нет — деплоить нечего",)


def test_many_dashboards_are_counted_after_the_first_lines():
    ids = list(range(1, 21))
    sources = found(*(dashboard(i) for i in ids))
    plan = written_plan(
        PlanRecipe.DEPLOY, deploy(ids), "prod", {"source": sources, "target": sources}
    )
    assert plan.title == "Деплой 20 дашбордов: ss-dev → prod"
    assert len(plan.lines) == 12
    assert plan.lines[-1] == "… и ещё 9 дашбордов"


def test_the_approval_binds_versions_and_stamps_not_the_words():
    reads = {"source": found(SOURCE_10), "target": found(dashboard(10))}
    shown = written_plan(PlanRecipe.DEPLOY, deploy([10]), "prod", reads)
    # A title renamed in the source is the same plan to bind (the words are not the state)...
    renamed = {"source": found(SOURCE_10 | {"title": "Энергия"}), "target": reads["target"]}
    assert written_plan(PlanRecipe.DEPLOY, deploy([10]), "prod", renamed).digest == shown.digest
    # ...a deploy to prod meanwhile (a new version, a new stamp) is not
    redeployed = dashboard(
        10, version=6, last_change={"at": "2026-12-03T05:00:00Z", "by": "orlova"}
    )
    moved = {"source": reads["source"], "target": found(redeployed)}
    assert written_plan(PlanRecipe.DEPLOY, deploy([10]), "prod", moved).digest != shown.digest
    # and so is a dashboard that appeared in prod meanwhile
    created = {"source": found(SOURCE_10), "target": found()}
    assert written_plan(PlanRecipe.DEPLOY, deploy([10]), "prod", created).digest != shown.digest


def test_a_plan_that_could_not_be_read_says_why_and_binds_nothing():
    plan = unread_plan(PlanRecipe.DEPLOY, deploy([10]), "prod", "ss-tools не ответил за 5 с")
    assert plan.title == "Деплой дашборда #10: ss-dev → prod"
    assert plan.unread == "План изменения прочитать не удалось: ss-tools не ответил за 5 с."
    assert plan.lines == ()
    assert plan.digest is None


def sql(statement: str) -> dict[str, Any]:
    return {"database_id": 1, "sql": statement, "limit": 1000}


def counted(rows: int) -> dict[str, Any]:
    return {"count": {"columns": ["count"], "rows": [[rows]], "row_count": 1}}


def test_a_delete_is_counted_by_a_read_derived_from_its_own_where():
    (read,) = plan_reads(
        PlanRecipe.SQL_WRITE, sql("DELETE FROM mart.employees WHERE id < 10"), "staging"
    )
    assert (read.key, read.tool, read.env_id) == ("count", "superset_execute_sql", "staging")
    assert read.args == {
        "database_id": 1,
        "sql": "SELECT COUNT(*) FROM mart.employees WHERE id < 10",
        "limit": 1,
    }
    plan = written_plan(
        PlanRecipe.SQL_WRITE, sql("delete from mart.employees where id < 10"), "staging", counted(9)
    )
    assert plan.title == "SQL в staging: DELETE"
    assert plan.statement == "DELETE FROM mart.employees\nWHERE\n  id < 10"
    assert plan.lines == ("DELETE в mart.employees: удалит 9 строк",)


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE t SET a = 1 FROM u WHERE t.id = u.id",
        "DELETE FROM t USING u WHERE t.id = u.id",
        "WITH x AS (SELECT 1) DELETE FROM t WHERE id IN (SELECT * FROM x)",
        "DELETE FROM t WHERE id = 1; DELETE FROM u WHERE id = 2",
        "INSERT INTO t VALUES (1)",
        "DELETE FROM t WHERE pg_terminate_backend(4) IS NOT NULL",
    ],
)
def test_a_statement_whose_shape_gives_no_count_says_the_rows_are_unknown(statement: str):
    assert plan_reads(PlanRecipe.SQL_WRITE, sql(statement), "staging") == []
    plan = written_plan(PlanRecipe.SQL_WRITE, sql(statement), "staging", {})
    assert "сколько строк затронет — неизвестно" in plan.lines[0]
    assert plan.statement


@pytest.mark.parametrize(
    ("rows", "said"),
    [
        (1, "1 строку"),
        (3, "3 строки"),
        (99, "99 строк"),
        (1234, "около 1 200 строк"),
        (15250, "около 15 000 строк"),
    ],
)
def test_the_count_is_said_and_bound_in_bands(rows: int, said: str):
    statement = sql("UPDATE mart.employees SET active = false WHERE id > 5")
    plan = written_plan(PlanRecipe.SQL_WRITE, statement, "prod", counted(rows))
    assert plan.lines == (f"UPDATE в mart.employees: изменит {said}",)
    # a busy table moving within the band keeps the card; a count out of it does not
    if rows >= 100:
        near = written_plan(PlanRecipe.SQL_WRITE, statement, "prod", counted(rows + 1))
        assert near.digest == plan.digest
    far = written_plan(PlanRecipe.SQL_WRITE, statement, "prod", counted(rows * 3))
    assert far.digest != plan.digest


def test_a_sql_plan_whose_count_failed_still_shows_the_statement():
    plan = unread_plan(
        PlanRecipe.SQL_WRITE,
        sql("DELETE FROM t WHERE id = 1"),
        "prod",
        "ss-tools ответил ошибкой 500",
    )
    assert plan.statement == "DELETE FROM t\nWHERE\n  id = 1"
    assert plan.unread == "План изменения прочитать не удалось: ss-tools ответил ошибкой 500."
    assert plan.digest is None


def test_a_commit_of_a_clean_dashboard_says_it_may_be_empty():
    args = {"dashboard_id": 10, "message": "fix"}
    clean = dashboard(10, git={"status": "clean", "branch": "main", "last_commit": "abc1234"})
    plan = written_plan(PlanRecipe.COMMIT, args, "ss-dev", {"dashboard": found(clean)})
    assert plan.lines == (
        "незакоммиченных изменений нет (последний коммит abc1234): коммит с сообщением «fix» "
        "может оказаться пустым",
    )


def test_a_branch_that_exists_is_said_to_be_refused():
    args = {"dashboard_id": 10, "branch_name": "main"}
    there = dashboard(10, branches=["main"])
    plan = written_plan(PlanRecipe.BRANCH, args, "ss-dev", {"dashboard": found(there)})
    assert plan.lines == ("ветка main уже есть — ss-tools откажет, ничего не изменится",)


def test_a_write_to_a_dashboard_the_environment_does_not_have_says_so():
    args = {"dashboard_id": 99, "message": "fix"}
    plan = written_plan(PlanRecipe.COMMIT, args, "prod", {"dashboard": found()})
    assert plan.title == "Коммит дашборда #99 в git (prod)"
    assert plan.lines == ("в prod дашборда #99 нет — ss-tools откажет, ничего не изменится",)


def test_a_migration_plan_says_what_it_creates_replaces_and_where_it_is_set_to_go():
    plan_output = {
        "migration": {
            "id": 4,
            "title": "Перенос",
            "source_env_id": "staging",
            "target_env_id": "prod",
            "status": "planned",
        },
        "objects": [
            {"dashboard_id": 8, "action": "create"},
            {"dashboard_id": 9, "action": "update"},
        ],
        "conflicts": ["дашборд 9: в prod изменён вручную"],
    }
    args = {"migration_id": 4, "target_env_id": "staging"}
    plan = written_plan(PlanRecipe.MIGRATION, args, "staging", {"plan": plan_output})
    assert plan.title == "Миграция #4 «Перенос»: staging → staging"
    assert plan.lines == (
        "миграция настроена на prod, а не на staging — ss-tools её отклонит, ничего не изменится",
        "будут созданы в staging: дашборд 8",
        "будут заменены в staging: дашборд 9",
        "конфликты: дашборд 9: в prod изменён вручную",
    )


def test_maintenance_over_an_open_window_says_one_is_open():
    events = {
        "events": [
            {
                "id": 9,
                "reason": "миграция БД",
                "starts_at": "2026-12-01T20:00:00Z",
                "status": "active",
                "by": "petrov",
            },
        ]
    }
    args = {"reason": "обновление", "duration_minutes": 45}
    plan = written_plan(PlanRecipe.MAINTENANCE_START, args, "prod", {"windows": events})
    assert plan.title == "Обслуживание prod на 45 мин"
    assert plan.lines == (
        "сейчас уже идёт обслуживание #9 «миграция БД», с 1 декабря 20:00 UTC, petrov",
        "начнётся обслуживание на 45 мин: «обновление»",
    )


def test_a_new_dataset_on_a_table_without_one_names_the_database():
    output = {"databases": [{"id": 1, "name": "energy_dwh"}], "datasets": []}
    args = {"database_id": 1, "schema_name": "mart", "table_name": "losses"}
    plan = written_plan(PlanRecipe.DATASET, args, "staging", {"datasets": output})
    assert plan.lines == ("датасета на таблице mart.losses нет — будет создан (база energy_dwh)",)
