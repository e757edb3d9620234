"""Chat models for tests that need the agent to make exact tool calls, whatever a message says.

Tests of the infrastructure (streams, cards, locks, replay, pacing, the edges) need "some answer"
or "this tool call", never a reading of the user's words: they script the model, so that no
stand-in's phrasing decides them. What a user asks in words and sees in return is asserted on the
stand-in, in the scenario, acceptance and browser tests.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from pydantic import Field

from sstools_agent.agent.scripted_replies import ReplyStreamingModel


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


DEPLOY_MESSAGE: Final = "задеплой дашборд 10 в staging"
"""The engineer's staging deploy from dashboard 10's page: the card most tests answer."""
STATUS_MESSAGE: Final = "какой статус у этого дашборда?"
"""A read about dashboard 10's page: one search_dashboards call."""
SEARCH_MESSAGE: Final = "найди дашборды"
"""A search of the environment's dashboards: one search_dashboards call, its defaults."""
ANSWER: Final = "Вот что вернул инструмент:"
"""How a scripted answer starts (the tools' output, cut short, follows it)."""
SAID_AFTER_TOOLS: Final = 300
"""How much of the tools' output a scripted answer repeats, in characters."""

COMMON_SCRIPT: Final[dict[str, list[dict[str, Any]]]] = {
    DEPLOY_MESSAGE: [
        {
            "name": "deploy_dashboard",
            "args": {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "staging"},
        }
    ],
    STATUS_MESSAGE: [{"name": "search_dashboards", "args": {"dashboard_ids": [10]}}],
    SEARCH_MESSAGE: [{"name": "search_dashboards", "args": {}}],
    # the sample API Gateway event's message (events/chat_api_gateway.json), on dataset 15's page
    "есть ли проблемы с этим датасетом?": [
        {"name": "superset_explore_database", "args": {"dataset_id": 15}}
    ],
    "задеплой дашборд 10 в prod": [
        {
            "name": "deploy_dashboard",
            "args": {"dashboard_ids": [10], "source_env_id": "ss-dev", "target_env_id": "prod"},
        }
    ],
    "закоммить изменения дашборда": [
        {"name": "commit_changes", "args": {"dashboard_id": 10, "message": "Изменения дашборда"}}
    ],
}
"""The calls the infrastructure tests' messages make (without ids: each call gets a new one)."""


class ScriptedChatModel(ReplyStreamingModel):
    """A streaming model that reads no words: a user's message that contains one of `script`'s
    keys makes that key's tool calls (each with a new id); any other message gets `answer`, and
    once the tools answered, it says `answer` followed by the start of their output."""

    script: dict[str, list[dict[str, Any]]] = Field(default_factory=lambda: dict(COMMON_SCRIPT))
    answer: str = "Понял. Чем ещё помочь?"

    @property
    def _llm_type(self) -> str:
        return "scripted-streaming"

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:
        return self  # it calls what the script says, offered or not: the policy decides

    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The script's calls for the last user message, or the answer."""
        results = []
        for message in reversed(messages):
            if not isinstance(message, ToolMessage):
                break
            results.append(str(message.content))
        if results:
            said = " ".join(reversed(results))[:SAID_AFTER_TOOLS]
            return AIMessage(content=f"{ANSWER} {said}")
        asked = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        text = str(asked.content) if asked is not None else ""
        for key, calls in self.script.items():
            if key in text:
                made = [{**call, "id": f"call_{uuid.uuid4().hex[:16]}"} for call in calls]
                return AIMessage(content="", tool_calls=made)
        return AIMessage(content=self.answer)
