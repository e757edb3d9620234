"""The stand-in model's promises, phrasing aside: which tool it calls with which arguments, that it
asks one question when a required argument is missing, never proposes a write for a question,
never bends a value the user gave, and says plainly what it did not understand."""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool

from sstools_agent.agent.prefetch import PrefetchedObject
from sstools_agent.agent.prompts import system_prompt
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.ui_context import UIContext, parse_ui_context

TOOLS: list[BaseTool] = [
    StructuredTool.from_function(
        func=lambda **_: None, name=s.name, description=s.description, args_schema=s.args_model
    )
    for s in CATALOG
]


def page(kind: str | None, object_id: str | None, env: str = "ss-dev") -> UIContext:
    context = parse_ui_context(
        {"contextVersion": 1, "objectType": kind, "objectId": object_id, "objectName": "X",
         "envId": env, "route": "/x"},
        DEFAULT_ENVIRONMENTS,
    )  # fmt: skip
    assert isinstance(context, UIContext)
    return context


def reply(
    *turns: BaseMessage | str,
    context: UIContext | None = None,
    summary: PrefetchedObject | None = None,
    offered: tuple[str, ...] | None = None,
) -> AIMessage:
    tools = [t for t in TOOLS if offered is None or t.name in offered]
    model = StandinChatModel().bind_tools(tools)
    messages: list[BaseMessage] = [SystemMessage(system_prompt(context, summary))]
    messages += [HumanMessage(t) if isinstance(t, str) else t for t in turns]
    answer = model.invoke(messages)
    assert isinstance(answer, AIMessage)
    return answer


def call(answer: AIMessage) -> tuple[str, dict[str, Any]]:
    assert len(answer.tool_calls) == 1, answer.content
    return answer.tool_calls[0]["name"], answer.tool_calls[0]["args"]


@pytest.mark.parametrize(
    ("said", "minutes"),
    [("на час", 60), ("на 45 минут", 45), ("for a 45-minute window", 45), ("на полчаса", 30)],
)
def test_a_duration_is_taken_as_the_user_gave_it(said: str, minutes: int):
    answer = reply(f"включи обслуживание {said}, причина «драйверы»", context=page(None, None))
    assert call(answer) == (
        "start_maintenance",
        {"reason": "драйверы", "duration_minutes": minutes},
    )


def test_a_deploy_takes_the_page_object_and_the_named_target():
    answer = reply("Задеплой этот дашборд на прод", context=page("dashboard", "42"))
    assert call(answer) == (
        "deploy_dashboard",
        {"dashboard_ids": [42], "source_env_id": "ss-dev", "target_env_id": "prod"},
    )


def test_a_missing_target_is_one_question_with_the_choices_and_the_answer_completes_it():
    context = page("dashboard", "42")
    question = reply("выкати этот дашборд на дев", context=context)
    assert not question.tool_calls
    assert str(question.content).count("?") == 1
    assert "staging" in str(question.content)
    assert "prod" in str(question.content)
    answer = reply("выкати этот дашборд на дев", question, "тогда в прод", context=context)
    assert call(answer)[1]["target_env_id"] == "prod"


def test_sql_in_a_code_span_is_sent_as_written_and_its_numbers_are_no_ids():
    answer = reply("отформатируй `select a from b where id = 7`", context=page(None, None))
    assert call(answer) == ("superset_format_sql", {"sql": "select a from b where id = 7"})


def test_a_question_about_git_state_never_gets_a_commit_card():
    summary = PrefetchedObject(
        "search_dashboards",
        {"dashboard_ids": [42]},
        json.dumps({"dashboards": [{"id": 42, "git": {"status": "modified"}}]}),
        1.0,
    )
    offered = ("show_capabilities", "commit_changes")
    answer = reply(
        "есть ли незакоммиченные изменения в этом дашборде?",
        context=page("dashboard", "42"),
        summary=summary,
        offered=offered,
    )
    assert not answer.tool_calls
    assert "есть незакоммиченные изменения" in str(answer.content)  # `modified`, in words


