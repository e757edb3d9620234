"""A tool call resolved against the catalog: validated arguments, environment and operation."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ValidationError

from sstools_agent.domain.catalog_types import EnvironmentSource, Operation, ToolSpec
from sstools_agent.domain.environments import Environment, EnvironmentRegistry
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.roles import RoleRequirement
from sstools_agent.domain.sql_classifier import SqlClassification, classify_sql
from sstools_agent.domain.ui_context import UIContext

MAX_TOOL_ARGS_BYTES: Final = 256 * 1024
"""A call's arguments as JSON (UTF-8) at most, whoever writes them (the model, an edit): the call
is kept in a stored item (its card, its confirmation, its history entry) that DynamoDB caps at
400 KB. 100,000 characters of SQL fit unless most are 3- or 4-byte characters."""


class InvalidToolCall(Exception):
    """A call that cannot be evaluated: bad arguments or no environment to run in."""

    def __init__(
        self, tool: str, detail: str, code: ErrorCode = ErrorCode.VALIDATION_ERROR
    ) -> None:
        super().__init__(f"{tool}: {detail}")
        self.tool = tool
        self.detail = detail
        self.code = code


@dataclass(frozen=True, slots=True)
class ResolvedToolCall:
    """A call whose arguments validated and whose environment and operation are known."""

    spec: ToolSpec
    args: BaseModel
    environment: Environment | None
    operation: Operation
    sql: SqlClassification | None = None

    @property
    def arguments(self) -> dict[str, Any]:
        """The validated arguments as plain JSON data (defaults filled in)."""
        return self.args.model_dump(mode="json")

    @property
    def required_roles(self) -> RoleRequirement:
        """What this particular call requires (a read SQL call needs only read access)."""
        if self.spec.sql_argument is not None and self.operation is Operation.READ:
            return self.spec.read_roles
        return self.spec.required_roles

    @property
    def may_retry(self) -> bool:
        """Retries are for reads only, whatever the declaration says: a write is never repeated."""
        return self.spec.may_retry and self.operation is Operation.READ


def _resolve_environment(
    spec: ToolSpec,
    args: BaseModel,
    ui_context: UIContext | None,
    environments: EnvironmentRegistry,
) -> Environment | None:
    match spec.environment_source:
        case EnvironmentSource.NONE:
            return None
        case EnvironmentSource.UI_CONTEXT:
            env_id = ui_context.env_id if ui_context is not None else None
            if env_id is None:
                raise InvalidToolCall(
                    spec.name, "no environment is selected on the page; choose one first"
                )
        case EnvironmentSource.ARGUMENT:
            env_id = getattr(args, spec.environment_argument or "")
    environment = environments.get(env_id)
    if environment is None:
        raise InvalidToolCall(spec.name, f"environment {env_id!r} is not known")
    return environment


def resolve_tool_call(
    spec: ToolSpec,
    raw_args: Mapping[str, Any],
    ui_context: UIContext | None,
    environments: EnvironmentRegistry,
    sql_dialect: str | None = None,
) -> ResolvedToolCall:
    """Validates the arguments and works out where the call runs and whether it writes."""
    try:
        args = spec.args_model.model_validate(dict(raw_args))
    except ValidationError as error:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e['loc']) or 'arguments'}: {e['msg']}"
            for e in error.errors()
        )
        raise InvalidToolCall(spec.name, f"invalid arguments: {problems}") from None
    size = len(json.dumps(args.model_dump(mode="json"), ensure_ascii=False).encode())
    if size > MAX_TOOL_ARGS_BYTES:
        limit = MAX_TOOL_ARGS_BYTES // 1024
        raise InvalidToolCall(
            spec.name, f"аргументы занимают {size // 1024} КБ, а можно не больше {limit} КБ"
        )
    environment = _resolve_environment(spec, args, ui_context, environments)
    if spec.sql_argument is None:
        return ResolvedToolCall(spec, args, environment, spec.operation)
    sql_text = str(getattr(args, spec.sql_argument))
    sql = classify_sql(sql_text, sql_dialect) if sql_dialect else classify_sql(sql_text)
    return ResolvedToolCall(spec, args, environment, sql.operation, sql)
