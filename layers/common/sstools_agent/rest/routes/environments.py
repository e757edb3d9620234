"""The environments this deployment knows, for the page's environment selector."""

from __future__ import annotations

from fastapi import APIRouter

from sstools_agent.http.auth import AuthenticatedRoute
from sstools_agent.rest.deps import Api, Caller, responses
from sstools_agent.rest.schemas import EnvironmentItem, EnvironmentList

router = APIRouter(route_class=AuthenticatedRoute)


@router.get("/api/assistant/environments", responses=responses(401))
async def environments(caller: Caller, api: Api) -> EnvironmentList:
    """The environments a page context may name (`KNOWN_ENVIRONMENTS`), in declaration order:
    the same registry the chat validates `envId` against, so the selector offers nothing the
    chat would refuse."""
    del caller  # signed-in users only, like every endpoint of the page
    return EnvironmentList(
        items=[EnvironmentItem(id=env.env_id, tier=env.tier) for env in api.environments]
    )
