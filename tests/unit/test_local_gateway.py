"""The local gateway routes as the template's API Gateway definition does."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from local.gateway import LocalGateway, template_routes

pytestmark = pytest.mark.anyio


def test_routes_come_from_the_template():
    routes = {(route.pattern.pattern, route.function) for route in template_routes()}
    assert (r"^/api/agent/chat$", "ChatFunction") in routes
    assert (r"^/api/assistant/.+$", "ApiFunction") in routes
    assert (r"^/\.well\-known/jwks\.json$", "ApiFunction") in routes


def named(name: str) -> FastAPI:
    app = FastAPI()

    @app.api_route("/{path:path}", methods=["GET", "POST", "DELETE"])
    def answer(path: str) -> dict[str, str]:
        return {"function": name, "path": path}

    return app


async def through_gateway(method: str, path: str) -> httpx.Response:
    """A request through a gateway whose two functions answer with their names."""
    apps = {"ChatFunction": named("ChatFunction"), "ApiFunction": named("ApiFunction")}
    transport = httpx.ASGITransport(app=LocalGateway(apps))
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        return await client.request(method, path)


@pytest.mark.parametrize(
    ("method", "path", "function"),
    [
        ("POST", "/api/agent/chat", "ChatFunction"),
        ("POST", "/api/agent/chat/cancel", "ChatFunction"),
        ("GET", "/api/assistant/conversations", "ApiFunction"),
        ("DELETE", "/api/assistant/conversations/abc", "ApiFunction"),
        ("GET", "/api/agent/conversations/abc/active", "ApiFunction"),
        ("POST", "/api/auth/service-token", "ApiFunction"),
        ("GET", "/.well-known/jwks.json", "ApiFunction"),
    ],
)
async def test_each_path_reaches_its_function(method: str, path: str, function: str):
    gateway = LocalGateway(
        {"ChatFunction": named("ChatFunction"), "ApiFunction": named("ApiFunction")}
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gateway), base_url="http://gw"
    ) as client:
        response = await client.request(method, path)
    assert response.json()["function"] == function


@pytest.mark.parametrize(("method", "path"), [("GET", "/api/agent/chat"), ("GET", "/nowhere")])
async def test_unrouted_requests_are_404_with_a_code(method: str, path: str):
    gateway = LocalGateway(
        {"ChatFunction": named("ChatFunction"), "ApiFunction": named("ApiFunction")}
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=gateway), base_url="http://gw"
    ) as client:
        response = await client.request(method, path)
    assert response.status_code == 404
    assert response.json()["code"] == "NOT_FOUND"


def test_a_function_without_a_local_app_is_refused():
    with pytest.raises(ValueError, match="ApiFunction"):
        LocalGateway({"ChatFunction": named("ChatFunction")})
