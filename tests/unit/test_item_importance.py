"""Which items of a list matter most, read from their fields (used when a summary cuts a list)."""

from __future__ import annotations

from typing import Any

import pytest

from sstools_agent.domain.item_importance import (
    MAX_STATUSES,
    MISSING,
    OTHER_STATUSES,
    STATUS_LABEL_CHARS,
    ImportanceOrder,
    Severity,
    severity_of,
)


def ranked_ids(items: list[dict[str, Any]]) -> list[Any]:
    order = ImportanceOrder.of(items)
    assert order is not None
    return [items[index]["id"] for index in order.ranked(items).indices]


@pytest.mark.parametrize(
    ("word", "severity"),
    [
        ("failing", Severity.FAILING),
        ("FAILED", Severity.FAILING),
        ("error", Severity.FAILING),
        ("timed-out", Severity.FAILING),
        ("warning", Severity.WARNING),
        ("degraded", Severity.WARNING),
        ("changes requested", Severity.WARNING),
        ("running", Severity.OTHER),
        (None, Severity.OTHER),
        (3, Severity.OTHER),
        ("ok", Severity.OK),
        ("passed", Severity.OK),
        ("done", Severity.OK),
    ],
)
def test_status_words_have_a_severity(word, severity):
    assert severity_of(word) is severity


def test_failing_before_warning_before_others_before_ok():
    items = [
        {"id": 1, "status": "ok"},
        {"id": 2, "status": "running"},
        {"id": 3, "status": "warning"},
        {"id": 4, "status": "failed"},
        {"id": 5, "status": "ok"},
        {"id": 6, "status": "error"},
    ]
    # Ties keep the order they came in
    assert ranked_ids(items) == [4, 6, 3, 2, 1, 5]


def test_then_the_newest_then_the_largest():
    items = [
        {"id": 1, "state": "failed", "created_at": "2026-11-01T10:00:00Z", "row_count": 9},
        {"id": 2, "state": "failed", "created_at": "2026-11-03T10:00:00Z", "row_count": 1},
        {"id": 3, "state": "ok", "created_at": "2026-11-30T10:00:00Z", "row_count": 99},
        {"id": 4, "state": "failed", "created_at": "2026-11-03T10:00:00Z", "row_count": 5},
        {"id": 5, "state": "failed", "row_count": 50},
    ]
    order = ImportanceOrder.of(items)
    assert order == ImportanceOrder(("state",), ("created_at",), ("row_count",))
    # An item without a timestamp comes after the timed ones of its status
    assert ranked_ids(items) == [4, 2, 1, 5, 3]


def test_fields_one_level_down_are_read_and_named_with_a_dot():
    items = [
        {"id": 1, "validation": {"status": "passed"}, "last_change": {"at": "2026-11-02"}},
        {"id": 2, "validation": {"status": "failed"}, "last_change": {"at": "2026-11-01"}},
        {"id": 3, "validation": {"status": "passed"}, "last_change": {"at": "2026-11-05"}},
    ]
    order = ImportanceOrder.of(items)
    assert order is not None
    assert order.fields() == {"status": "validation.status", "newest": "last_change.at"}
    assert ranked_ids(items) == [2, 3, 1]


def test_the_status_field_is_the_one_whose_words_are_known():
    # git_status's «modified» is no declared word; validation.status's are all known
    items = [
        {"id": 1, "git_status": "modified", "validation": {"status": "passed"}},
        {"id": 2, "git_status": "clean", "validation": {"status": "failed"}},
        {"id": 3, "git_status": "modified", "validation": {"status": "passed"}},
    ]
    order = ImportanceOrder.of(items)
    assert order is not None
    assert order.status == ("validation", "status")
    assert ranked_ids(items) == [2, 1, 3]


def test_items_without_such_fields_have_no_order():
    assert ImportanceOrder.of([{"id": 1, "type": "line"}, {"id": 2, "type": "bar"}]) is None
    assert ImportanceOrder.of([[1, "a"], [2, "b"]]) is None
    assert ImportanceOrder.of([{"id": 1, "status": "running"}]) is None
    # An id is not a size, though it is a number
    assert ImportanceOrder.of([{"id": 1}, {"id": 2}]) is None


def test_counts_per_status_count_every_item_the_most_severe_first():
    items = [{"status": "ok"}, {"status": "failing"}, {}, {"status": "ok"}, {"status": "warning"}]
    order = ImportanceOrder.of(items)
    assert order is not None
    counts = order.ranked(items).status_counts()
    assert counts is not None
    assert list(counts.items()) == [("failing", 1), ("warning", 1), (MISSING, 1), ("ok", 2)]
    assert sum(counts.values()) == len(items)


def test_the_newest_and_the_largest_are_given_as_written():
    items = [
        {"status": "ok", "at": "2026-11-02T10:00:00+03:00", "size_bytes": 10},
        {"status": "ok", "at": "2026-11-02T08:00:00Z", "size_bytes": 30},
    ]
    order = ImportanceOrder.of(items)
    assert order is not None
    ranked = order.ranked(items)
    # 08:00Z is later than 10:00+03:00 (07:00Z)
    assert ranked.newest() == "2026-11-02T08:00:00Z"
    assert ranked.largest() == 30
    # Counted over a tail of the ranking: what a cut after the first item leaves out
    assert ranked.newest(1) == "2026-11-02T10:00:00+03:00"
    assert ranked.largest(1) == 10
    assert ranked.status_counts(1) == {"ok": 1}


def test_many_kinds_of_status_are_counted_in_a_few_lines_that_still_add_up():
    items = [{"status": "failed"}] * 3 + [{"status": f"step {n} " + "x" * 60} for n in range(20)]
    order = ImportanceOrder.of(items)
    assert order is not None
    counts = order.ranked(items).status_counts()
    assert counts is not None
    assert len(counts) == MAX_STATUSES
    assert next(iter(counts.items())) == ("failed", 3)
    assert counts[OTHER_STATUSES] == 20 - (MAX_STATUSES - 2)
    assert sum(counts.values()) == len(items)
    assert all(len(label) <= STATUS_LABEL_CHARS for label in counts)
