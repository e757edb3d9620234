"""Cached factories of the chat function's agent: the model, the checkpointer, the turns."""

from __future__ import annotations

from functools import lru_cache

from langgraph_checkpoint_aws import DynamoDBSaver

from sstools_agent.adapters.checkpointer import checkpointer_from
from sstools_agent.agent.models import build_chat_model
from sstools_agent.agent.runtime import ChatAgent
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.tool_routing import ToolRouter
from sstools_agent.factories import (
    audit_sink,
    confirmation_store_from,
    confirmation_workflow_from,
    conversation_store,
    tool_output_store_from,
    tool_policy,
    tool_router_from,
    upstream_client,
)
from sstools_agent.settings import load_settings


@lru_cache(maxsize=1)
def checkpointer() -> DynamoDBSaver:
    """The process's checkpointer (its boto3 clients are reused across invocations)."""
    return checkpointer_from(load_settings())


@lru_cache(maxsize=1)
def chat_agent() -> ChatAgent:
    """The process's agent: its graph is stateless, conversations live in the checkpointer."""
    settings = load_settings()
    return ChatAgent(
        build_chat_model(settings),
        checkpointer(),
        tool_policy(),
        upstream_client(),
        output_budget_chars=settings.tool_output_budget_chars,
        router=tool_router(),
    )


@lru_cache(maxsize=1)
def tool_router() -> ToolRouter | None:
    """The process's tool router, its tool vectors computed at start (Lambda's init phase)."""
    router = tool_router_from(load_settings())
    if router is not None:
        router.warm()
    return router


@lru_cache(maxsize=1)
def chat_turns() -> ChatTurns:
    """The process's chat turn service."""
    settings = load_settings()
    return ChatTurns(
        chat_agent,
        conversation_store(),
        confirmation_store_from(settings),
        confirmation_workflow_from(settings),
        audit=audit_sink(),
        confirmation_timeout_s=settings.confirmation_timeout_s,
        prefetch_timeout_s=settings.prefetch_timeout_s,
        outputs=tool_output_store_from(settings),
    )
