"""What the stand-in and the tests' scripted models share: a whole reply decided at once
(`respond`), streamed as a model streams, word by word or as one tool-call chunk."""

from __future__ import annotations

import asyncio
import json
import re
from abc import abstractmethod
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult


class ReplyStreamingModel(BaseChatModel):
    """A chat model whose reply is decided whole by `respond`, then streamed."""

    token_delay_s: float = 0.0
    """Pause between streamed words, to make streaming visible in a demo."""

    @abstractmethod
    def respond(self, messages: Sequence[BaseMessage]) -> AIMessage:
        """The whole reply to a conversation: a tool call, or an answer."""

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.respond(messages))])

    def _chunks(self, reply: AIMessage) -> Iterator[ChatGenerationChunk]:
        if reply.tool_calls:
            chunks = [
                {
                    "name": c["name"],
                    "args": json.dumps(c["args"], ensure_ascii=False),
                    "id": c["id"],
                    "index": i,
                }
                for i, c in enumerate(reply.tool_calls)
            ]
            yield ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks))
            return
        # An answer with nothing to add (after a cancelled card) is still one, empty, chunk
        for word in re.findall(r"\S+\s*", str(reply.content)) or [""]:
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        # BaseChatModel.astream reports each chunk to the callbacks (LangGraph's "messages" mode);
        # without a delay each word still yields the loop, so a stop is noticed between words.
        for chunk in self._chunks(self.respond(messages)):
            yield chunk
            await asyncio.sleep(self.token_delay_s)