def test_what_it_did_not_understand_it_says_plainly_in_the_users_language():
    russian = reply("привет, как погода?", context=page(None, None))
    english = reply("tell me a joke", context=page(None, None))
    assert not russian.tool_calls
    assert "Не понял" in str(russian.content)
    assert not english.tool_calls
    assert "did not understand" in str(english.content)


def test_a_tool_kept_from_the_user_is_explained_not_called():
    answer = reply("Execute this migration", context=page(None, None), offered=())
    assert not answer.tool_calls


def test_an_answer_is_the_result_by_its_shape_in_the_users_language():
    called = AIMessage(
        "", tool_calls=[{"name": "list_environments", "args": {}, "id": "c1", "type": "tool_call"}]
    )
    result = ToolMessage(
        json.dumps({"environments": [{"id": "prod", "tier": "prod"}]}),
        tool_call_id="c1",
        name="list_environments",
    )
    answer = reply("какие у нас окружения?", called, result, context=page(None, None))
    assert "prod" in str(answer.content)
    assert "окружени" in str(answer.content)


def test_the_page_object_is_the_argument_of_a_question_about_it():
    # «есть ли» asks a question; it is not a search for other objects
    answer = reply("есть ли проблемы с этим датасетом?", context=page("dataset", "15"))
    assert call(answer) == ("superset_explore_database", {"dataset_id": 15})


def test_an_action_on_the_page_object_is_called_not_its_listing():
    answer = reply("запусти эту миграцию", context=page("migration", "1"))
    assert call(answer) == (
        "execute_migration",
        {"migration_id": 1, "target_env_id": "ss-dev"},
    )


def test_tools_in_a_result_are_named_by_the_catalogs_label_in_the_users_language():
    called = AIMessage(
        "", tool_calls=[{"name": "show_capabilities", "args": {}, "id": "c1", "type": "tool_call"}]
    )
    result = ToolMessage(
        json.dumps({"tools": [{"name": "list_migrations", "operation": "read"}]}),
        tool_call_id="c1",
        name="show_capabilities",
    )
    answer = reply("что ты умеешь?", called, result, context=page(None, None))
    assert "list_migrations" not in str(answer.content)
    assert "миграц" in str(answer.content)


@pytest.mark.parametrize(("said", "dashboard"), [("второго", 7), ("the first one", 3)])
def test_an_ordinal_picks_that_item_of_the_last_result(said: str, dashboard: int):
    called = AIMessage(
        "", tool_calls=[{"name": "search_dashboards", "args": {"query": "энерг"}, "id": "c1",
                         "type": "tool_call"}],
    )  # fmt: skip
    result = ToolMessage(
        json.dumps({"dashboards": [{"id": 3}, {"id": 7}, {"id": 9}]}),
        tool_call_id="c1",
        name="search_dashboards",
    )
    answer = reply(
        "найди дашборды про энергию", called, result, f"запусти проверку для {said}",
        context=page(None, None),
    )  # fmt: skip
    assert call(answer) == ("run_llm_validation", {"dashboard_id": dashboard})


@pytest.mark.parametrize(
    ("said", "status"),
    [("какие миграции упали?", "failed"), ("Is any migration running right now?", "running")],
)
def test_a_value_of_a_closed_set_is_taken_from_the_message(said: str, status: str):
    assert call(reply(said, context=page(None, None))) == ("list_migrations", {"status": status})


def test_the_one_an_earlier_list_marks_by_status_is_the_argument():
    called = AIMessage(
        "", tool_calls=[{"name": "list_migrations", "args": {}, "id": "c1", "type": "tool_call"}]
    )
    result = ToolMessage(
        json.dumps({"migrations": [{"id": 1, "status": "done"}, {"id": 3, "status": "failed"}]}),
        tool_call_id="c1",
        name="list_migrations",
    )
    answer = reply(
        "Show me all migrations", called, result, "What's the plan of the one that failed?",
        context=page(None, None),
    )  # fmt: skip
    assert call(answer) == ("get_migration_plan", {"migration_id": 3})


