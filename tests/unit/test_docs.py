"""The docs stay true to the code: every upstream call and every tool is documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from sstools_agent.domain.tool_catalog import CATALOG

DOCS = Path(__file__).resolve().parents[2] / "docs"


@pytest.mark.parametrize("spec", [s for s in CATALOG if s.path], ids=lambda s: s.name)
def test_every_upstream_call_is_in_the_contract(spec):
    assert f"`{spec.method} {spec.path}` | `{spec.name}`" in (DOCS / "upstream-api.md").read_text()


@pytest.mark.parametrize("name", CATALOG.names)
def test_every_tool_is_in_the_policy_table(name):
    assert f"| `{name}` |" in (DOCS / "policy.md").read_text()
