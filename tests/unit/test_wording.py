"""The words for the upstream's values: statuses, counts with their nouns, times."""

from __future__ import annotations

import pytest

from local.sample_upstream.app import health_report
from local.sample_upstream.seed import seeded_state
from sstools_agent.domain.wording import (
    ENUM_VALUES,
    STATUS_WORDS,
    counted,
    moment_in_words,
    plural_ru,
    role_words,
    status_words,
)


@pytest.mark.parametrize(
    ("count", "said"),
    [
        (0, "0 дашбордов"),
        (1, "1 дашборд"),
        (2, "2 дашборда"),
        (4, "4 дашборда"),
        (5, "5 дашбордов"),
        (11, "11 дашбордов"),
        (12, "12 дашбордов"),
        (14, "14 дашбордов"),
        (21, "21 дашборд"),
        (22, "22 дашборда"),
        (25, "25 дашбордов"),
        (101, "101 дашборд"),
        (111, "111 дашбордов"),
    ],
)
def test_a_count_takes_the_noun_in_its_form(count, said):
    assert counted(count, "dashboard", russian=True) == said


def test_english_counts_say_one_and_many():
    assert counted(1, "chart", russian=False) == "1 chart"
    assert counted(2, "slow_query", russian=False) == "2 slow queries"
    assert counted(0, "row", russian=False) == "0 rows"
    assert plural_ru(3, ("строка", "строки", "строк")) == "строки"


def test_statuses_are_words_in_both_languages():
    assert status_words("git", "behind", russian=True) == "отстаёт от удалённой ветки"
    assert status_words("review", "changes_requested", russian=True) == "запрошены доработки"
    assert status_words("review", "changes_requested", russian=False) == "changes requested"
    assert status_words("migration", "done", russian=True) == "выполнена"
    # a value no one told the glossary of is the upstream's word, without underscores
    assert status_words("git", "detached_head", russian=True) == "detached head"


def test_no_russian_word_is_an_english_enum_or_an_id():
    for kind, values in STATUS_WORDS.items():
        for value, (ru, en) in values.items():
            assert ru, (kind, value)
            assert en, (kind, value)
            assert "_" not in ru + en, (kind, value)
            assert not set(ru.split()) & ENUM_VALUES, (kind, value, ru)


def test_every_status_the_seed_holds_has_words():
    # Given the sample upstream's seeded data (statuses of every kind it returns)
    state = seeded_state()
    dashboards = list(state.dashboards["ss-dev"].values())
    seen = {
        "git": {d["git"]["status"] for d in dashboards},
        "validation": {d["validation"]["status"] for d in dashboards},
        "health": {i["status"] for i in health_report("ss-dev", dashboards)["items"]},
        "review": {d["review"]["status"] for d in state.datasets["staging"].values()},
        "migration": {m["status"] for m in state.migrations.values()},
        "task": {t["status"] for t in state.tasks.values()},
        "task_kind": {t["kind"] for t in state.tasks.values()},
        "maintenance": {e["status"] for es in state.maintenance.values() for e in es},
        "backup": {b["status"] for bs in state.backups.values() for b in bs},
        "tier": {e["tier"] for e in state.environments},
    }
    # Then the glossary has words for each
    for kind, values in seen.items():
        assert values <= set(STATUS_WORDS[kind]), (kind, values - set(STATUS_WORDS[kind]))


def test_a_time_is_said_in_words_with_its_zone():
    assert moment_in_words("2026-11-11T06:00:00Z") == "11 ноября 06:00 UTC"
    assert moment_in_words("2026-11-11T06:00:00Z", russian=False) == "November 11, 06:00 UTC"
    # written in another zone, said in UTC
    assert moment_in_words("2026-11-11T09:30:00+03:00") == "11 ноября 06:30 UTC"
    assert moment_in_words("вчера") == "вчера"


def test_a_role_is_said_in_words_in_russian_and_as_spelt_otherwise():
    assert role_words("engineer", True) == "«инженер»"
    assert role_words("admin", True) == "«администратор»"
    assert role_words("analyst", False) == "analyst"
    assert role_words("auditor", True) == "auditor"  # not ours to invent
