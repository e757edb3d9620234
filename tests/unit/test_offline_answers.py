"""The offline model's answer to a result no writer of its own knows: read by its shape."""

from __future__ import annotations

from sstools_agent.agent.offline_answers import describe_result

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