def test_a_pronoun_after_a_list_of_one_is_that_item_not_the_page():
    called = AIMessage(
        "", tool_calls=[{"name": "list_migrations", "args": {"status": "failed"}, "id": "c1",
                         "type": "tool_call"}],
    )  # fmt: skip
    result = ToolMessage(
        json.dumps({"migrations": [{"id": 3, "status": "failed"}]}),
        tool_call_id="c1",
        name="list_migrations",
    )
    answer = reply(
        "какие миграции упали?", called, result, "покажи её план", context=page("migration", "1")
    )
    assert call(answer) == ("get_migration_plan", {"migration_id": 3})


@pytest.mark.parametrize("said", ["What's the status of task-102?", "какой статус задачи 42?"])
def test_a_tool_about_the_object_the_message_names_comes_first(said: str):
    assert call(reply(said, context=page(None, None)))[0] == "get_task_status"


@pytest.mark.parametrize(
    "said",
    [
        "Format this SQL: select day, sum(kwh) from energy group by day",
        "отформатируй запрос: select region, count(*) from payments group by region",
    ],
)
def test_the_words_of_a_statement_do_not_choose_the_tool(said: str):
    assert call(reply(said, context=page(None, None)))[0] == "superset_format_sql"


@pytest.mark.parametrize(
    ("said", "topic"),
    [
        ("Найди все дашборды про продажи", "прода"),
        ("Find the dashboards that have ETL in the title", "ETL"),
        ("Where's the ETL monitoring dashboard? I need its id", "ETL"),
        ("найди дашборды, связанные с энергопотреблением", "энерг"),
    ],
)
def test_a_search_is_about_the_words_of_its_topic(said: str, topic: str):
    assert call(reply(said, context=page(None, None))) == ("search_dashboards", {"query": topic})


def test_a_reason_after_a_comma_is_the_reason():
    answer = reply(
        "Put prod into maintenance for 20 minutes, we're patching the database",
        context=page(None, None, env="prod"),
    )
    assert call(answer) == (
        "start_maintenance",
        {"reason": "we're patching the database", "duration_minutes": 20},
    )


def test_this_environment_is_not_the_page_object():
    answer = reply("какие вообще базы и схемы есть в этом окружении?", context=page("dataset", "3"))
    assert call(answer) == ("superset_explore_database", {})


def test_a_question_never_starts_a_call_with_a_cost():
    summary = PrefetchedObject(
        "search_dashboards",
        {"dashboard_ids": [21]},
        json.dumps({"dashboards": [{"id": 21, "validation": {"status": "failed"}}]}),
        1.0,
    )
    answer = reply(
        "did the last validation pass?", context=page("dashboard", "21"), summary=summary
    )
    assert not answer.tool_calls
    assert "failed" in str(answer.content)


def test_several_objects_of_the_pages_kind_are_not_the_page_object():
    answer = reply("Which dashboards in staging are failing?", context=page("dashboard", "3"))
    assert call(answer) == ("get_health_summary", {})


def test_an_identifier_after_its_noun_is_that_argument():
    answer = reply(
        "Create a dataset for the table energy_hourly, schema public, database 1.",
        context=page("dataset", "15", env="staging"),
    )
    assert call(answer) == (
        "superset_create_dataset",
        {"database_id": 1, "schema_name": "public", "table_name": "energy_hourly"},
    )


def test_the_only_free_text_argument_takes_what_follows_a_colon():
    answer = reply("сделай бэкап прода, заметка: перед релизом 2.3", context=page(None, None))
    assert call(answer) == ("run_backup", {"note": "перед релизом 2.3"})


