"""Context prefetch: the page's object, fetched from the upstream while the turn starts.

When the UI context names an object, its summary is read with the same read tool the model would
call (the catalog's tool that `describes` that object type), as the user, through the policy,
summarised to a small budget, and put into the system prompt as a delimited data block. The model
can then answer "what is the status of this dashboard" without a tool round trip (the router
suppresses search_dashboards for it). A prefetch that fails, is not allowed, or is slower than its
budget yields None: the turn goes the normal tool path, delayed at most by the budget (handed to
the upstream client as this call's deadline).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any, Final

from sstools_agent.domain.policy_engine import Who
from sstools_agent.domain.ports import ToolRunner
from sstools_agent.domain.tool_calls import InvalidToolCall
from sstools_agent.domain.tool_output_summary import summarise_tool_output
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.tool_runs import ToolCallFailed, UpstreamCredentials
from sstools_agent.domain.ui_context import UIContext
from sstools_agent.settings import DEFAULT_PREFETCH_TIMEOUT_S

logger = logging.getLogger(__name__)

PREFETCH_BUDGET_CHARS: Final = 2_000


@dataclass(frozen=True, slots=True)
class PrefetchedObject:
    """The page object's summary, as the read tool returned it (summarised)."""

    tool: str
    args: dict[str, Any]
    summary: str
    """JSON text, at most PREFETCH_BUDGET_CHARS."""
    elapsed_ms: float


async def prefetch_object(
    policy: ToolPolicy,
    upstream: ToolRunner,
    who: Who,
    ui_context: UIContext | None,
    credentials: UpstreamCredentials,
    *,
    timeout_s: float = DEFAULT_PREFETCH_TIMEOUT_S,
    request_id: str | None = None,
) -> PrefetchedObject | None:
    """The page object's summary, or None (no object, not allowed, failed or too slow)."""
    if ui_context is None or ui_context.object_type is None or ui_context.object_id is None:
        return None
    # The read tool that describes this kind of object is the one whose declaration says so.
    reader = policy.catalog.reader_for(ui_context.object_type)
    if reader is None or reader.describes is None:
        return None
    tool, args = reader.name, reader.describes.arguments(int(ui_context.object_id))
    started = time.perf_counter()
    try:
        decision = policy.evaluate(who, tool, args, ui_context)
        call = policy.resolve(tool, args, ui_context)
        if call is None or not decision.permission.allowed or decision.requires_confirmation:
            return None
        # The client owns the deadline (its retry included): the budget is handed to it.
        outcome = await upstream.call(call, credentials, request_id, timeout_s=timeout_s)
    except (ToolCallFailed, InvalidToolCall) as failure:
        logger.info("prefetch skipped", extra={"tool": tool, "reason": type(failure).__name__})
        return None
    summary = summarise_tool_output(outcome.output, PREFETCH_BUDGET_CHARS)
    return PrefetchedObject(tool, args, summary.content, (time.perf_counter() - started) * 1000)
