"""The 22 agent tools, assembled from their areas (`domain/tools/`) into the one catalog.

Every other module (role policy, affinity, guardrails, the upstream client, the agent, the router,
the prefetch, the stand-in model) reads these declarations; none keeps a list of tool names of its
own. The upstream contract the paths rely on is documented in docs/upstream-api.md.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from sstools_agent.domain.catalog_types import IntentTag, ToolSpec
from sstools_agent.domain.tools import dashboards, datasets, meta, migrations, operations
from sstools_agent.domain.tools.arguments import NoArgs, ToolArgs
from sstools_agent.domain.ui_context import ObjectType

__all__ = ["CAPABILITIES_TOOL", "CATALOG", "TOOLS", "NoArgs", "ToolArgs", "ToolCatalog"]

TOOLS: Final[tuple[ToolSpec, ...]] = (
    *meta.TOOLS,
    *dashboards.TOOLS,
    *datasets.TOOLS,
    *operations.TOOLS,
    *migrations.TOOLS,
)


class ToolCatalog:
    """Look-up over tool declarations, in declaration order."""

    def __init__(self, tools: Iterable[ToolSpec]) -> None:
        self._by_name: dict[str, ToolSpec] = {}
        readers: dict[ObjectType, str] = {}
        for tool in tools:
            if tool.name in self._by_name:
                raise ValueError(f"tool {tool.name!r} is declared twice")
            self._by_name[tool.name] = tool
            if tool.describes is not None:
                other = readers.setdefault(tool.describes.object_type, tool.name)
                if other != tool.name:
                    raise ValueError(f"{other} and {tool.name} describe the same page object")

    def get(self, name: str) -> ToolSpec | None:
        """The tool with this name, or None for a name the catalog does not know."""
        return self._by_name.get(name)

    def __iter__(self) -> Iterator[ToolSpec]:
        return iter(self._by_name.values())

    def __len__(self) -> int:
        return len(self._by_name)

    @property
    def names(self) -> tuple[str, ...]:
        """Tool names in declaration order."""
        return tuple(self._by_name)

    def tagged(self, tag: IntentTag) -> tuple[str, ...]:
        """The tools offered for `tag`'s intent, in declaration order."""
        return tuple(spec.name for spec in self if tag in spec.intents)

    def reader_for(self, object_type: ObjectType) -> ToolSpec | None:
        """The read tool that describes a page object of this type, if one does."""
        return next(
            (s for s in self if s.describes and s.describes.object_type is object_type), None
        )


CATALOG: Final = ToolCatalog(TOOLS)
CAPABILITIES_TOOL: Final = CATALOG.tagged(IntentTag.CAPABILITIES)[0]
