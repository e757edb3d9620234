"""Every error either app answers, in one shape: `{code, detail}` (plus specifics, e.g. the
problems of a rejected page context), and the one refusal table both apps share."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any, Final

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.exceptions import HTTPException as StarletteHTTPException

from sstools_agent.domain.errors import ErrorCode

logger = logging.getLogger(__name__)

INTERNAL_ERROR_DETAIL: Final = "Internal error; please try again later."


def error(status: int, code: ErrorCode, detail: str, **extra: Any) -> JSONResponse:
    """An error response: `{code, detail}`."""
    return JSONResponse({"code": code.value, "detail": detail, **extra}, status_code=status)


async def invalid_body(request: Request, exc: Exception) -> JSONResponse:
    """A request that does not parse or validate: 422 with `{code, detail}`."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    problems = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in errors)
    return error(422, ErrorCode.VALIDATION_ERROR, problems or str(exc))


HTTP_STATUS_CODES: dict[int, ErrorCode] = {
    401: ErrorCode.UNAUTHORIZED,
    403: ErrorCode.FORBIDDEN,
    404: ErrorCode.NOT_FOUND,
    405: ErrorCode.METHOD_NOT_ALLOWED,
}


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    """The framework's own refusals (an unknown path, a method the path does not serve) in the
    same `{code, detail}` shape; a 405 lists the path's methods.

    The framework's only 400 is a body it could not read as JSON (bytes that are not UTF-8): that
    is 422 like every other body that is not JSON, as the protocol says.
    """
    if not isinstance(exc, StarletteHTTPException):
        raise exc
    if exc.status_code == 400:
        return error(422, ErrorCode.VALIDATION_ERROR, "body: not a JSON document")
    if exc.status_code >= 500:
        return error(exc.status_code, ErrorCode.INTERNAL_ERROR, INTERNAL_ERROR_DETAIL)
    code = HTTP_STATUS_CODES.get(exc.status_code, ErrorCode.VALIDATION_ERROR)
    response = error(exc.status_code, code, str(exc.detail))
    if exc.status_code == 405:
        methods = {
            method
            for route in _api_routes(request.app.routes)
            if route.path_regex.match(request.url.path)
            for method in route.methods or ()
        }
        response.headers["Allow"] = ", ".join(sorted(methods))
    return response


def _api_routes(routes: Sequence[Any]) -> Iterator[APIRoute]:
    """Every endpoint of an app, inside included routers too (FastAPI keeps an included router
    as one route holding the original: its `original_router`)."""
    for route in routes:
        if isinstance(route, APIRoute):
            yield route
        nested = getattr(getattr(route, "original_router", route), "routes", None)
        if nested is not None and nested is not routes:
            yield from _api_routes(nested)


SINGLE_VALUED_HEADERS: Final = ("authorization", "idempotency-key", "x-request-id")
"""Headers the REST API reads one value of: given twice, which one counts would be a guess."""


def single_values(request: Request) -> None:
    """Refuses a query parameter (`?q=a&q=b`) or a single-valued header given more than once
    (dependency of every route of the REST API)."""
    keys = [key for key, _ in request.query_params.multi_items()]
    repeated = [("query", key) for key in sorted({key for key in keys if keys.count(key) > 1})]
    repeated += [
        ("header", name) for name in SINGLE_VALUED_HEADERS if len(request.headers.getlist(name)) > 1
    ]
    if repeated:
        raise RequestValidationError(
            [
                {"loc": location, "msg": "given more than once", "type": "repeated"}
                for location in repeated
            ]
        )


async def internal_error(request: Request, exc: Exception) -> JSONResponse:
    """Anything unhandled (a storage fault, a bug): 500 `{code, detail}`, never a plain-text page.
    The detail says nothing of the cause; the log has it (the server logs the exception, which
    Starlette re-raises after this answer)."""
    logger.error("unhandled %s on %s %s", type(exc).__name__, request.method, request.url.path)
    return error(500, ErrorCode.INTERNAL_ERROR, INTERNAL_ERROR_DETAIL)


def install_error_handlers(app: FastAPI) -> None:
    """Every error an app answers, in the `{code, detail}` shape."""
    app.add_exception_handler(RequestValidationError, invalid_body)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(Exception, internal_error)


def _where(location: Sequence[Any]) -> str:
    """`message` for a body field, `query.limit` for a parameter, `body` for the body itself."""
    parts = list(location[1:] if location and location[0] == "body" else location)
    if parts and isinstance(parts[0], int):  # a position in a body that is not JSON
        parts = []
    return ".".join(map(str, parts)) or "body"
