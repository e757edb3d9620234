"""The /agent page on the local stack's origin, as CloudFront serves it from S3 in AWS, and the
local stack's demo sign-in.

- `/agent/assets/...`: the built page's hashed files (`web/dist-local`, a
  `vite build --mode localstack`); `/agent/config.json`: the page's configuration; any other
  `/agent...` path: the page's `index.html` (the page reads its context from the query string),
  never cached, with the page's security headers (as CloudFront sends them).
- `POST /local/demo-token {"role": "admin"}`: a demo user's JWT. It exists only here: `local/`
  is not part of any deployable, and the page's sign-in that calls it is only in the local build.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from local.demo_users import DEMO_USERS, demo_role, demo_token
from sstools_agent.settings import Settings

PAGE_PATH: Final = "/agent"
LOCAL_PATH: Final = "/local"
LOCAL_BUILD: Final = Path(__file__).resolve().parents[1] / "web" / "dist-local"
DEPLOYABLE_BUILD: Final = LOCAL_BUILD.with_name("dist")
"""The production build (no demo sign-in), what the page bucket holds in AWS."""
IMMUTABLE: Final = "public, max-age=31536000, immutable"


def content_security_policy(upload_origin: str | None = None) -> str:
    """The page's own files only: its one script and stylesheet, the API on its origin, and the
    one other place it connects to, `upload_origin`, the attachment bucket's (the browser POSTs
    uploads straight to it). The user's token sits in local storage and model text is rendered
    as HTML (markdown, HTML off): a policy that runs nothing else is the second wall. CloudFront
    sends the same with the bucket's origin in AWS (template.yaml, `PageSecurityHeadersPolicy`;
    `tests/infrastructure/test_template.py` holds them equal)."""
    connect = f"'self' {upload_origin}" if upload_origin else "'self'"
    return (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        f"connect-src {connect}; font-src 'self'; object-src 'none'; base-uri 'none'; "
        "form-action 'self'; frame-ancestors 'self'"
    )


def security_headers(upload_origin: str | None = None) -> dict[str, str]:
    """The page's security headers, uploads going to `upload_origin`."""
    return {
        "Content-Security-Policy": content_security_policy(upload_origin),
        "X-Content-Type-Options": "nosniff",
        "Referrer-Policy": "same-origin",
    }


def local_upload_origin(settings: Settings) -> str | None:
    """Where presigned POSTs go locally: the S3 endpoint's origin (moto, path-style URLs)."""
    if not settings.aws_endpoint_url:
        return None
    parts = urlsplit(settings.aws_endpoint_url)
    return f"{parts.scheme}://{parts.netloc}"


PageConfig = dict[str, Any]
"""`/agent/config.json`, what the page reads at start (in AWS, a file in the page bucket): only
the fields that differ from the page's own defaults (`web/src/lib/config.ts`), e.g. `loginUrl`,
`reconnectAttempts`, `reconnectDelayMs`. The local stack serves `{}`: the page's defaults."""


def _error(status: int, code: str, detail: str) -> JSONResponse:
    return JSONResponse({"code": code, "detail": detail}, status_code=status)


class _HashedAssets(StaticFiles):
    """The build's assets: their names carry a content hash, so they are cached for good."""

    def file_response(self, *args: Any, **kwargs: Any) -> Response:
        response = super().file_response(*args, **kwargs)
        response.headers["Cache-Control"] = IMMUTABLE
        return response


def page_app(
    settings: Settings, *, build: Path = LOCAL_BUILD, config: PageConfig | None = None
) -> Starlette:
    """The page and the demo sign-in, for the local gateway."""
    index = build / "index.html"
    config_body = json.dumps(config or {})
    no_cache = {"Cache-Control": "no-cache", **security_headers(local_upload_origin(settings))}

    async def page(_: Request) -> Response:
        if not index.is_file():
            return _error(
                503, "PAGE_NOT_BUILT", f"{index} is missing: `make run` builds the page (web/)"
            )
        return FileResponse(index, headers=no_cache)

    async def page_config(_: Request) -> Response:
        return Response(config_body, media_type="application/json", headers=no_cache)

    async def demo_sign_in(request: Request) -> Response:
        try:
            body = await request.json()
        except ValueError:
            return _error(422, "VALIDATION_ERROR", "the body is not JSON")
        role = body.get("role") if isinstance(body, dict) else None
        if role not in DEMO_USERS:
            return _error(422, "VALIDATION_ERROR", f"role must be one of {', '.join(DEMO_USERS)}")
        return JSONResponse(
            {
                "access_token": demo_token(role, settings),
                "user": DEMO_USERS[role],
                "role": demo_role(role),
            }
        )

    async def not_found(request: Request, _: Exception) -> Response:
        return _error(404, "NOT_FOUND", f"no route for {request.url.path}")

    routes = [
        Route(f"{PAGE_PATH}/config.json", page_config, methods=["GET", "HEAD"]),
        Mount(f"{PAGE_PATH}/assets", _HashedAssets(directory=build / "assets", check_dir=False)),
        Route(PAGE_PATH, page, methods=["GET", "HEAD"]),
        Route(f"{PAGE_PATH}/{{rest:path}}", page, methods=["GET", "HEAD"]),
        Route(f"{LOCAL_PATH}/demo-token", demo_sign_in, methods=["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: not_found})


def serves(path: str) -> bool:
    """Whether a path is the page's or the local sign-in's (everything else is the API's)."""
    return any(path == root or path.startswith(f"{root}/") for root in (PAGE_PATH, LOCAL_PATH))
