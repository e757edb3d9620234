"""Lambda SnapStart's hooks (docs/deploy.md): the chat app's two routes, which Lambda Web Adapter
calls before the snapshot and after a restore, and the REST API function's runtime hooks.

A restore is simulated: the hook is called on a process whose state stands for the snapshot's,
and what each restored copy may not share (a service token, connection pools, random state) is
checked to be new afterwards. The restore itself (the microVM's) only AWS can run.
"""

from __future__ import annotations

import gc
import json
import os
import random
import subprocess
import sys
import threading
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from botocore.client import BaseClient
from pydantic import SecretStr

from functions.chat.app import create_app
from local.agent_stack import AgentStack, user_issuer
from local.aws_calls import AwsCallTrace
from local.servers import serve
from sstools_agent.adapters.aws_session import live_clients
from sstools_agent.adapters.embeddings import BedrockTitanEmbedder
from sstools_agent.adapters.memory import MemoryAuditSink
from sstools_agent.adapters.service_tokens import ServiceTokenClient
from sstools_agent.adapters.upstream_client import UpstreamToolClient
from sstools_agent.agent.models import build_chat_model
from sstools_agent.domain.identity import ClientCredentials
from sstools_agent.domain.tool_routing import ToolRouter, Vectors
from sstools_agent.http.snapstart import AFTER_RESTORE_PATH, BEFORE_CHECKPOINT_PATH
from sstools_agent.settings import Settings
from sstools_agent.wiring.chat import ChatDeps, build_chat
from tests.support.events import load_event
from tests.support.models import ScriptedChatModel

ROOT = Path(__file__).resolve().parents[2]
SECRET = "s3cr3t-value-cloudfront-sends-0123456789abcdef"
HOOKS = [BEFORE_CHECKPOINT_PATH, AFTER_RESTORE_PATH]


class TokenEndpoint:
    """The REST API's token endpoint as an httpx transport: counts the tokens it mints."""

    def __init__(self) -> None:
        self.minted = 0

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.minted += 1
        return httpx.Response(
            200, json={"access_token": f"token-{self.minted}", "expires_at": 4_102_444_800}
        )


@pytest.fixture
def token_endpoint() -> TokenEndpoint:
    return TokenEndpoint()


@pytest.fixture
def deps(stack: AgentStack, token_endpoint: TokenEndpoint) -> ChatDeps:
    """The chat function's deps over this stack, its service token from a counting endpoint."""
    agent = stack.agent(ScriptedChatModel())
    tokens = ServiceTokenClient(
        lambda: "https://api.example.test/api/auth/service-token",
        lambda: ClientCredentials("agent", "secret"),
        transport=httpx.MockTransport(token_endpoint),
    )
    return replace(
        build_chat(stack.settings),
        agent=lambda: agent,
        audit=MemoryAuditSink(),
        service_token=tokens,
    )


@pytest.fixture
def chat_url(deps: ChatDeps) -> Iterator[str]:
    """The chat app as in AWS: with the origin check on."""
    with serve(create_app(deps, origin_verify_secret=SecretStr(SECRET)), lifespan="on") as url:
        yield url


@pytest.mark.parametrize("path", HOOKS)
def test_the_adapter_reaches_each_hook_without_the_origin_header_or_a_user(chat_url, path):
    # Given the app behind the origin check, when the adapter POSTs (no X-Origin-Verify, no
    # token, an empty body) twice, as a retried phase would
    answers = [httpx.post(f"{chat_url}{path}", timeout=30) for _ in range(2)]
    # Then each call is done (anything else would fail the phase)
    assert [answer.status_code for answer in answers] == [200, 200]
    assert [answer.content for answer in answers] == [b"", b""]
    # and the exemption is that POST's alone: anything else still needs the header
    refused = [
        httpx.get(f"{chat_url}{path}", timeout=30),
        httpx.post(f"{chat_url}/api/agent/chat", json={"message": "привет"}, timeout=30),
    ]
    assert [answer.status_code for answer in refused] == [403, 403]
    assert {answer.json()["code"] for answer in refused} == {"FORBIDDEN"}


