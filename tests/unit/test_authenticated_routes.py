"""Every route that has a caller authenticates before its body is read: a router that forgets
`AuthenticatedRoute` would parse an anonymous caller's body first (and answer its schema), or
fail on its first request. The REST routers choose the route class one by one (the chat app sets
it for all its routes: tests/integration/test_body_limits.py sends them anonymous bodies)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from fastapi import APIRouter
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute

from sstools_agent.http.auth import AuthenticatedRoute, authenticated_principal
from sstools_agent.rest.deps import current_principal
from sstools_agent.rest.routes import conversations, environments, files, identity

ROUTERS = {
    "conversations": conversations.router,
    "environments": environments.router,
    "files": files.router,
    "identity": identity.router,
}
CALLER_DEPENDENCIES: tuple[Callable[..., Any], ...] = (current_principal, authenticated_principal)


def calls(dependant: Dependant) -> Iterator[Callable[..., Any] | None]:
    for each in dependant.dependencies:
        yield each.call
        yield from calls(each)


def routes_with_a_caller(router: APIRouter) -> list[APIRoute]:
    return [
        route
        for route in router.routes
        if isinstance(route, APIRoute)
        and any(call in CALLER_DEPENDENCIES for call in calls(route.dependant))
    ]


@pytest.mark.parametrize("name", ROUTERS)
def test_every_rest_route_with_a_caller_authenticates_before_its_body(name: str):
    for route in routes_with_a_caller(ROUTERS[name]):
        assert isinstance(route, AuthenticatedRoute), f"{route.path} reads its body first"


def test_the_routers_with_callers_are_found():
    found = {name for name, router in ROUTERS.items() if routes_with_a_caller(router)}
    assert found == {"conversations", "environments", "files"}
