"""LangChain tools built from the catalog: one per ToolSpec, executed through the upstream client.

A tool returns the structured summary to the model, framed as a delimited data block (never as
instructions), and the full output as its artifact, so the UI receives everything while the
model's context stays within budget. The run's
context comes from LangGraph's runtime (`get_runtime`), not from an injected argument: the strict
argument models (unknown arguments refused) must see exactly what the model sent.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.tools import BaseTool, StructuredTool
from langgraph.runtime import get_runtime

from sstools_agent.agent.context import AgentRunContext
from sstools_agent.domain.catalog_types import ToolSpec
from sstools_agent.domain.ports import ToolRunner
from sstools_agent.domain.tool_catalog import CAPABILITIES_TOOL
from sstools_agent.domain.tool_output_summary import DEFAULT_BUDGET_CHARS, render_tool_output_block
from sstools_agent.domain.tool_policy import ToolPolicy

ToolResult = tuple[str, dict[str, Any]]


def _result(tool: str, output: Any, budget: int, **details: Any) -> ToolResult:
    """The model's view (the summary, framed as data) and the artifact (the full output)."""
    summary = render_tool_output_block(tool, output, budget)
    artifact = {
        "output": output,
        "raw_chars": summary.raw_chars,
        "summarised_chars": summary.summarised_chars,
        "summarised": summary.summarised,
        **details,
    }
    return summary.content, artifact


def _as_tool(spec: ToolSpec, run: Callable[..., Awaitable[ToolResult]]) -> BaseTool:
    """A LangChain tool with the catalog's name, description and strict argument model."""
    return StructuredTool.from_function(
        coroutine=run,
        name=spec.name,
        description=spec.description,
        args_schema=spec.args_model,
        response_format="content_and_artifact",
    )


def _upstream_tool(
    spec: ToolSpec, policy: ToolPolicy, upstream: ToolRunner, budget: int
) -> BaseTool:
    async def run(**arguments: Any) -> ToolResult:
        context = get_runtime(AgentRunContext).context
        call = policy.resolve(spec.name, arguments, context.ui_context)
        if call is None:  # the catalog declares every tool built here
            raise LookupError(spec.name)
        outcome = await upstream.call(call, context.credentials, context.request_id)
        return _result(
            spec.name,
            outcome.output,
            budget,
            attempts=outcome.attempts,
            elapsed_s=outcome.elapsed_s,
        )

    return _as_tool(spec, run)


def _capabilities_tool(spec: ToolSpec, policy: ToolPolicy, budget: int) -> BaseTool:
    async def run(**arguments: Any) -> ToolResult:
        context = get_runtime(AgentRunContext).context
        selection = policy.select_tools(context.who, context.ui_context)
        tools = [
            {"name": s.name, "description": s.description, "operation": s.operation.value}
            for s in selection.offered
        ]
        # plain data: the artifact is stored in the checkpoint (adapters/checkpointer.py)
        role = None if context.role is None else context.role.value
        return _result(spec.name, {"role": role, "tools": tools}, budget)

    return _as_tool(spec, run)


def build_tools(
    policy: ToolPolicy, upstream: ToolRunner, budget: int = DEFAULT_BUDGET_CHARS
) -> list[BaseTool]:
    """Every catalog tool as a LangChain tool; which ones the model sees is decided per turn."""
    return [
        _capabilities_tool(spec, policy, budget)
        if spec.name == CAPABILITIES_TOOL
        else _upstream_tool(spec, policy, upstream, budget)
        for spec in policy.catalog
    ]
