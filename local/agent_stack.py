"""The agent's real surroundings, for the tests, `make bench` and `make eval`: moto, the sample
upstream over HTTP, demo users, the agent and the chat app over them."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Final

from langchain_core.language_models import BaseChatModel
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field, SecretStr

from functions.chat.app import create_app as create_chat_app
from local.demo_users import DEMO_USERS
from local.fault_injection import FaultPlan, serve_with_faults
from local.moto import aws_subprocess_stack
from local.sample_upstream.app import create_app
from local.sample_upstream.seed import UpstreamState, seeded_state
from sstools_agent.adapters.checkpointer import checkpointer_from
from sstools_agent.adapters.dynamodb.conversations import DynamoDBConversationStore
from sstools_agent.adapters.upstream_client import UpstreamToolClient
from sstools_agent.agent.context import AgentRunContext
from sstools_agent.agent.runtime import ChatAgent, InMemoryConfirmedCall
from sstools_agent.agent.standin_model import StandinChatModel
from sstools_agent.domain.chat_events import ChatEvent, EventType
from sstools_agent.domain.identity import JwksKeys
from sstools_agent.domain.ports import BlobStore
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.tool_routing import ToolRouter
from sstools_agent.domain.ui_context import UIContext, parse_ui_context
from sstools_agent.settings import DEFAULT_PREFETCH_TIMEOUT_S, Settings
from sstools_agent.tokens import user_token_issuer_from
from sstools_agent.wiring.adapters import (
    service_token_issuer_from,
    service_verifier_from,
    user_verifier_from,
)
from sstools_agent.wiring.chat import build_chat, tool_policy_from

user_issuer = user_token_issuer_from


@contextmanager
def local_aws_and_upstream(credentials: str) -> Iterator[AgentStack]:
    """moto in its own process with the template's resources and the sample upstream over
    HTTP, for a run outside pytest (`make eval`, `make bench`); `credentials` fills the AWS
    keys moto accepts when none are set."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        os.environ.setdefault(name, credentials)
    with aws_subprocess_stack() as (endpoint, _):
        settings = Settings(aws_endpoint_url=endpoint)
        with sample_upstream(settings) as upstream:
            settings = settings.model_copy(update={"upstream_base_url": upstream.base_url})
            yield AgentStack(settings, upstream)


@dataclass
class SampleUpstream:
    """The sample upstream running under uvicorn, with its state and fault plan at hand."""

    base_url: str
    app: Any
    plan: FaultPlan

    @property
    def state(self) -> UpstreamState:
        return self.app.app.state.data  # type: ignore[no-any-return]

    def reset(self) -> None:
        self.app.app.state.data = seeded_state()
        self.plan.clear()

    def sql_writes(self, env_id: str | None = None) -> list[str]:
        """The SQL writes the upstream ran (in `env_id`), beside the reads plans count with."""
        return [
            run["sql"]
            for run in self.state.statements
            if run["write"] and env_id in (None, run["environment"])
        ]


@contextmanager
def sample_upstream(settings: Settings) -> Iterator[SampleUpstream]:
    """The sample upstream, verifying service tokens with the JWKS of the KMS key in `settings`
    (moto must hold the template's resources)."""
    plan = FaultPlan()
    service_keys = JwksKeys(service_token_issuer_from(settings).jwks())
    app = create_app(
        user_verifier_from(settings), service_verifier_from(settings, service_keys), plan=plan
    )
    with serve_with_faults(app) as base_url:
        yield SampleUpstream(base_url, app, plan)


class RecordingStandinModel(StandinChatModel):
    """The stand-in model, remembering which tools each model call was given."""

    bindings: list[tuple[str, ...]] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        self.bindings.append(tuple(convert_to_openai_tool(t)["function"]["name"] for t in tools))
        return super().bind_tools(tools, **kwargs)


PATIENT_TOOL_TIMEOUT_S: Final = 60.0
"""A tool timeout far beyond any wait of the tests that use it (`AgentStack.patient`)."""


