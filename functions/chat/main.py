"""The chat function's entry point: settings read once, collaborators from cached factories.

Lambda Web Adapter starts `uvicorn main:app` (run.sh); the local stack imports `app` the same way.
"""

from __future__ import annotations

from app import app_from_settings

from sstools_agent.settings import load_settings

app = app_from_settings(load_settings())
