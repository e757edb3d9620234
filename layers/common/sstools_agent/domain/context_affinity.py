"""Which tools belong to the page the user came from (a hard filter, before routing).

A hard filter, not a ranking: on a dashboard page only dashboard tools are offered, on a dataset
page only dataset tools; with no object every tool the role allows. show_capabilities is always
offered. With no environment selected, tools that act in an environment are out (the seed's
environment-agnostic mode).
"""

from __future__ import annotations

from enum import StrEnum

from sstools_agent.domain.catalog_types import ToolSpec
from sstools_agent.domain.tool_catalog import CAPABILITIES_TOOL, ToolCatalog
from sstools_agent.domain.ui_context import ObjectType, UIContext


class AffinityVerdict(StrEnum):
    """Why a tool stays or goes on this page."""

    KEPT = "kept"
    OTHER_OBJECT_TYPE = "other_object_type"
    NO_ENVIRONMENT = "no_environment"


def affinity_verdict(spec: ToolSpec, ui_context: UIContext | None) -> AffinityVerdict:
    """Whether the tool fits the page described by `ui_context`."""
    if spec.name == CAPABILITIES_TOOL:
        return AffinityVerdict.KEPT
    object_type = ui_context.object_type if ui_context is not None else None
    if object_type is not None and object_type not in spec.affinity:
        return AffinityVerdict.OTHER_OBJECT_TYPE
    env_id = ui_context.env_id if ui_context is not None else None
    if env_id is None and spec.is_environment_specific:
        return AffinityVerdict.NO_ENVIRONMENT
    return AffinityVerdict.KEPT


def tools_for_object(catalog: ToolCatalog, object_type: ObjectType | None) -> tuple[str, ...]:
    """The affinity list of an object type (every tool when there is no object)."""
    return tuple(
        spec.name
        for spec in catalog
        if spec.name == CAPABILITIES_TOOL or object_type is None or object_type in spec.affinity
    )