def test_rows_of_a_named_table_are_read_by_a_select_of_that_many():
    summary = PrefetchedObject(
        "superset_explore_database",
        {"dataset_id": 4},
        json.dumps({"dataset": {"id": 4, "table_name": "payments", "database_id": 1}}),
        1.0,
    )
    answer = reply("Покажи 5 строк из payments", context=page("dataset", "4"), summary=summary)
    assert call(answer) == (
        "superset_execute_sql",
        {"database_id": 1, "sql": "SELECT * FROM payments LIMIT 5"},
    )


def test_a_long_list_is_answered_with_what_matters_first():
    called = AIMessage(
        "", tool_calls=[{"name": "get_health_summary", "args": {}, "id": "c1", "type": "tool_call"}]
    )
    items = [{"dashboard_id": i, "title": f"Отчёт {i}", "status": "ok"} for i in range(1, 80)]
    items.append({"dashboard_id": 80, "title": "SLA подрядчиков", "status": "failing"})
    result = ToolMessage(json.dumps({"items": items}), tool_call_id="c1", name="get_health_summary")
    answer = reply("какие дашборды падают?", called, result, context=page(None, None))
    assert "SLA подрядчиков" in str(answer.content)


def test_a_request_with_a_question_after_it_is_a_request():
    answer = reply(
        "Прогони по нему проверку через LLM, что она найдёт?", context=page("dashboard", "42")
    )
    assert call(answer) == ("run_llm_validation", {"dashboard_id": 42})


def test_rows_from_this_table_are_the_page_datasets():
    summary = PrefetchedObject(
        "superset_explore_database",
        {"dataset_id": 1},
        json.dumps({"dataset": {"id": 1, "table_name": "energy_readings", "schema": "mart",
                                "database_id": 1}}),
        1.0,
    )  # fmt: skip
    answer = reply("show me 5 rows from this table", context=page("dataset", "1"), summary=summary)
    assert call(answer)[1]["sql"] == "SELECT * FROM mart.energy_readings LIMIT 5"


@pytest.mark.parametrize(
    ("said", "dashboard"),
    [("Прогони LLM-валидацию по «KPI филиалов»", 2), ("Run an LLM review on the ETL one", 1)],
)
def test_an_item_of_the_last_list_named_by_its_title_is_the_argument(said: str, dashboard: int):
    called = AIMessage(
        "", tool_calls=[{"name": "get_health_summary", "args": {}, "id": "c1", "type": "tool_call"}]
    )
    items = [{"id": 1, "title": "Мониторинг ETL"}, {"id": 2, "title": "KPI филиалов"}]
    result = ToolMessage(
        json.dumps({"dashboards": items}), tool_call_id="c1", name="get_health_summary"
    )
    answer = reply("какие дашборды падают?", called, result, said, context=page("dashboard", "7"))
    assert call(answer) == ("run_llm_validation", {"dashboard_id": dashboard})


def test_the_environment_beside_the_named_target_is_the_source():
    answer = reply(
        "Pull the staging version of this dashboard into prod.",
        context=page("dashboard", "7", env="prod"),
    )
    assert call(answer) == (
        "deploy_dashboard",
        {"dashboard_ids": [7], "source_env_id": "staging", "target_env_id": "prod"},
    )


# --- The promises, each across more than its first example ------------------------------


@pytest.mark.parametrize(
    ("said", "context"),
    [
        ("нужно ли закоммитить изменения этого дашборда?", page("dashboard", "42")),
        ("Is the staging version of this dashboard deployed to prod?", page("dashboard", "42")),
        ("был ли сегодня бэкап прода?", page(None, None, env="prod")),
        ("Is prod in maintenance right now?", page(None, None, env="prod")),
    ],
)
def test_a_question_never_gets_a_write(said: str, context: UIContext):
    answer = reply(said, context=context)
    writes = {s.name for s in CATALOG if s.operation.value == "write"}
    assert not {c["name"] for c in answer.tool_calls} & writes


