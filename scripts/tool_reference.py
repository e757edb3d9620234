"""Writes docs/tools.md, the tool reference, from the tool catalog (`make docs`).

The catalog is the only tool registry; the reference is one of its views, like the router and the
stand-in model. `tests/unit/test_docs.py` fails when the committed file is not what this renders,
so a new tool's documentation is regenerated, never written by hand.

Usage: `python scripts/tool_reference.py [--check]` with `layers/common` on the path.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Final

from sstools_agent.domain.catalog_types import EnvironmentSource, Operation, ToolSpec
from sstools_agent.domain.roles import RoleRequirement
from sstools_agent.domain.tool_catalog import CAPABILITIES_TOOL, CATALOG, ToolCatalog
from sstools_agent.domain.ui_context import ObjectType

REFERENCE: Final = Path(__file__).resolve().parents[1] / "docs" / "tools.md"

_HEADER: Final = """\
# Tool reference

<!-- Generated from the tool catalog by `make docs` (scripts/tool_reference.py): do not edit. -->

Every tool the agent can call, as declared in `layers/common/sstools_agent/domain/tools/`. The
rules behind the columns are in [policy.md](policy.md) (roles, affinity, guardrails) and
[upstream-api.md](upstream-api.md) (requests, errors, timeouts and retries).
"""


def _roles(requirement: RoleRequirement) -> str:
    tiers = (requirement.dev, requirement.staging, requirement.prod)
    return " / ".join(role.value for role in tiers)


def _environment(spec: ToolSpec) -> str:
    if spec.environment_source is EnvironmentSource.UI_CONTEXT:
        return "page (envId)"
    if spec.environment_source is EnvironmentSource.ARGUMENT:
        return f"argument `{spec.environment_argument}`"
    return "—"


def _operation(spec: ToolSpec) -> str:
    if spec.sql_argument:
        return f"read or write, by parsing `{spec.sql_argument}`"
    return spec.operation.value


def _least_roles(spec: ToolSpec) -> str:
    if spec.sql_argument:
        return f"reads: {_roles(spec.read_roles)}; writes: {_roles(spec.required_roles)}"
    return _roles(spec.required_roles)


def _pages(spec: ToolSpec) -> str:
    if spec.name == CAPABILITIES_TOOL:
        return "always"
    pages = [object_type.value for object_type in ObjectType if object_type in spec.affinity]
    return ", ".join(pages) if pages else "no-object pages only"


def _call(spec: ToolSpec) -> str:
    return "answered by the agent" if spec.is_local else f"`{spec.method} {spec.path}`"


def _example(spec: ToolSpec) -> str:
    return f"`{json.dumps(dict(spec.example_args), ensure_ascii=False)}`"


def _arguments_go_in(spec: ToolSpec) -> str:
    placeholders = set(spec.path_placeholders)
    names = [f"`{name}`" for name in spec.args_model.model_fields if name not in placeholders]
    listed = ", ".join(names) or "—"
    if spec.method == "GET":
        return f"query string: {listed}"
    # The page's environment travels in the body too (the upstream client adds it)
    plus = " (plus `env_id`)" if spec.environment_source is EnvironmentSource.UI_CONTEXT else ""
    return f"JSON body{plus}: {listed}"


def _contract_operation(spec: ToolSpec) -> str:
    return "per SQL statement" if spec.sql_argument else spec.operation.value


def _table(header: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def render(catalog: ToolCatalog = CATALOG) -> str:
    """The whole reference, as docs/tools.md holds it."""
    policy = _table(
        (
            "tool",
            "operation",
            "environment from",
            "least role dev / staging / prod",
            "pages (affinity)",
            "retries",
            "upstream call",
            "example arguments",
        ),
        [
            (
                f"`{spec.name}`",
                _operation(spec),
                _environment(spec),
                _least_roles(spec),
                _pages(spec),
                "yes" if spec.may_retry else "no",
                _call(spec),
                _example(spec),
            )
            for spec in catalog
        ],
    )
    contract = _table(
        ("method and path", "tool", "arguments go in", "operation"),
        [
            (_call(spec), f"`{spec.name}`", _arguments_go_in(spec), _contract_operation(spec))
            for spec in catalog
            if not spec.is_local
        ],
    )
    writes = sum(spec.operation is Operation.WRITE for spec in catalog)
    costed = ", ".join(f"`{spec.name}`" for spec in catalog if spec.cost) or "none"
    return (
        f"{_HEADER}\n## Tools\n\n{len(catalog)} tools, {writes} of them writes; a call that writes "
        "always waits for the user's confirmation, and so does a call with a cost (a paid LLM "
        f"task: {costed}), even a read.\n\n{policy}\n## Upstream calls\n\n{contract}"
    )


def main(argv: list[str]) -> int:
    """Writes the reference; with `--check`, only says whether the committed one is current."""
    rendered = render()
    if "--check" in argv:
        if REFERENCE.read_text(encoding="utf-8") != rendered:
            print(f"{REFERENCE} is stale: run `make docs`", file=sys.stderr)
            return 1
        return 0
    REFERENCE.write_text(rendered, encoding="utf-8")
    print(f"wrote {REFERENCE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