def test_a_service_token_cached_before_the_snapshot_is_not_used_after_a_restore(
    chat_url, deps: ChatDeps, token_endpoint: TokenEndpoint
):
    # Given a token fetched before the snapshot (the cache serves the next turn from it)
    first = anyio.run(deps.service_token)
    assert anyio.run(deps.service_token) == first
    assert token_endpoint.minted == 1
    # When the environment is restored
    assert httpx.post(f"{chat_url}{AFTER_RESTORE_PATH}", timeout=30).status_code == 200
    # Then the next upstream call mints its own
    assert anyio.run(deps.service_token) != first
    assert token_endpoint.minted == 2


def test_a_restore_gives_the_upstream_client_a_new_connection_pool(chat_url, deps: ChatDeps):
    upstream = deps.agent().upstream
    assert isinstance(upstream, UpstreamToolClient)
    before = upstream._http
    assert httpx.post(f"{chat_url}{AFTER_RESTORE_PATH}", timeout=30).status_code == 200
    assert upstream._http is not before
    assert not upstream._http.is_closed


def test_a_restore_drops_every_aws_clients_pooled_connections(chat_url, deps: ChatDeps):
    # Given a pool each of the chat's AWS clients opened before the snapshot
    clients = live_clients()
    assert clients
    url = "https://dynamodb.eu-central-1.amazonaws.com"
    pools = [client._endpoint.http_session._manager.connection_from_url(url) for client in clients]
    # When restored
    assert httpx.post(f"{chat_url}{AFTER_RESTORE_PATH}", timeout=30).status_code == 200
    # Then a new call would open a new pool, not reuse the snapshot's
    renewed = [
        client._endpoint.http_session._manager.connection_from_url(url) for client in clients
    ]
    assert all(new is not old for new, old in zip(renewed, pools, strict=True))


def draws(count: int = 5) -> list[float]:
    return [random.random() for _ in range(count)]  # noqa: S311 (the state under test)


def test_two_environments_restored_from_one_snapshot_draw_different_random_numbers(chat_url):
    # Given the random state a snapshot holds
    random.seed(30)
    snapshot = random.getstate()
    # When two environments are restored from it, each running the hook
    copies = []
    for _ in range(2):
        random.setstate(snapshot)
        assert httpx.post(f"{chat_url}{AFTER_RESTORE_PATH}", timeout=30).status_code == 200
        copies.append(draws())
    # Then they draw different numbers (without the hook both would draw the snapshot's)
    random.setstate(snapshot)
    assert copies[0] != copies[1]
    assert draws() not in copies


def aws_clients() -> list[BaseClient]:
    """Every boto3 client in the process (botocore's weak proxies to them left out)."""
    return [
        found
        for found in gc.get_objects()
        if isinstance(found, BaseClient) and not isinstance(found, weakref.ProxyType)
    ]


def new_clients(before: Sequence[object]) -> list[BaseClient]:
    known = {id(found) for found in before}
    return [found for found in aws_clients() if id(found) not in known]


def test_every_aws_client_the_functions_build_is_one_a_restore_renews(stack: AgentStack):
    # Given the production configuration's clients (Bedrock model and embeddings included)
    settings = stack.settings.model_copy(update={"model_provider": "bedrock"})
    before = aws_clients()
    deps = build_chat(settings, routed=False)
    deps.agent()
    built = [deps, build_chat_model(settings), BedrockTitanEmbedder(region=settings.aws_region)]
    # Then a restore reaches each of them
    made = new_clients(before)
    assert len(made) >= 10
    tracked = {id(client) for client in live_clients()}
    untracked = [
        client.meta.service_model.service_name for client in made if id(client) not in tracked
    ]
    assert untracked == []
    del built


def test_building_the_chat_function_calls_no_aws_service(stack: AgentStack):
    # Given the chat function's composition, when it is built as its init builds it
    trace = AwsCallTrace(stack.settings)
    with trace.installed():
        deps = build_chat(stack.settings.model_copy(update={"tool_routing": "keywords"}))
        deps.agent()
    # Then nothing went to AWS (the saver used to read and rewrite the bucket's lifecycle)
    assert [call.name for call in trace.take().calls] == []


