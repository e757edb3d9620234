"""The upstream tool client against a real HTTP server that injects faults and counts requests.

Retry and timeout behaviour is proven by the server's own request
counts, read through its control API.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from local.fault_injection import FaultPlan
from sstools_agent.adapters.upstream_client import UpstreamToolClient
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENTS
from sstools_agent.domain.tool_calls import ResolvedToolCall
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.tool_runs import ToolCallFailed, UpstreamCredentials
from sstools_agent.domain.ui_context import UIContext
from tests.support.fault_server import fault_server

pytestmark = pytest.mark.anyio

CREDENTIALS = UpstreamCredentials(service_token="service.jwt", user_token="user.jwt")
FAST_RETRY_S = 0.05
SEARCH_PATH = "/api/environments/ss-dev/dashboards"
DEPLOY_PATH = "/api/dashboards/deploy"
POLICY = ToolPolicy(CATALOG, DEFAULT_ENVIRONMENTS)
PAGE = UIContext.model_validate(
    {"contextVersion": 1, "objectType": "dashboard", "objectId": "10", "envId": "ss-dev"},
    context={"environments": DEFAULT_ENVIRONMENTS},
)


def resolved(tool: str, args: dict[str, Any]) -> ResolvedToolCall:
    call = POLICY.resolve(tool, args, PAGE)
    assert call is not None
    return call


SEARCH = resolved("search_dashboards", {"query": "энергия", "limit": 5})
DEPLOY = resolved(
    "deploy_dashboard",
    {"dashboard_ids": [10, 11], "source_env_id": "ss-dev", "target_env_id": "staging"},
)


@pytest.fixture(scope="module")
def plan() -> FaultPlan:
    return FaultPlan()


@pytest.fixture(scope="module")
def base_url(plan: FaultPlan) -> Iterator[str]:
    with fault_server(plan) as url:
        yield url


@pytest.fixture
async def control(base_url: str) -> AsyncIterator[httpx.AsyncClient]:
    """The fault server's control API, cleared before each test."""
    async with httpx.AsyncClient(base_url=f"{base_url}/_control") as client:
        (await client.delete("/faults")).raise_for_status()
        yield client


@pytest.fixture
async def client(base_url: str) -> AsyncIterator[UpstreamToolClient]:
    upstream = UpstreamToolClient(base_url, retry_delay_s=FAST_RETRY_S, default_timeout_s=5)
    yield upstream
    await upstream.aclose()


async def inject(control: httpx.AsyncClient, method: str, path: str, **fault: Any) -> None:
    response = await control.post("/faults", json={"method": method, "path": path, **fault})
    assert response.status_code == 201, response.text


async def received(control: httpx.AsyncClient, method: str, path: str) -> int:
    response = await control.get("/requests", params={"method": method, "path": path})
    count: int = response.json()["count"]
    return count


async def test_a_call_carries_both_identities_and_its_arguments(client, control):
    outcome = await client.call(SEARCH, CREDENTIALS, request_id="req-1")
    echoed = outcome.output
    assert echoed["path"] == SEARCH_PATH
    assert "query=%D1%8D%D0%BD%D0%B5%D1%80%D0%B3%D0%B8%D1%8F" in echoed["query"]
    assert echoed["headers"]["authorization"] == "Bearer service.jwt"
    assert echoed["headers"]["x-user-jwt"] == "user.jwt"
    assert echoed["headers"]["x-request-id"] == "req-1"
    assert outcome.attempts == 1
    deploy = await client.call(DEPLOY, CREDENTIALS)
    assert deploy.output["body"] == {
        "dashboard_ids": [10, 11],
        "source_env_id": "ss-dev",
        "target_env_id": "staging",
    }


@pytest.mark.parametrize("status", [502, 503])
async def test_a_read_retries_once_after_a_transient_5xx_and_succeeds(client, control, status):
    await inject(control, "GET", SEARCH_PATH, kind="status", status=status, times=1)
    outcome = await client.call(SEARCH, CREDENTIALS)
    assert outcome.status_code == 200
    assert outcome.attempts == 2
    assert await received(control, "GET", SEARCH_PATH) == 2


async def test_a_read_gives_up_after_one_retry(client, control):
    await inject(control, "GET", SEARCH_PATH, kind="status", status=503, times=None)
    with pytest.raises(ToolCallFailed) as failed:
        await client.call(SEARCH, CREDENTIALS)
    assert failed.value.code == "TOOL_FAILURE"
    assert failed.value.attempts == 2
    assert failed.value.status_code == 503
    assert await received(control, "GET", SEARCH_PATH) == 2


async def test_a_read_retries_after_a_connection_reset(client, control):
    await inject(control, "GET", SEARCH_PATH, kind="reset", times=1)
    outcome = await client.call(SEARCH, CREDENTIALS)
    assert outcome.attempts == 2
    assert await received(control, "GET", SEARCH_PATH) == 2


