"""Reading the plan of a change before its card: the reads its tool's recipe names, side by side,
as the user, within a deadline of their own.

A plan read is a read of the catalog (`search_dashboards` in the target environment, say) run
through the upstream client like any read, but in the environment the plan names, not the page's.
A read that fails, is not the user's to make, or is slower than the deadline (handed to the
upstream client, its retry included) never holds the card back: the card says the plan could not
be read and why, and is still a card.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from sstools_agent.domain.catalog_types import DEFAULT_SQL_DIALECT, Operation
from sstools_agent.domain.change_plans import plan_reads, unread_plan, written_plan
from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.plan_types import ChangePlan, PlanRead
from sstools_agent.domain.policy_engine import Who
from sstools_agent.domain.ports import ToolRunner
from sstools_agent.domain.sql_classifier import classify_sql
from sstools_agent.domain.tool_calls import ResolvedToolCall
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.tool_runs import ToolCallFailed, UpstreamCredentials
from sstools_agent.settings import DEFAULT_PLAN_TIMEOUT_S

logger = logging.getLogger(__name__)


class _Unreadable(Exception):
    """A plan read that cannot be made; its text says why, in words."""


def _why(failure: ToolCallFailed, timeout_s: float) -> str:
    if failure.code is ErrorCode.TOOL_TIMEOUT:
        return f"ss-tools не ответил за {timeout_s:g} с"
    if failure.status_code is not None:
        return f"ss-tools ответил ошибкой {failure.status_code}"
    return "ss-tools недоступен"


class PlanReader:
    """Reads the plans of writes whose tools declare one."""

    def __init__(
        self, policy: ToolPolicy, upstream: ToolRunner, timeout_s: float = DEFAULT_PLAN_TIMEOUT_S
    ) -> None:
        self.policy, self.upstream, self.timeout_s = policy, upstream, timeout_s

    async def read(
        self,
        tool: str,
        args: Mapping[str, Any],
        environment: str | None,
        *,
        who: Who,
        credentials: UpstreamCredentials,
        request_id: str | None = None,
    ) -> ChangePlan | None:
        """The plan of `tool` called with `args` in `environment` (None: the tool declares
        none)."""
        spec = self.policy.catalog.get(tool)
        if spec is None or spec.plan is None:
            return None
        arguments = spec.args_model.model_validate(dict(args)).model_dump(mode="json")
        reads = plan_reads(spec.plan, arguments, environment)
        outputs = await asyncio.gather(
            *(self._read(each, who, credentials, request_id) for each in reads),
            return_exceptions=True,
        )
        for output in outputs:
            if isinstance(output, ToolCallFailed):
                logger.info("plan not read", extra={"tool": tool, "code": output.code.value})
                why = _why(output, self.timeout_s)
                return unread_plan(spec.plan, arguments, environment, why)
            if isinstance(output, _Unreadable):
                return unread_plan(spec.plan, arguments, environment, str(output))
            if isinstance(output, BaseException):
                raise output
        read = dict(zip((r.key for r in reads), outputs, strict=True))
        return written_plan(spec.plan, arguments, environment, read)

    async def _read(
        self,
        read: PlanRead,
        who: Who,
        credentials: UpstreamCredentials,
        request_id: str | None,
    ) -> Any:
        spec = self.policy.catalog.get(read.tool)
        environment = self.policy.environments.get(read.env_id) if read.env_id else None
        if spec is None:
            raise _Unreadable(f"чтение {read.tool} не объявлено")
        if read.env_id is not None and environment is None:
            raise _Unreadable(f"окружение {read.env_id} неизвестно")
        sql = None
        if spec.sql_argument is not None:  # a SQL tool reads only with a statement that reads
            statement = str(read.args[spec.sql_argument])
            dialect = self.policy.sql_dialect or DEFAULT_SQL_DIALECT
            sql = classify_sql(statement, dialect)
        if (sql.operation if sql is not None else spec.operation) is not Operation.READ:
            raise _Unreadable(f"{read.tool} здесь не чтение")
        args = spec.args_model.model_validate(read.args)
        call = ResolvedToolCall(spec, args, environment, Operation.READ, sql)
        if not self.policy.roles.check(who, call).allowed:
            where = f"окружение {read.env_id}" if read.env_id else "эти данные"
            raise _Unreadable(f"у вас нет права читать {where}")
        outcome = await self.upstream.call(call, credentials, request_id, timeout_s=self.timeout_s)
        return outcome.output
