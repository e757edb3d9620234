"""A tool's output in words (domain/output_words.py): fields by their labels, values in words by
their field and parent, times with their zone, lists what matters first and counted right, tools by
their labels; the English answer in English."""

from __future__ import annotations

import json
import re

from sstools_agent.domain.output_words import also_available, output_words, tools_by_operation
from sstools_agent.domain.tool_output_summary import summarise_tool_output
from sstools_agent.domain.wording import ISO_TIMESTAMP

DASHBOARD = {
    "id": 10,
    "title": "Отчёт по энергопотреблению",
    "git": {"status": "behind", "branch": "main"},
    "last_change": {"at": "2026-11-04T08:15:00Z", "by": "petrov"},
    "validation": {"status": "passed", "checked_at": "2026-11-11T06:00:00Z"},
}


def test_a_status_is_said_by_its_field_and_parent_and_a_time_in_utc():
    text = output_words("Дашборд:", {"environment": "ss-dev", "dashboards": [DASHBOARD]}, True)
    for said in (
        "«Отчёт по энергопотреблению» №10",
        "git-статус: отстаёт от удалённой ветки",
        "последнее изменение: 4 ноября 08:15 UTC",
        "валидация: пройдена",
        "окружение: «ss-dev»",
    ):
        assert said.lower() in text.lower(), text
    assert not re.search(r"behind|passed|last_change|checked_at|`", text), text
    assert not ISO_TIMESTAMP.search(text), text


def test_the_same_value_reads_by_whose_status_it_is():
    backups = output_words("", {"backups": [{"id": 1, "status": "done"}]}, True)
    migration = output_words("", {"migration": {"id": 3, "status": "done"}}, True)
    assert "статус: готова" in backups, backups
    assert "статус: выполнена" in migration, migration


def test_a_list_says_what_matters_first_and_counts_what_it_leaves_out():
    items = [{"id": n, "status": "ok"} for n in range(1, 40)] + [{"id": 42, "status": "failing"}]
    summary = summarise_tool_output({"dashboards": items}, budget=600).content
    text = output_words("", json.loads(summary), True)
    lines = text.splitlines()
    assert lines[0].startswith("Дашборды ("), text
    assert "из 40" in lines[0], text
    assert "№42" in lines[1], text  # failing before ok
    shown = sum(line.lstrip().startswith("- ") for line in lines)
    assert f"И ещё {40 - shown} дашборд" in text, text


def test_an_answer_over_its_budget_counts_the_items_it_did_not_say():
    items = [{"id": n, "title": f"Дашборд номер {n}"} for n in range(1, 101)]
    text = output_words("Найдено:", {"dashboards": items}, True, budget=600)
    shown = sum(line.lstrip().startswith("- ") for line in text.splitlines())
    assert 0 < shown < 100
    assert len(text) <= 700
    assert text.endswith(f"И ещё {100 - shown} дашбордов."), text


def test_the_english_answer_stays_english():
    text = output_words("Dashboard:", {"dashboards": [DASHBOARD]}, False)
    assert "git: behind the remote" in text, text
    assert "last change: November 4, 08:15 UTC" in text, text
    assert not re.search(r"[а-яё]", text.replace("Отчёт по энергопотреблению", "")), text


def test_tools_are_said_by_their_labels_reads_apart_from_changes():
    data = {
        "role": "engineer",
        "tools": [
            {"name": "list_environments", "description": "List environments.", "operation": "read"},
            {"name": "commit_changes", "description": "Commit.", "operation": "write"},
        ],
    }
    text = tools_by_operation(data, True)
    assert "ваша роль — «инженер»" in text
    assert "Смотреть:\n- Список окружений" in text
    assert "после вашего подтверждения):\n- Коммит изменений дашборда в git" in text
    assert not re.search(r"[a-z]+_[a-z]+|engineer|List environments", text), text


def test_what_else_is_available_is_a_paragraph_by_where():
    text = also_available({"search_dashboards": "no_environment", "run_backup": "role"}, True)
    assert text.startswith("Ещё доступно:\n")
    assert "- после выбора окружения: поиск дашбордов" in text
    assert "- с другой ролью: резервная копия метаданных окружения" in text
    assert also_available({}, True) == ""


def test_an_attached_files_facts_are_named_in_words():
    facts = {
        "content_type": "text/csv",
        "size_bytes": 120,
        "csv": {"columns": ["order_id", "amount"], "column_count": 2, "row_count": 3},
    }
    text = output_words("Файл «orders.csv»:", facts, True)
    assert "Тип файла: «text/csv»" in text, text
    assert "столбцов: 2" in text, text
    assert not re.search(r"content_type|size_bytes|column_count|row_count", text), text


def test_a_count_named_after_its_noun_reads_as_one():
    result = {"environment": "staging", "rows_affected": 3}
    assert "3 rows affected" in output_words("SQL run:", result, False)
    health = {"items": [{"dashboard_id": 42, "failing_charts": 2, "slow_queries": 1}]}
    assert "2 failing charts; 1 slow query" in output_words("Health:", health, False)
    assert "Изменено строк: 3" in output_words("SQL выполнен:", result, True)


def test_a_search_that_finds_nothing_says_so_instead_of_its_count():
    result = {"environment": "ss-dev", "items": [], "total": 0}
    answer = output_words("Поиск дашбордов (дашборды: 99999):", result, russian=True)
    assert answer.endswith("Ничего не найдено.")
    assert "Всего" not in answer
    assert "«ss-dev»" in answer
    english = output_words("Dashboard search:", result, russian=False)
    assert english.endswith("Nothing found.")
