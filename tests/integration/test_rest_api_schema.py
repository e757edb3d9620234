"""Schemathesis against the REST API's own OpenAPI schema, over HTTP (uvicorn, moto behind):
generated requests, valid and invalid, must never meet a server error or an answer that breaks
the schema (status codes, content types, bodies, headers). Bounded in examples, so it stays in
the suite."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import fields
from types import SimpleNamespace
from typing import Any, cast

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.specs.openapi.checks import positive_data_acceptance

from functions.api.app import create_app
from local.agent_stack import user_issuer
from local.servers import serve
from sstools_agent.rest.deps import ApiDeps
from sstools_agent.settings import Settings
from sstools_agent.wiring.api import build_api

EXAMPLES_PER_OPERATION = int(os.environ.get("SCHEMATHESIS_EXAMPLES", "40"))
# `positive_data_acceptance` expects every schema-valid request to succeed. Two rules of this API
# are beyond a schema: a cursor must carry this service's signature (400 otherwise), a page
# context must name a configured environment (422 otherwise). test_rest_api.py asserts both.

# The schema is the app's own (its routes do not depend on the collaborators); the requests go
# to the real app, wired to moto, over HTTP.
unwired = cast(ApiDeps, SimpleNamespace(**{field.name: None for field in fields(ApiDeps)}))
schema = schemathesis.openapi.from_dict(create_app(unwired).openapi())


@pytest.fixture(scope="module")
def api_url(stack_settings: Settings) -> Iterator[str]:
    with serve(create_app(build_api(stack_settings))) as url:
        yield url


@pytest.fixture(scope="module")
def user_headers(stack_settings: Settings) -> dict[str, str]:
    token = user_issuer(stack_settings).issue("schemathesis", 3600, {"roles": ["engineer"]}).token
    return {"Authorization": f"Bearer {token}"}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,  # the same examples in every CI run; raise SCHEMATHESIS_EXAMPLES to dig
    deadline=None,
    suppress_health_check=list(HealthCheck),
)
def test_no_server_errors_and_no_schema_violations(
    case: Any, api_url: str, user_headers: dict[str, str]
):
    case.call_and_validate(
        base_url=api_url, headers=user_headers, excluded_checks=[positive_data_acceptance]
    )