async def test_the_retry_waits_a_fixed_second_by_default(base_url, control):
    # One retry after a fixed 1 s (the other tests shorten it to stay quick)
    await inject(control, "GET", SEARCH_PATH, kind="status", status=502, times=1)
    upstream = UpstreamToolClient(base_url)
    started = time.monotonic()
    try:
        outcome = await upstream.call(SEARCH, CREDENTIALS)
    finally:
        await upstream.aclose()
    assert outcome.attempts == 2
    assert time.monotonic() - started >= 1.0


@pytest.mark.parametrize(
    ("fault", "status_unknown"),
    [
        ({"kind": "status", "status": 503}, False),  # 503: the request was not taken
        ({"kind": "status", "status": 502}, True),
        ({"kind": "reset"}, True),
    ],
)
async def test_a_write_never_retries(client, control, fault, status_unknown):
    await inject(control, "POST", DEPLOY_PATH, times=1, **fault)
    with pytest.raises(ToolCallFailed) as failed:
        await client.call(DEPLOY, CREDENTIALS)
    assert failed.value.attempts == 1
    assert failed.value.status_unknown is status_unknown
    assert ("check status" in failed.value.detail) is status_unknown
    assert await received(control, "POST", DEPLOY_PATH) == 1


async def test_a_hanging_read_times_out_without_a_retry(base_url, control):
    await inject(control, "GET", SEARCH_PATH, kind="hang", seconds=10, times=None)
    # a deadline of seconds, so the request reaches the upstream before it on a busy machine
    upstream = UpstreamToolClient(base_url, default_timeout_s=2, retry_delay_s=FAST_RETRY_S)
    try:
        with pytest.raises(ToolCallFailed) as failed:
            await upstream.call(SEARCH, CREDENTIALS)
    finally:
        await upstream.aclose()
    # a client that waited out the hang would get its unanswered end (a 500), not a timeout
    assert failed.value.code == "TOOL_TIMEOUT"
    assert failed.value.status_unknown is False
    assert "2 s" in failed.value.detail
    assert await received(control, "GET", SEARCH_PATH) == 1


async def test_a_hanging_write_reports_status_unknown(base_url, control):
    await inject(control, "POST", DEPLOY_PATH, kind="hang", seconds=10, times=None)
    upstream = UpstreamToolClient(base_url, default_timeout_s=2)  # sent well before its deadline
    try:
        with pytest.raises(ToolCallFailed) as failed:
            await upstream.call(DEPLOY, CREDENTIALS)
    finally:
        await upstream.aclose()
    assert failed.value.code == "TOOL_TIMEOUT"
    assert failed.value.status_unknown is True
    assert "operation status unknown — check status" in failed.value.detail
    assert await received(control, "POST", DEPLOY_PATH) == 1


async def test_a_slow_answer_within_the_timeout_succeeds(base_url, control):
    await inject(control, "GET", SEARCH_PATH, kind="delay", seconds=0.3, times=1)
    upstream = UpstreamToolClient(base_url, default_timeout_s=2)
    try:
        outcome = await upstream.call(SEARCH, CREDENTIALS)
    finally:
        await upstream.aclose()
    assert outcome.attempts == 1
    assert outcome.elapsed_s >= 0.3


async def test_401_means_the_session_expired_and_is_not_retried(client, control):
    await inject(control, "GET", SEARCH_PATH, kind="status", status=401, times=None)
    with pytest.raises(ToolCallFailed) as failed:
        await client.call(SEARCH, CREDENTIALS)
    assert failed.value.code == "UNAUTHORIZED"
    assert failed.value.detail == "сессия истекла, обновите страницу"
    assert await received(control, "GET", SEARCH_PATH) == 1


@pytest.mark.parametrize(
    ("status", "code"),
    [(403, "FORBIDDEN"), (404, "NOT_FOUND"), (422, "VALIDATION_ERROR"), (409, "TOOL_FAILURE")],
)
async def test_4xx_map_to_error_codes_without_retry(client, control, status, code):
    await inject(control, "GET", SEARCH_PATH, kind="status", status=status, times=None)
    with pytest.raises(ToolCallFailed) as failed:
        await client.call(SEARCH, CREDENTIALS)
    assert failed.value.code == code
    assert f"injected fault {status}" in failed.value.detail
    assert await received(control, "GET", SEARCH_PATH) == 1


async def test_an_unreachable_upstream_is_a_tool_failure_that_changed_nothing():
    upstream = UpstreamToolClient("http://127.0.0.1:9", retry_delay_s=FAST_RETRY_S)
    try:
        with pytest.raises(ToolCallFailed) as read_failed:
            await upstream.call(SEARCH, CREDENTIALS)
        with pytest.raises(ToolCallFailed) as write_failed:
            await upstream.call(DEPLOY, CREDENTIALS)
    finally:
        await upstream.aclose()
    assert read_failed.value.attempts == 2
    assert write_failed.value.attempts == 1
    assert write_failed.value.status_unknown is False
    assert "nothing was changed" in write_failed.value.detail


async def test_a_read_that_starts_a_task_is_not_retried(client, control):
    # run_llm_validation reads, but each POST starts a paid task: declared may_retry=False
    validation = resolved("run_llm_validation", {"dashboard_id": 10})
    path = "/api/environments/ss-dev/dashboards/10/validation"
    await inject(control, "POST", path, kind="status", status=503, times=1)
    with pytest.raises(ToolCallFailed):
        await client.call(validation, CREDENTIALS)
    assert await received(control, "POST", path) == 1