class GatedEmbedder:
    """An embedder whose call waits for the test to let it finish; counts its calls."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.calls += 1
        self.release.wait(30)
        return [[1.0, 0.0] for _ in texts]


def test_the_snapshot_is_taken_after_the_routers_warm_up(stack: AgentStack, deps: ChatDeps):
    # Given the warm-up thread still embedding the router's examples
    embedder = GatedEmbedder()
    router = ToolRouter(embedder, warmed_elsewhere=True)
    warming = threading.Thread(target=router.warm)
    warming.start()
    agent = stack.agent(ScriptedChatModel(), router=router)
    deps = replace(deps, agent=lambda: agent)
    # When the adapter calls the before-checkpoint hook
    hook = threading.Thread(target=deps.prepare_snapshot)
    hook.start()
    hook.join(0.5)
    # Then it waits for the warm-up, and afterwards the embeddings are ready, made once
    assert hook.is_alive()
    assert not router.embeddings_ready
    embedder.release.set()
    hook.join(30)
    warming.join(30)
    assert router.embeddings_ready
    assert embedder.calls == 1


class FailingEmbedder:
    def embed(self, texts: Sequence[str]) -> Vectors:
        raise RuntimeError("ThrottlingException")


def test_a_warm_up_that_fails_before_the_snapshot_does_not_fail_the_deploy(
    stack: AgentStack, deps: ChatDeps
):
    # A refused hook fails the version's publication: the snapshot routes on keywords instead
    router = ToolRouter(FailingEmbedder(), warmed_elsewhere=True)
    agent = stack.agent(ScriptedChatModel(), router=router)
    with serve(create_app(replace(deps, agent=lambda: agent)), lifespan="on") as url:
        assert httpx.post(f"{url}{BEFORE_CHECKPOINT_PATH}", timeout=30).status_code == 200
    assert not router.embeddings_ready


# The REST API function: the Python runtime's `snapshot_restore_py` (only in Lambda) is stood in
# for by a module that records what main.py registers; the hooks are then run as the runtime
# would, and the handler answers after them.
FAKE_RUNTIME = """
before, after = [], []
def register_before_snapshot(hook, *args, **kwargs):
    before.append(hook)
def register_after_restore(hook, *args, **kwargs):
    after.append(hook)
"""
INVOKE = """
import json, random, sys
from types import SimpleNamespace
import main, snapshot_restore_py as runtime
assert len(runtime.before) == 1 and len(runtime.after) == 1, (runtime.before, runtime.after)
runtime.before[0]()
random.seed(1)
runtime.after[0]()
draw = random.random()
context = SimpleNamespace(function_name="ApiFunction", memory_limit_in_mb=512,
    invoked_function_arn="arn:aws:lambda:eu-central-1:123456789012:function:ApiFunction",
    aws_request_id="lambda-request-1")
answer = main.handler(json.load(sys.stdin), context)
print("RESULT " + json.dumps({"status": answer["statusCode"], "draw": draw}))
"""


def test_the_rest_api_registers_its_hooks_with_the_python_runtime(
    stack_settings: Settings, tmp_path: Path
):
    (tmp_path / "snapshot_restore_py.py").write_text(FAKE_RUNTIME)
    token = user_issuer(stack_settings).issue("anna", 60, {"roles": ["analyst"]}).token
    completed = subprocess.run(
        [sys.executable, "-c", INVOKE],
        input=json.dumps(load_event("api_list_conversations", user_jwt=token)),
        capture_output=True,
        text=True,
        cwd=ROOT / "functions" / "api",
        env={
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "layers" / "common"), str(tmp_path)]),
            "AWS_ENDPOINT_URL": str(stack_settings.aws_endpoint_url),
            "AWS_REGION": stack_settings.aws_region,
            "POWERTOOLS_TRACE_DISABLED": "true",
        },
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    line = next(line for line in completed.stdout.splitlines() if line.startswith("RESULT "))
    result: dict[str, Any] = json.loads(line[7:])
    assert result["status"] == 200
    random.seed(1)
    assert result["draw"] != random.random()  # noqa: S311 (reseeded by the after-restore hook)
