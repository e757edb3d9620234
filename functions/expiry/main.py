"""The expiry function's entry point (`main.handler`): the chat function's collaborators built
once, at import (Lambda's init phase), without the tool router (no embeddings to warm)."""

from __future__ import annotations

from app import create_handler

from sstools_agent.settings import ChatSettings
from sstools_agent.wiring.chat import build_chat

deps = build_chat(ChatSettings(), routed=False)  # it closes cards; it routes no message
handler = create_handler(deps.expiry_recorder())
