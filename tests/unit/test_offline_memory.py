"""The offline model's memory of a conversation: what a follow-up points back at.

Each case is a conversation as the agent hands it to the model (system prompt with the page's
context block, earlier user messages, tool calls and their results) and asserts the reply a
user would see: which tool is called with which arguments, or what the answer says.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from sstools_agent.agent.offline_answers import Focus, mentions, merged, narrowed
from sstools_agent.agent.offline_model import OfflineChatModel
from sstools_agent.agent.prefetch import PrefetchedObject
from sstools_agent.agent.prompts import system_prompt
from sstools_agent.domain.catalog_types import Operation
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.ui_context import UIContext, parse_ui_context

MIGRATIONS: dict[str, Any] = {
    "total": 3,
    "migrations": [
        {"id": 1, "title": "Пакет 1", "status": "planned", "source_env_id": "ss-dev",
         "target_env_id": "staging"},
        {"id": 3, "title": "Пакет 3", "status": "failed", "source_env_id": "ss-dev",
         "target_env_id": "staging"},
        {"id": 5, "title": "Пакет 5", "status": "running", "source_env_id": "ss-dev",
         "target_env_id": "staging"},
    ],
}  # fmt: skip
FOUND_DASHBOARDS = {
    "environment": "ss-dev",
    "total": 2,
    "dashboards": [{"id": 21, "title": "Энергопотребление"}, {"id": 42, "title": "Потери"}],
}


def _page(object_type: str | None = None, object_id: str | None = None) -> UIContext:
    payload = {
        "contextVersion": 1,
        "objectType": object_type,
        "objectId": object_id,
        "objectName": None,
        "envId": "ss-dev",
        "route": "/",
    }
    context = parse_ui_context(payload, DEFAULT_ENVIRONMENTS)
    assert isinstance(context, UIContext)
    return context


def _exchange(question: str, tool: str, args: dict[str, Any], result: Any) -> list[BaseMessage]:
    call_id = f"call-{tool}-{len(question)}"
    return [
        HumanMessage(question),
        AIMessage("", tool_calls=[{"name": tool, "args": args, "id": call_id}]),
        ToolMessage(json.dumps(result, ensure_ascii=False), tool_call_id=call_id, name=tool),
        AIMessage("(the answer)"),
    ]


def _reply(page: UIContext, *turns: list[BaseMessage] | str) -> AIMessage:
    messages: list[BaseMessage] = [SystemMessage(system_prompt(page))]
    for turn in turns:
        messages += [HumanMessage(turn)] if isinstance(turn, str) else turn
    return OfflineChatModel(bound_tools=CATALOG.names).respond(messages)


def _calls(reply: AIMessage) -> list[tuple[str, dict[str, Any]]]:
    return [(call["name"], call["args"]) for call in reply.tool_calls]


def test_which_of_them_reads_the_health_of_each_dashboard_the_last_answer_named() -> None:
    earlier = _exchange("найди дашборды про энергию", "search_dashboards", {}, FOUND_DASHBOARDS)

    reply = _reply(_page(), earlier, "а какие из них сломаны?")

    assert _calls(reply) == [
        ("get_health_summary", {"dashboard_id": 21}),
        ("get_health_summary", {"dashboard_id": 42}),
    ]


def test_her_plan_is_the_plan_of_the_one_migration_the_answer_named_not_the_pages() -> None:
    earlier = _exchange("какие миграции упали?", "list_migrations", {}, MIGRATIONS)

    reply = _reply(_page("migration", "1"), earlier, "покажи её план")

    assert _calls(reply) == [("get_migration_plan", {"migration_id": 3})]


def test_the_answer_to_which_failed_names_the_failed_ones_and_keeps_the_total() -> None:
    question = _exchange("какие миграции упали?", "list_migrations", {}, MIGRATIONS)[:3]

    answer = str(_reply(_page(), question).content)

    assert "Всего миграций: 3" in answer
    assert "№3" in answer
    assert "№1" not in answer
    assert "№5" not in answer


def test_that_query_is_the_statement_the_conversation_ran_last() -> None:
    sql = "select object_id, kwh from energy_readings limit 3"
    earlier = _exchange(f"Run {sql}", "superset_execute_sql", {"database_id": 1, "sql": sql}, {})

    reply = _reply(_page("dataset", "1"), earlier, "Now format that query")

    assert _calls(reply) == [("superset_format_sql", {"sql": sql})]


def test_ending_maintenance_ends_the_event_the_conversation_started() -> None:
    started = {"environment": "ss-dev", "event": {"id": 1001, "status": "active"}}
    earlier = _exchange(
        "включи обслуживание", "start_maintenance", {"reason": "x", "duration_minutes": 20}, started
    )

    reply = _reply(_page(), earlier, "всё, заверши обслуживание")

    assert _calls(reply) == [("end_maintenance", {"event_id": 1001})]


def test_a_query_to_tidy_is_formatted_never_run() -> None:
    reply = _reply(_page("dataset", "3"), "Приведи в читаемый вид: select id from mart.subscribers")

    assert [name for name, _ in _calls(reply)] == ["superset_format_sql"]


def test_a_count_in_the_message_is_not_an_objects_id() -> None:
    reply = _reply(_page("dataset", "4"), "покажи 10 строк из payments")

    assert _calls(reply) == [
        ("superset_execute_sql", {"database_id": 1, "sql": "SELECT * FROM payments LIMIT 10"})
    ]


def test_a_dashboard_an_earlier_answer_showed_is_found_by_its_quoted_title() -> None:
    earlier = _exchange("найди дашборды про энергию", "search_dashboards", {}, FOUND_DASHBOARDS)

    reply = _reply(_page(), earlier, "проверь через LLM «Потери»")

    assert _calls(reply) == [("run_llm_validation", {"dashboard_id": 42})]


def test_a_partial_list_is_never_narrowed_by_status() -> None:
    """A summarised list shows some entries: «none failed» would be a claim about unread ones."""
    partial = {"total": 40, "migrations": MIGRATIONS["migrations"][:1]}

    assert narrowed(partial, Focus(statuses=frozenset({"failed"}))) == partial


def test_mentions_prefer_what_the_result_showed_over_the_calls_arguments() -> None:
    dataset = {"dataset": {"id": 15, "dependencies": {"dashboards": [10, 15]}}}

    found = mentions(dataset, {"dataset_id": 15, "sql": "select 1"})

    assert found["dataset"] == [15]
    assert found["dashboard"] == [10, 15]
    assert found["sql"] == ["select 1"]


def test_results_of_one_tool_over_several_objects_merge_into_one() -> None:
    one = {"total": 1, "failing": 1, "items": [{"dashboard_id": 21, "status": "failing"}]}
    other = {"total": 1, "failing": 0, "items": [{"dashboard_id": 42, "status": "ok"}]}

    joined = merged([(one, {"dashboard_id": 21}), (other, {"dashboard_id": 42})])

    assert joined is not None
    data, args = joined

    assert data["total"] == 2
    assert data["failing"] == 1
    assert [i["dashboard_id"] for i in data["items"]] == [21, 42]
    assert args == {}


def test_a_negated_action_does_not_choose_the_tool() -> None:
    reply = _reply(_page("dataset", "1"), "pretty-print this, don't run it: select id from t")

    assert [name for name, _ in _calls(reply)] == ["superset_format_sql"]


def test_a_write_is_never_chosen_by_its_objects_name_alone() -> None:
    reply = _reply(_page("dashboard", "10"), "Actually, include dashboard 21 as well")

    writes = [
        name
        for name, _ in _calls(reply)
        if (spec := CATALOG.get(name)) is None or spec.operation is Operation.WRITE
    ]
    assert writes == []


def test_a_status_the_question_names_is_passed_to_a_filter_that_takes_it() -> None:
    reply = _reply(_page(), "Какие переносы у нас завалились?")

    assert _calls(reply) == [("list_migrations", {"status": "failed"})]


def test_the_same_for_another_object_repeats_the_last_tool() -> None:
    grants = {"grants": [{"role": "Gamma", "access": "read", "dataset_id": 15}]}
    earlier = _exchange(
        "кто имеет доступ?", "superset_audit_permissions", {"dataset_id": 15}, grants
    )

    reply = _reply(_page("dataset", "15"), earlier, "Сделай то же самое для датасета 4")

    assert _calls(reply) == [("superset_audit_permissions", {"dataset_id": 4})]


def test_summarised_lists_merge_by_their_items_and_single_objects_do_not_merge() -> None:
    one = {"total": 1, "failing": 1, "items": {"items": [{"dashboard_id": 21}], "total_count": 1}}
    other = {"total": 1, "failing": 0, "items": [{"dashboard_id": 42}]}

    joined = merged([(one, {}), (other, {})])

    assert joined is not None
    assert [i["dashboard_id"] for i in joined[0]["items"]] == [21, 42]
    assert merged([({"dataset": {"id": 1}}, {}), ({"dataset": {"id": 2}}, {})]) is None


def test_a_write_after_a_list_takes_no_guess_among_several() -> None:
    earlier = _exchange("найди дашборды про энергию", "search_dashboards", {}, FOUND_DASHBOARDS)

    for message in ("задеплой его в прод", "задеплой в прод"):
        assert _calls(_reply(_page(), earlier, message)) == [], message


def test_a_write_after_a_list_takes_all_of_them_when_asked_for_all() -> None:
    earlier = _exchange("найди дашборды про энергию", "search_dashboards", {}, FOUND_DASHBOARDS)

    reply = _reply(_page(), earlier, "задеплой их в staging")

    assert _calls(reply) == [
        (
            "deploy_dashboard",
            {"dashboard_ids": [21, 42], "source_env_id": "ss-dev", "target_env_id": "staging"},
        )
    ]


def test_the_environment_the_message_names_wins_over_the_migrations_own_target() -> None:
    """On migration 1's page (its target staging), migration 6 (its own target prod) is run
    where the message says."""
    plan = {"migration": {"id": 1, "source_env_id": "ss-dev", "target_env_id": "staging"}}
    page_summary = PrefetchedObject(
        "get_migration_plan", {"migration_id": 1}, json.dumps(plan), elapsed_ms=1.0
    )
    listed = {
        "total": 1,
        "migrations": [{"id": 6, "status": "planned", "source_env_id": "staging",
                        "target_env_id": "prod"}],
    }  # fmt: skip
    messages: list[BaseMessage] = [
        SystemMessage(system_prompt(_page("migration", "1"), page_summary)),
        *_exchange("какие миграции есть?", "list_migrations", {}, listed),
        HumanMessage("запусти миграцию 6 в staging"),
    ]

    reply = OfflineChatModel(bound_tools=CATALOG.names).respond(messages)

    assert _calls(reply) == [("execute_migration", {"migration_id": 6, "target_env_id": "staging"})]


def test_a_remembered_statement_never_replaces_the_one_asked_for() -> None:
    earlier = _exchange(
        "run select 1", "superset_execute_sql", {"database_id": 1, "sql": "select 1"}, {}
    )

    reply = _reply(_page("dataset", "4"), earlier, "покажи 5 строк из payments")

    assert _calls(reply) == [
        ("superset_execute_sql", {"database_id": 1, "sql": "SELECT * FROM payments LIMIT 5"})
    ]


def test_a_status_word_after_a_negation_names_no_status() -> None:
    reply = _reply(_page(), "покажи неуспешные миграции")

    assert _calls(reply) == [("list_migrations", {"status": "failed"})]


@pytest.mark.anyio
async def test_after_a_cancelled_card_a_russian_answer_adds_nothing_and_still_streams():
    # Given a deploy the user denied on its card (the stream has said it was not run)
    call = {"name": "deploy_dashboard", "args": {"dashboard_ids": [10]}, "id": "call-1"}
    messages: list[BaseMessage] = [
        SystemMessage(system_prompt(_page("dashboard", "10"))),
        HumanMessage("задеплой этот дашборд в staging"),
        AIMessage("", tool_calls=[call]),
        ToolMessage(
            "CANCELLED (denied): the user did not confirm deploy_dashboard; nothing was changed.",
            tool_call_id="call-1",
            name="deploy_dashboard",
            status="error",
            artifact={"event": "cancelled", "reason": "denied"},
        ),
    ]
    model = OfflineChatModel(bound_tools=CATALOG.names)
    # Then the model says nothing more (one line, not two), and its stream holds an empty chunk,
    # not none (which a streaming agent reads as a model that did not answer)
    assert model.respond(messages).content == ""
    chunks = [chunk async for chunk in model.astream(messages)]
    assert chunks
    assert "".join(str(chunk.content) for chunk in chunks) == ""
