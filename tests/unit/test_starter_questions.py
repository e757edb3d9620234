"""A new conversation's example questions: three for every page and role, each one leading to a
tool that this user is offered on that page."""

from __future__ import annotations

import itertools

import pytest

from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS, EnvironmentRegistry
from sstools_agent.domain.roles import Role
from sstools_agent.domain.starter_questions import STARTERS, starter_questions
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_routing import ToolRouter
from sstools_agent.domain.tool_selection import ToolSelector
from sstools_agent.domain.ui_context import ObjectType, UIContext, parse_ui_context

ROLES = [*Role, None]
KINDS = [*ObjectType, None]


def page(kind: ObjectType | None, env_id: str | None) -> UIContext:
    payload = {"contextVersion": 1, "objectType": kind, "objectId": "10" if kind else None}
    context = parse_ui_context(payload | {"envId": env_id}, DEFAULT_ENVIRONMENTS)
    assert isinstance(context, UIContext), context
    return context


@pytest.fixture
def selector(environments: EnvironmentRegistry) -> ToolSelector:
    return ToolSelector(CATALOG, environments)


def test_every_question_offered_leads_to_a_tool_the_user_is_offered_there(
    selector: ToolSelector, environments: EnvironmentRegistry
):
    for role, kind, env_id in itertools.product(ROLES, KINDS, [*environments.ids, None]):
        context = page(kind, env_id)
        offered = set(selector.select(role, context).offered_names)
        for question in starter_questions(selector, role, context):
            assert question.tool in offered, (role, kind, env_id, question)


@pytest.mark.parametrize("role", list(Role))
@pytest.mark.parametrize("kind", KINDS)
def test_a_signed_in_user_gets_three_questions_on_every_page_of_an_environment(
    selector: ToolSelector, environments: EnvironmentRegistry, role: Role, kind: ObjectType | None
):
    for env_id in environments.ids:
        assert len(starter_questions(selector, role, page(kind, env_id))) == 3, env_id


def test_a_page_with_no_object_or_environment_gets_general_questions(selector: ToolSelector):
    texts = [q.text for q in starter_questions(selector, Role.ANALYST, None)]
    assert texts == ["Что ты умеешь?", "В каких окружениях ты работаешь?", "Какие миграции есть?"]


def test_an_engineer_is_offered_a_deploy_plan_an_analyst_never_is(selector: ToolSelector):
    dashboard = page(ObjectType.DASHBOARD, "ss-dev")
    engineer = [q.tool for q in starter_questions(selector, Role.ENGINEER, dashboard)]
    analyst = [q.tool for q in starter_questions(selector, Role.ANALYST, dashboard)]
    assert engineer == ["get_health_summary", "deploy_dashboard", "run_llm_validation"]
    assert analyst == ["get_health_summary", "run_llm_validation", "search_dashboards"]


def test_the_router_picks_each_questions_tool_first():
    router = ToolRouter(None)
    for question in {q for questions in STARTERS.values() for q in questions}:
        scores = router.keyword_scores(question.text)
        assert max(scores, key=lambda tool: scores[tool]) == question.tool, question
