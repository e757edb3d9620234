"""What the tool areas share: the argument models' base, common field types, affinity sets."""

from __future__ import annotations

from typing import Annotated, Final

from pydantic import BaseModel, ConfigDict, Field

from sstools_agent.domain.ui_context import ObjectType

DASHBOARD: Final = frozenset({ObjectType.DASHBOARD})
DATASET: Final = frozenset({ObjectType.DATASET})
MIGRATION: Final = frozenset({ObjectType.MIGRATION})
EVERY_OBJECT: Final = frozenset(ObjectType)

ObjectId = Annotated[int, Field(ge=1, le=10**15)]
EnvId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
DashboardIds = Annotated[list[ObjectId], Field(min_length=1, max_length=100)]


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown arguments are refused, never passed along."""

    model_config = ConfigDict(extra="forbid")


class NoArgs(ToolArgs):
    """A tool that takes no arguments."""
