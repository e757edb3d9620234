"""Rules the suite keeps so that one test cannot break the tests after it."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_test_uses_motos_in_process_mock():
    # Leaving `mock_aws()` resets every moto backend of the process, the in-process moto server
    # the integration tests share too: the tests after it on that worker lose their tables,
    # keys and buses. Tests reach AWS through the suite's moto server (`aws_endpoint`).
    users = [
        path.relative_to(TESTS).as_posix()
        for path in TESTS.rglob("*.py")
        if "node_modules" not in path.parts
        and path.name != Path(__file__).name
        and "mock_aws" in path.read_text(encoding="utf-8")
    ]
    assert users == []
