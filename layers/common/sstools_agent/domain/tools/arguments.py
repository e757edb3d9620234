"""What the tool areas share: the argument models' base, common field types, affinity sets."""

from __future__ import annotations

import re
from typing import Annotated, Final

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

from sstools_agent.domain.ui_context import ObjectType

DASHBOARD: Final = frozenset({ObjectType.DASHBOARD})
DATASET: Final = frozenset({ObjectType.DATASET})
MIGRATION: Final = frozenset({ObjectType.MIGRATION})
EVERY_OBJECT: Final = frozenset(ObjectType)

_DIGITS: Final = re.compile(r"[0-9]+")


def _whole_number(value: object) -> object:
    """An integer argument as a call may send it: an integer, or its digits ("11", as models
    often send ids). Never true/false (a bool is an int in Python: `true` would be 1) nor a
    number written with a fraction (11.0 would quietly be 11): such a call names no object."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and _DIGITS.fullmatch(value):
        return value
    raise PydanticCustomError("whole_number", "ожидается целое число или строка из цифр")


WholeNumber = Annotated[int, BeforeValidator(_whole_number)]
"""Every integer argument of every tool: refused as a bool, a float or any other string."""
ObjectId = Annotated[WholeNumber, Field(ge=1, le=10**15)]
EnvId = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.-]+$")]
DashboardIds = Annotated[list[ObjectId], Field(min_length=1, max_length=100)]


class ToolArgs(BaseModel):
    """Base of every tool's arguments: unknown arguments are refused, never passed along."""

    model_config = ConfigDict(extra="forbid")


class NoArgs(ToolArgs):
    """A tool that takes no arguments."""
