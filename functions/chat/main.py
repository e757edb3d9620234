"""The chat function's entry point: settings read and collaborators built once, at import.

Lambda Web Adapter starts `uvicorn main:app` (run.sh); the module is the one instance per
container. Importing it is Lambda's init phase, so the agent (model client, checkpointer, tool
router) is built here rather than inside the first request; the router's embeddings warm in a
thread of their own meanwhile (keywords route until they are ready). With SnapStart the snapshot
is taken after this import and the adapter's before-checkpoint hook, which waits for those
embeddings; a restored environment runs the after-restore hook (`http/snapstart.py`).
"""

from __future__ import annotations

from app import create_app

from sstools_agent.settings import ChatSettings
from sstools_agent.wiring.chat import build_chat

settings = ChatSettings()
deps = build_chat(settings)
deps.agent()
app = create_app(deps, origin_verify_secret=settings.origin_verify_secret)
