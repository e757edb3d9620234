"""The example questions a new conversation offers: three for the page's object, each leading to
one catalog tool, and only tools the tool selection offers this user on this page (role, then
affinity and environment), so an analyst is never shown a question that ends in a refusal."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from sstools_agent.domain.roles import Role
from sstools_agent.domain.tool_selection import ToolSelector
from sstools_agent.domain.ui_context import ObjectType, UIContext

STARTERS_SHOWN: Final = 3


@dataclass(frozen=True, slots=True)
class StarterQuestion:
    """A question as a person would ask it, and the tool the router picks for it."""

    text: str
    tool: str


_Q = StarterQuestion
STARTERS: Final[Mapping[ObjectType | None, tuple[StarterQuestion, ...]]] = {
    ObjectType.DASHBOARD: (
        _Q("Какое здоровье у этого дашборда?", "get_health_summary"),
        _Q("Подготовь деплой этого дашборда в staging", "deploy_dashboard"),
        _Q("Проверь этот дашборд LLM-валидацией", "run_llm_validation"),
        _Q("Найди другие дашборды в этом окружении", "search_dashboards"),
    ),
    ObjectType.DATASET: (
        _Q("Из каких таблиц собран этот датасет?", "superset_explore_database"),
        _Q("Кто имеет права на этот датасет?", "superset_audit_permissions"),
        _Q("Какие дашборды используют этот датасет?", "search_dashboards"),
    ),
    ObjectType.MIGRATION: (
        _Q("Что изменит эта миграция?", "get_migration_plan"),
        _Q("Выполни миграцию в staging", "execute_migration"),
        _Q("Какие миграции есть?", "list_migrations"),
        _Q("В каких окружениях ты работаешь?", "list_environments"),
    ),
    None: (
        _Q("Что ты умеешь?", "show_capabilities"),
        _Q("Всё ли в порядке с дашбордами?", "get_health_summary"),
        _Q("Когда была последняя резервная копия?", "list_backups"),
        _Q("В каких окружениях ты работаешь?", "list_environments"),
        _Q("Какие миграции есть?", "list_migrations"),
    ),
}
"""Per page object, in the order offered: the first three whose tool this user is offered there
(a question an engineer is offered comes before the analyst's fallback)."""


def starter_questions(
    selector: ToolSelector, role: Role | None, ui_context: UIContext | None
) -> list[StarterQuestion]:
    """Up to three questions for a new conversation on this page, for this role."""
    offered = set(selector.select(role, ui_context).offered_names)
    kind = ui_context.object_type if ui_context is not None else None
    return [question for question in STARTERS[kind] if question.tool in offered][:STARTERS_SHOWN]
