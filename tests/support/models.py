"""Chat models for tests that need the agent to make one exact tool call."""

from __future__ import annotations

from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult


class ScriptedModel(BaseChatModel):
    """Calls exactly the tool it is told to (even one it was not given), then answers."""

    calls: list[dict[str, Any]]

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
        return self

    def _generate(
        self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None, **kwargs: Any
    ) -> ChatResult:
        if isinstance(messages[-1], ToolMessage):
            reply = AIMessage(content=f"tool said: {messages[-1].content}")
        else:
            reply = AIMessage(content="", tool_calls=self.calls)
        return ChatResult(generations=[ChatGeneration(message=reply)])