@pytest.mark.parametrize(
    ("said", "args"),
    [
        ("выкати дашборд 17 из staging в prod", {"dashboard_ids": [17], "source_env_id": "staging",
                                                  "target_env_id": "prod"}),
        ("Deploy dashboards 3 and 9 to prod", {"dashboard_ids": [3, 9], "source_env_id": "ss-dev",
                                               "target_env_id": "prod"}),
    ],
)  # fmt: skip
def test_ids_and_environments_the_user_gave_are_kept(said: str, args: dict[str, Any]):
    assert call(reply(said, context=page(None, None))) == ("deploy_dashboard", args)


@pytest.mark.parametrize(
    ("said", "minutes"),
    [
        ("на 2 часа", 120),
        ("на 1,5 часа", 90),
        ("for 3 hours", 180),
        ("на два часа", 120),
        ("на полтора часа", 90),
        ("for two hours", 120),
        ("на 2 часа с половиной", 150),
        ("на десять минут", 10),
    ],
)
def test_hours_are_kept_in_minutes_never_rounded_to_another_window(said: str, minutes: int):
    answer = reply(f"включи обслуживание {said}, причина «патч»", context=page(None, None))
    assert call(answer)[1]["duration_minutes"] == minutes


def test_a_duration_it_cannot_read_is_a_question_not_the_default():
    answer = reply(
        "включи обслуживание на несколько часов, причина «патч»", context=page(None, None)
    )
    assert not answer.tool_calls
    assert str(answer.content).count("?") == 1


def test_a_quoted_statement_is_sent_exactly_as_written():
    statement = "SELECT region, SUM(kwh) FROM mart.energy_daily WHERE day > '2026-01-01' GROUP BY 1"
    answer = reply(f"выполни в базе 1: «{statement}»", context=page(None, None))
    assert call(answer) == ("superset_execute_sql", {"database_id": 1, "sql": statement})


@pytest.mark.parametrize(
    ("said", "tool"),
    [
        ("запусти LLM-проверку дашборда", "run_llm_validation"),
        ("покажи план миграции", "get_migration_plan"),
    ],
)
def test_a_missing_required_argument_is_one_question_and_no_call(said: str, tool: str):
    answer = reply(said, context=page(None, None))
    spec = CATALOG.get(tool)
    assert not answer.tool_calls
    assert str(answer.content).count("?") == 1
    assert spec is not None
    assert spec.label_ru in str(answer.content)


def test_several_candidates_are_one_question_with_them_as_choices():
    called = AIMessage(
        "", tool_calls=[{"name": "list_migrations", "args": {}, "id": "c1", "type": "tool_call"}]
    )
    result = ToolMessage(
        json.dumps({"migrations": [{"id": 1, "status": "done"}, {"id": 3, "status": "failed"}]}),
        tool_call_id="c1",
        name="list_migrations",
    )
    answer = reply(
        "покажи миграции", called, result, "покажи план миграции", context=page(None, None)
    )
    assert not answer.tool_calls
    assert str(answer.content).count("?") == 1
    assert "1" in str(answer.content)
    assert "3" in str(answer.content)


def test_what_it_did_not_understand_on_an_object_page_is_said_not_the_pages_summary():
    summary = PrefetchedObject(
        "search_dashboards",
        {"dashboard_ids": [42]},
        json.dumps({"dashboards": [{"id": 42, "title": "Энергия", "git": {"status": "modified"}}]}),
        1.0,
    )
    answer = reply("расскажи анекдот", context=page("dashboard", "42"), summary=summary)
    assert not answer.tool_calls
    assert "Не понял" in str(answer.content)
    assert "modified" not in str(answer.content)


def test_an_answer_in_english_names_the_tool_in_english():
    called = AIMessage(
        "", tool_calls=[{"name": "list_environments", "args": {}, "id": "c1", "type": "tool_call"}]
    )
    result = ToolMessage(
        json.dumps({"environments": [{"id": "prod", "tier": "prod"}]}),
        tool_call_id="c1",
        name="list_environments",
    )
    answer = str(
        reply("which environments do we have?", called, result, context=page(None, None)).content
    )
    assert "prod" in answer
    assert not any("а" <= ch <= "я" for ch in answer.lower())
