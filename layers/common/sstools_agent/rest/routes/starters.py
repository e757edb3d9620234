"""The example questions a new conversation greets with, for the caller's role on the page."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from sstools_agent.domain.starter_questions import starter_questions
from sstools_agent.domain.ui_context import CONTEXT_VERSION
from sstools_agent.http.auth import AuthenticatedRoute
from sstools_agent.rest.deps import Api, Caller, responses
from sstools_agent.rest.schemas import StarterItem, StarterList, StartersQuery

router = APIRouter(route_class=AuthenticatedRoute)


@router.get("/api/assistant/starters", responses=responses(401))
async def starters(
    caller: Caller, api: Api, query: Annotated[StartersQuery, Query()]
) -> StarterList:
    """Up to three questions for the page's object, each leading to a tool this user is offered
    there (their role, the page's object and environment): an analyst is never shown one that
    would end in a refusal. A page context the chat would refuse is 422 `INVALID_CONTEXT`."""
    payload = {"contextVersion": CONTEXT_VERSION, "objectType": query.object_type}
    page = api.page_context(payload | {"envId": query.env_id}, caller)
    questions = starter_questions(api.tools, caller.role, page)
    return StarterList(items=[StarterItem(text=q.text, tool=q.tool) for q in questions])
