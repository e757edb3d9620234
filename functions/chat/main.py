"""The chat function's entry point: settings read once, collaborators from cached factories.

Lambda Web Adapter starts `uvicorn main:app` (run.sh); the local stack imports `app` the same way.
"""

from __future__ import annotations

from app import create_app

from sstools_agent.factories import audit_sink, chat_turns, service_token, user_verifier
from sstools_agent.settings import load_settings

app = create_app(
    turns=chat_turns(),
    verifier=user_verifier(),
    service_token=service_token(),
    environments=load_settings().environments(),
    audit=audit_sink(),
)
