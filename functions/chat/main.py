"""The chat function's entry point: settings read and collaborators built once, at import.

Lambda Web Adapter starts `uvicorn main:app` (run.sh); the module is the one instance per
container.
"""

from __future__ import annotations

from app import create_app

from sstools_agent.settings import ChatSettings
from sstools_agent.wiring.chat import build_chat

settings = ChatSettings()
app = create_app(build_chat(settings), origin_verify_secret=settings.origin_verify_secret)