@dataclass
class AgentStack:
    """Everything a test needs to run turns as the chat function will."""

    settings: Settings
    upstream: SampleUpstream
    policy: ToolPolicy = field(init=False)

    def __post_init__(self) -> None:
        self.policy = tool_policy_from(self.settings)
        self._users = user_issuer(self.settings)
        self._service = service_token_issuer_from(self.settings)

    def patient(self, tool_timeout_s: float = PATIENT_TOOL_TIMEOUT_S) -> AgentStack:
        """This stack with tools that wait `tool_timeout_s` on the upstream: for tests of size or
        of stopping, which a busy machine must not turn into a test of the integration suite's
        2 s tool deadline."""
        return AgentStack(
            self.settings.model_copy(update={"tool_timeout_s": tool_timeout_s}), self.upstream
        )

    def agent(
        self,
        model: BaseChatModel | None = None,
        policy: ToolPolicy | None = None,
        router: ToolRouter | None = None,
    ) -> ChatAgent:
        """A fresh agent instance with a fresh checkpointer, as a new Lambda invocation has."""
        client = UpstreamToolClient(
            self.upstream.base_url,
            default_timeout_s=self.settings.tool_timeout_s,
            retry_delay_s=self.settings.tool_retry_delay_s,
        )
        return ChatAgent(
            model or StandinChatModel(),
            checkpointer_from(self.settings),
            policy or self.policy,
            client,
            router=router,
            plan_timeout_s=self.settings.plan_timeout_s,
        )

    def context(
        self, role: str, ui_context: dict[str, Any] | None, groups: Sequence[str] = ()
    ) -> AgentRunContext:
        """A demo user's run context; `groups`: the groups their token names."""
        claims: dict[str, Any] = {"roles": [role]}
        if groups:
            claims[self.settings.jwt_groups_claim] = list(groups)
        token = self._users.issue(DEMO_USERS[role], 600, claims).token
        principal = user_verifier_from(self.settings).verify(token)
        parsed: UIContext | None = None
        if ui_context is not None:
            result = parse_ui_context(ui_context, self.policy.environments)
            if not isinstance(result, UIContext):
                raise TypeError(f"not a valid page context: {result}")
            parsed = result
        return AgentRunContext(
            principal=principal,
            ui_context=parsed,
            service_token=self._service.service_token().token,
        )


def stack_over(settings: Settings, upstream: SampleUpstream) -> AgentStack:
    """The stack whose tools call `upstream`."""
    return AgentStack(
        settings.model_copy(update={"upstream_base_url": upstream.base_url}), upstream
    )


async def confirming(
    agent: ChatAgent, conversation: str, context: AgentRunContext
) -> AgentRunContext:
    """`context` for confirming the card `conversation` waits on, journaled in memory (the chat
    function journals on the confirmation item)."""
    pending = await agent.pending_confirmation(conversation)
    if pending is None:
        return context
    return replace(context, confirmed_call=InMemoryConfirmedCall.of(pending))


async def collect(events: AsyncIterator[ChatEvent]) -> list[ChatEvent]:
    return [event async for event in events]


def of_type(events: list[ChatEvent], kind: EventType) -> list[dict[str, Any]]:
    return [e.metadata for e in events if e.type is kind]


def answer(events: list[ChatEvent]) -> str:
    """What the user reads: streamed tokens and plain messages, in order."""
    return "".join(
        e.metadata["token"] if e.type is EventType.STREAM_TOKEN else e.content + " "
        for e in events
        if e.type is EventType.STREAM_TOKEN or e.type is None
    )


def minted_service_tokens(settings: Settings) -> Callable[[], Awaitable[str]]:
    """Service tokens signed directly with the template's KMS key (no REST API to ask)."""
    issuer = service_token_issuer_from(settings)

    async def minted() -> str:  # KMS signs over HTTP: off the event loop, as the client is
        return (await asyncio.to_thread(issuer.service_token)).token

    return minted


def minted_once(settings: Settings) -> Callable[[], Awaitable[str]]:
    """A service token minted now and reused, as the chat function's client caches the one the
    REST API issued (so a turn makes no KMS call)."""
    minted = service_token_issuer_from(settings).service_token().token

    async def token() -> str:
        return minted

    return token


def chat_app(
    stack: AgentStack,
    model: BaseChatModel,
    audit: Any,
    *,
    service_token: Callable[[], Awaitable[str]] | None = None,
    router: ToolRouter | None = None,
    prefetch_timeout_s: float = DEFAULT_PREFETCH_TIMEOUT_S,
    outputs: BlobStore | None = None,
    origin_verify_secret: SecretStr | None = None,
) -> tuple[Any, DynamoDBConversationStore, ChatAgent]:
    """The chat function's app over this stack, its store, and its one agent (the function
    keeps one too): the function's own composition with the agent, the audit sink and the
    options below swapped. Service tokens are minted directly unless `service_token` says;
    large tool outputs are kept in the template's bucket unless `outputs` says; with
    `origin_verify_secret` the app checks CloudFront's header as in AWS."""
    deps = build_chat(stack.settings)
    agent = stack.agent(model, router=router)
    deps = replace(
        deps,
        agent=lambda: agent,
        audit=audit,
        service_token=service_token or minted_service_tokens(stack.settings),
        prefetch_timeout_s=prefetch_timeout_s,
        outputs=outputs or deps.outputs,
    )
    if not isinstance(deps.store, DynamoDBConversationStore):  # the tests read it directly too
        raise TypeError("the stack's conversation store is DynamoDB's (on moto)")
    app = create_chat_app(deps, origin_verify_secret=origin_verify_secret)
    return app, deps.store, agent
