"""The local API Gateway: one origin (127.0.0.1:8000) routing to the functions' ASGI apps as
template.yaml's `ChatApi` routes to the functions.

The routes are read from the template's own OpenAPI definition (path -> integration -> function
logical id), so the local stack cannot route differently from what SAM deploys.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, Final

from local.page import serves
from local.sam_template import load_template

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# The function's ARN or, with SnapStart, its alias's (`${ChatFunction.Alias}`): locally both are
# the one app.
_FUNCTION_IN_URI: Final = re.compile(r"/functions/\$\{(?P<function>[A-Za-z0-9]+)\.(?:Arn|Alias)\}/")
ANY_METHOD: Final = "x-amazon-apigateway-any-method"


@dataclass(frozen=True, slots=True)
class Route:
    pattern: re.Pattern[str]
    methods: frozenset[str]
    function: str


def _path_pattern(path: str) -> re.Pattern[str]:
    """`/a/{proxy+}` matches anything below /a/; `/a/{id}` one segment."""
    parts = re.split(r"(\{[^}]+\})", path)
    regex = "".join(
        (".+" if part.endswith("+}") else "[^/]+") if part.startswith("{") else re.escape(part)
        for part in parts
    )
    return re.compile(f"^{regex}$")


def template_routes(api_logical_id: str = "ChatApi") -> list[Route]:
    """The API's routes in the template: which function answers which path and methods."""
    resource = load_template()["Resources"][api_logical_id]
    routes = []
    for path, operations in resource["Properties"]["DefinitionBody"]["paths"].items():
        for method, operation in operations.items():
            uri = operation["x-amazon-apigateway-integration"]["uri"]
            text = uri["Fn::Sub"] if isinstance(uri, dict) else str(uri)
            match = _FUNCTION_IN_URI.search(text)
            if match is None:
                raise ValueError(f"{path} {method}: no function in the integration URI")
            methods = frozenset() if method == ANY_METHOD else frozenset({method.upper()})
            routes.append(Route(_path_pattern(path), methods, match.group("function")))
    return routes


class LocalGateway:
    """An ASGI app that routes each request to the function app the template names."""

    def __init__(
        self,
        apps: Mapping[str, Any],
        routes: list[Route] | None = None,
        *,
        page: ASGIApp | None = None,
    ) -> None:
        """`page` answers the /agent page's paths (`local.page`), as CloudFront does in AWS."""
        self._routes = template_routes() if routes is None else routes
        self._page = page
        missing = {route.function for route in self._routes} - apps.keys()
        if missing:
            raise ValueError(f"no local app for {sorted(missing)}")
        self._apps = dict(apps)

    def _app_for(self, method: str, path: str) -> Any:
        if self._page is not None and serves(path):
            return self._page
        for route in self._routes:
            if route.pattern.match(path) and (not route.methods or method in route.methods):
                return self._apps[route.function]
        return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await self._lifespan(receive, send)
            return
        app = self._app_for(scope.get("method", "GET"), scope["path"])
        if app is None:
            await _not_found(scope, send)
            return
        await app(scope, receive, send)

    async def _lifespan(self, receive: Receive, send: Send) -> None:
        """Starts every function app's lifespan, stops them at shutdown."""
        await receive()  # lifespan.startup
        async with AsyncExitStack() as stack:
            for app in self._apps.values():
                router = getattr(app, "router", None)
                if router is not None:
                    await stack.enter_async_context(router.lifespan_context(app))
            await send({"type": "lifespan.startup.complete"})
            await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


async def _not_found(scope: Scope, send: Send) -> None:
    body = json.dumps({"code": "NOT_FOUND", "detail": f"no route for {scope['path']}"}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 404,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": body})
