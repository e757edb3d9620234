"""The docs stay true to the code: the tool reference is what the catalog renders."""

from __future__ import annotations

from scripts.tool_reference import REFERENCE, main, render
from sstools_agent.domain.tool_catalog import CATALOG


def test_the_committed_tool_reference_is_what_the_catalog_renders():
    # A stale docs/tools.md is regenerated with `make docs`
    assert REFERENCE.read_text(encoding="utf-8") == render()
    assert main(["--check"]) == 0


def test_the_reference_lists_every_tool_and_every_upstream_call():
    reference = render()
    for spec in CATALOG:
        assert f"| `{spec.name}` |" in reference
        if not spec.is_local:
            assert f"| `{spec.method} {spec.path}` | `{spec.name}` |" in reference
