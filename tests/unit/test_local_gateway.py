"""The local gateway routes as the template's API Gateway definition does."""

from __future__ import annotations

import httpx
import pytest
from fastapi import FastAPI

from local.gateway import LocalGateway, template_routes
from local.page import page_app
from sstools_agent.settings import Settings
from sstools_agent.wiring.adapters import user_verifier_from

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
        ("GET", "/api/agent/gradio/config", "ChatFunction"),
        ("POST", "/api/agent/gradio/gradio_api/queue/join", "ChatFunction"),
        ("GET", "/api/agent/gradio/gradio_api/queue/data", "ChatFunction"),
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


@pytest.fixture
def built_page(tmp_path):
    """A built page as Vite lays it out: index.html and hashed assets."""
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><title>agent</title>")
    (tmp_path / "assets" / "index-3f9a.js").write_text("console.log(1)")
    return tmp_path


async def through_page_gateway(build, method: str, path: str, **kwargs) -> httpx.Response:
    apps = {"ChatFunction": named("ChatFunction"), "ApiFunction": named("ApiFunction")}
    page = page_app(Settings(), build=build, config={"loginUrl": "/login"})
    transport = httpx.ASGITransport(app=LocalGateway(apps, page=page))
    async with httpx.AsyncClient(transport=transport, base_url="http://gw") as client:
        return await client.request(method, path, **kwargs)


@pytest.mark.parametrize(
    "path", ["/agent", "/agent?objectType=dashboard&objectId=10", "/agent/", "/agent/c/1"]
)
async def test_the_page_is_served_on_the_apis_origin_never_cached(built_page, path):
    response = await through_page_gateway(built_page, "GET", path)
    assert response.status_code == 200
    assert "<title>agent</title>" in response.text
    assert response.headers["cache-control"] == "no-cache"
    assert response.headers["content-security-policy"].startswith("default-src 'self'")
    assert response.headers["x-content-type-options"] == "nosniff"


async def test_hashed_assets_are_cached_and_the_api_is_not_the_pages(built_page):
    asset = await through_page_gateway(built_page, "GET", "/agent/assets/index-3f9a.js")
    assert asset.headers["cache-control"] == "public, max-age=31536000, immutable"
    missing = await through_page_gateway(built_page, "GET", "/agent/assets/nope.js")
    assert (missing.status_code, missing.json()["code"]) == (404, "NOT_FOUND")
    api = await through_page_gateway(built_page, "GET", "/api/agent/conversations/abc/active")
    assert api.json()["function"] == "ApiFunction"
    config = await through_page_gateway(built_page, "GET", "/agent/config.json")
    assert config.json() == {"loginUrl": "/login"}


async def test_an_unbuilt_page_says_how_to_build_it(tmp_path):
    response = await through_page_gateway(tmp_path, "GET", "/agent")
    assert (response.status_code, response.json()["code"]) == (503, "PAGE_NOT_BUILT")


@pytest.mark.parametrize("role", ["analyst", "engineer", "admin"])
async def test_the_demo_sign_in_issues_a_token_of_the_chosen_role(built_page, role):
    response = await through_page_gateway(
        built_page, "POST", "/local/demo-token", json={"role": role}
    )
    principal = user_verifier_from(Settings()).verify(response.json()["access_token"])
    assert principal.role == role


@pytest.mark.parametrize("body", [{"role": "root"}, {}, ["admin"]])
async def test_the_demo_sign_in_refuses_an_unknown_role(built_page, body):
    response = await through_page_gateway(built_page, "POST", "/local/demo-token", json=body)
    assert (response.status_code, response.json()["code"]) == (422, "VALIDATION_ERROR")
