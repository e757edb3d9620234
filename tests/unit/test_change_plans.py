"""The plan of a change, written from what its reads returned: what the card says in words, and
what an approval is bound to."""

from __future__ import annotations

from typing import Any

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
    reads = plan_reads(PlanRecipe.DEPLOY, deploy([10, 11]))
    assert [(r.key, r.tool, r.env_id) for r in reads] == [
        ("source", "search_dashboards", "ss-dev"),
        ("target", "search_dashboards", "prod"),
    ]
    assert reads[0].args == {"dashboard_ids": [10, 11], "limit": 2}


def test_a_deploy_over_a_dashboard_names_it_what_prod_holds_and_what_replaces_it():
    plan = written_plan(
        PlanRecipe.DEPLOY,
        deploy([10]),
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
        PlanRecipe.DEPLOY, deploy([42]), {"source": found(source), "target": found()}
    )
    assert plan.lines == (
        "#42 «Потери электроэнергии»: в prod его ещё нет — будет создан из ss-dev "
        "(версия изменена 12 ноября 14:15 UTC, petrov); в ss-dev есть незакоммиченные изменения",
    )


def test_a_dashboard_missing_from_the_source_is_said_not_guessed():
    plan = written_plan(PlanRecipe.DEPLOY, deploy([99]), {"source": found(), "target": found()})
    assert plan.title == "Деплой дашборда #99: ss-dev → prod"
    assert plan.lines == ("#99: в ss-dev такого дашборда нет — деплоить нечего",)


def test_many_dashboards_are_counted_after_the_first_lines():
    ids = list(range(1, 21))
    sources = found(*(dashboard(i) for i in ids))
    plan = written_plan(PlanRecipe.DEPLOY, deploy(ids), {"source": sources, "target": sources})
    assert plan.title == "Деплой 20 дашбордов: ss-dev → prod"
    assert len(plan.lines) == 12
    assert plan.lines[-1] == "… и ещё 9 дашбордов"


def test_the_approval_binds_versions_and_stamps_not_the_words():
    reads = {"source": found(SOURCE_10), "target": found(dashboard(10))}
    shown = written_plan(PlanRecipe.DEPLOY, deploy([10]), reads)
    # A title renamed in the source is the same plan to bind (the words are not the state)...
    renamed = {"source": found(SOURCE_10 | {"title": "Энергия"}), "target": reads["target"]}
    assert written_plan(PlanRecipe.DEPLOY, deploy([10]), renamed).digest == shown.digest
    # ...a deploy to prod meanwhile (a new version, a new stamp) is not
    redeployed = dashboard(
        10, version=6, last_change={"at": "2026-12-03T05:00:00Z", "by": "orlova"}
    )
    moved = {"source": reads["source"], "target": found(redeployed)}
    assert written_plan(PlanRecipe.DEPLOY, deploy([10]), moved).digest != shown.digest
    # and so is a dashboard that appeared in prod meanwhile
    created = {"source": found(SOURCE_10), "target": found()}
    assert written_plan(PlanRecipe.DEPLOY, deploy([10]), created).digest != shown.digest


def test_a_plan_that_could_not_be_read_says_why_and_binds_nothing():
    plan = unread_plan(PlanRecipe.DEPLOY, deploy([10]), "ss-tools не ответил за 5 с")
    assert plan.title == "Деплой дашборда #10: ss-dev → prod"
    assert plan.unread == "План изменения прочитать не удалось: ss-tools не ответил за 5 с."
    assert plan.lines == ()
    assert plan.digest is None