# The tool's deadline, not the HTTP library's (httpx defaults to 5 s per connect/read/write/pool).
# These use delays above 5 s against a tool timeout above them, so they take seconds: `slow`.
# Their bounds on elapsed time sit between what right and wrong code would take, seconds apart,
# so a busy machine does not cross them.
LIBRARY_DEFAULT_S = 5.0


@pytest.mark.slow
async def test_an_answer_after_6_s_within_a_10_s_tool_timeout_succeeds_for_a_read_and_a_write(
    base_url, control
):
    await inject(control, "GET", SEARCH_PATH, kind="delay", seconds=6, times=1)
    await inject(control, "POST", DEPLOY_PATH, kind="delay", seconds=6, times=1)
    upstream = UpstreamToolClient(base_url, default_timeout_s=10, retry_delay_s=FAST_RETRY_S)
    try:
        read, write = await asyncio.gather(
            upstream.call(SEARCH, CREDENTIALS), upstream.call(DEPLOY, CREDENTIALS)
        )
    finally:
        await upstream.aclose()
    assert (read.status_code, read.attempts) == (200, 1)
    assert (write.status_code, write.attempts) == (200, 1)
    assert read.elapsed_s >= 6
    assert write.elapsed_s >= 6
    assert await received(control, "GET", SEARCH_PATH) == 1
    assert await received(control, "POST", DEPLOY_PATH) == 1


@pytest.mark.slow
async def test_an_answer_beyond_the_tool_timeout_is_a_tool_timeout_at_the_deadline(
    base_url, control
):
    # every request answers after 9 s; the tool's deadline is 6 s (above the library's 5 s)
    await inject(control, "GET", SEARCH_PATH, kind="delay", seconds=9, times=None)
    await inject(control, "POST", DEPLOY_PATH, kind="delay", seconds=9, times=None)
    upstream = UpstreamToolClient(base_url, default_timeout_s=6, retry_delay_s=FAST_RETRY_S)

    async def timed(call: ResolvedToolCall) -> tuple[ToolCallFailed, float]:
        started = time.monotonic()
        with pytest.raises(ToolCallFailed) as failed:
            await upstream.call(call, CREDENTIALS)
        return failed.value, time.monotonic() - started

    try:
        (read, read_s), (write, write_s) = await asyncio.gather(timed(SEARCH), timed(DEPLOY))
    finally:
        await upstream.aclose()
    for failure, elapsed in ((read, read_s), (write, write_s)):
        assert failure.code == "TOOL_TIMEOUT"
        assert failure.attempts == 1  # the timeout used the whole deadline: no retry
        assert "6 s" in failure.detail
        assert 6 <= elapsed < 9, elapsed  # at the deadline, before the 9 s answer
    assert read.status_unknown is False
    assert write.status_unknown is True
    assert "operation status unknown — check status" in write.detail
    assert await received(control, "GET", SEARCH_PATH) == 1
    assert await received(control, "POST", DEPLOY_PATH) == 1


@pytest.mark.slow
async def test_a_read_retry_shares_the_deadline_of_the_first_attempt(base_url, control):
    # the first attempt fails after 3 s (a hang that ends unanswered: uvicorn's 500), the retry
    # hangs: the call ends at the tool's 4 s deadline, not 4 s after the retry began (7 s)
    await inject(control, "GET", SEARCH_PATH, kind="hang", seconds=3, times=1)
    await inject(control, "GET", SEARCH_PATH, kind="hang", seconds=20, times=1)
    upstream = UpstreamToolClient(base_url, default_timeout_s=4.0, retry_delay_s=FAST_RETRY_S)
    started = time.monotonic()
    try:
        with pytest.raises(ToolCallFailed) as failed:
            await upstream.call(SEARCH, CREDENTIALS)
    finally:
        await upstream.aclose()
    elapsed = time.monotonic() - started
    assert failed.value.code == "TOOL_TIMEOUT"
    assert failed.value.attempts == 2
    assert 4.0 <= elapsed < 6.0, elapsed  # code that restarts the deadline ends at 7 s
    assert await received(control, "GET", SEARCH_PATH) == 2


async def test_a_read_is_not_retried_when_the_wait_would_pass_the_deadline(base_url, control):
    await inject(control, "GET", SEARCH_PATH, kind="status", status=503, times=1)
    upstream = UpstreamToolClient(base_url, default_timeout_s=5, retry_delay_s=30.0)
    started = time.monotonic()
    try:
        with pytest.raises(ToolCallFailed) as failed:
            await upstream.call(SEARCH, CREDENTIALS)
    finally:
        await upstream.aclose()
    assert time.monotonic() - started < 5  # not the retry's 30 s wait, nor the 5 s deadline
    assert failed.value.code == "TOOL_FAILURE"
    assert failed.value.status_code == 503
    assert failed.value.attempts == 1
    assert await received(control, "GET", SEARCH_PATH) == 1
