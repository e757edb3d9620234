"""The offline model's answer to a result no writer of its own knows: read by its shape."""

from __future__ import annotations

import json
import re

from local.sample_upstream.app import health_report
from local.sample_upstream.seed import seeded_state
from sstools_agent.agent.offline_answers import describe_result
from sstools_agent.domain.tool_output_summary import summarise_tool_output

BACKUPS = {
    "environment": "prod",
    "backups": [
        {"id": 705, "created_at": "2026-11-29T03:00:00Z", "status": "done"},
        {"id": 704, "created_at": "2026-11-28T03:00:00Z", "status": "done"},
    ],
}


def test_a_list_is_answered_by_its_items_under_the_tools_own_words():
    answer = describe_result("list_backups", BACKUPS, russian=True)
    assert answer == (
        "Резервные копии окружения (prod): #705 — 29 ноября 03:00 UTC, done; "
        "#704 — 28 ноября 03:00 UTC, done."
    )
    assert "list_backups" not in answer  # the catalog's words, not the id


def test_an_english_question_gets_the_catalogs_english_description():
    answer = describe_result("list_backups", BACKUPS, russian=False)
    assert answer.startswith("The backups of the current environment's Superset metadata")
    assert "2026-11-29 03:00 UTC" in answer


def test_an_empty_list_says_so_and_a_long_one_is_counted():
    empty = describe_result("list_backups", {"environment": "prod", "backups": []}, russian=True)
    assert empty == "Резервные копии окружения (prod): пусто."
    many = {"backups": [{"id": n, "status": "done"} for n in range(1, 9)]}
    assert describe_result("list_backups", many, russian=True).endswith("#5 — done и ещё 3.")


def test_a_health_answer_names_every_failing_dashboard_and_counts_the_rest_of_the_whole_list():
    # The seed's ss-dev: 6 failing (#7 … #42), 9 with warnings, 30 ok; the model reads the
    # summary of a cut list (its counts are the whole list's), as the agent gives it
    state = seeded_state()
    report = health_report("ss-dev", state.dashboards["ss-dev"].values())
    summary = json.loads(summarise_tool_output(report, budget=1500).content)
    answer = describe_result("get_health_summary", summary, russian=True)
    named = [int(n) for n in re.findall(r"\(id (\d+)\)", answer)]
    assert named == [7, 14, 21, 28, 35, 42]
    assert answer.endswith("и ещё 9 с предупреждениями.")
