"""The chat function's composition: `build_chat(settings) -> ChatDeps`."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from pydantic import SecretStr

from sstools_agent.adapters.checkpointer import checkpointer_from
from sstools_agent.adapters.embeddings import BedrockTitanEmbedder, OfflineEmbedder
from sstools_agent.adapters.process_state import renew_after_restore
from sstools_agent.adapters.service_tokens import ServiceTokenSource
from sstools_agent.adapters.upstream_client import UpstreamToolClient
from sstools_agent.agent.models import build_chat_model
from sstools_agent.agent.runtime import ChatAgent
from sstools_agent.chat.approvals import SecondApprovals
from sstools_agent.chat.attachments import ChatAttachments
from sstools_agent.chat.expired_cards import ExpiryRecorder
from sstools_agent.chat.routes import ChatRouteDeps
from sstools_agent.chat.service import ChatService
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.approvals import DEFAULT_APPROVAL_TIMEOUT_S
from sstools_agent.domain.attempt_limits import AuthFailureSampler
from sstools_agent.domain.confirmations import DEFAULT_CONFIRMATION_TIMEOUT_S
from sstools_agent.domain.environments import EnvironmentRegistry
from sstools_agent.domain.identity import UserTokenVerifier
from sstools_agent.domain.policy_engine import PolicyEngine
from sstools_agent.domain.ports import (
    AuditSink,
    BlobStore,
    ConfirmationStore,
    ConfirmationWorkflow,
    ConversationStore,
    GradioQueue,
)
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.domain.tool_routing import Embedder, ToolRouter
from sstools_agent.http.client_address import ClientAddresses
from sstools_agent.http.observability import policy_set_refused
from sstools_agent.settings import (
    DEFAULT_PREFETCH_TIMEOUT_S,
    DEFAULT_STREAM_COALESCE_S,
    DEFAULT_STREAM_HEARTBEAT_S,
    ChatSettings,
    RoutingSettings,
    ToolSettings,
)
from sstools_agent.wiring.adapters import (
    attachment_store_from,
    audit_sink_from,
    confirmation_store_from,
    confirmation_workflow_from,
    conversation_store_from,
    gradio_queue_from,
    policy_source_from,
    secrets_reader_from,
    service_token_client_from,
    tool_output_store_from,
    user_verifier_from,
)

logger = logging.getLogger(__name__)
WARM_ATTEMPTS: Final = 3
WARM_RETRY_S: Final = 5.0
"""The router's background warm-up tries three times, 5 s then 10 s apart."""


def tool_policy_from(settings: ChatSettings) -> ToolPolicy:
    """The tool policy for these settings."""
    return ToolPolicy(
        CATALOG,
        settings.environments(),
        confirm_reads=frozenset(settings.confirm_read_tools),
        sql_dialect=settings.sql_dialect,
        engine=PolicyEngine(
            policy_source_from(settings, functools.partial(policy_set_refused, "chat"))
        ),
        prod_approvers=settings.prod_approvers,
    )


def tool_router_from(
    settings: RoutingSettings, *, warm_in_background: bool = False
) -> ToolRouter | None:
    """The tool router as configured (None when routing is off). `warm_in_background`: its
    examples are embedded by a thread of their own, and until then it routes on keywords."""
    if settings.tool_routing == "off":
        return None
    if settings.tool_routing == "keywords":
        return ToolRouter(None)
    embedder: Embedder
    if settings.embeddings_provider == "bedrock":
        embedder = BedrockTitanEmbedder(
            region=settings.aws_region, model_id=settings.bedrock_embedding_model_id
        )
    else:
        embedder = OfflineEmbedder()
    router = ToolRouter(embedder, warmed_elsewhere=warm_in_background)
    if warm_in_background:
        threading.Thread(target=_warm, args=(router,), name="router-warm", daemon=True).start()
    return router


def _warm(router: ToolRouter, attempts: int = WARM_ATTEMPTS) -> None:
    """Embeds the router's examples, trying again after a failure (Bedrock throttled, say);
    meanwhile, and after the last attempt, it routes on keywords."""
    for attempt in range(1, attempts + 1):
        try:
            router.warm()
            return
        except Exception:
            logger.exception("the tool router's embeddings failed (attempt %d)", attempt)
            if attempt < attempts:
                time.sleep(WARM_RETRY_S * attempt)


def upstream_client_from(settings: ToolSettings) -> UpstreamToolClient:
    """The upstream tool client for these settings."""
    return UpstreamToolClient(
        settings.upstream_base_url,
        default_timeout_s=settings.tool_timeout_s,
        retry_delay_s=settings.tool_retry_delay_s,
    )


@dataclass(frozen=True, slots=True)
class ChatDeps:
    """The chat function's collaborators. `turns` and `service` are derived from the others, so
    replacing one (`dataclasses.replace(deps, audit=MemoryAuditSink())`) reaches everything that
    uses it."""

    agent: Callable[[], ChatAgent]
    store: ConversationStore
    confirmations: ConfirmationStore
    workflow: ConfirmationWorkflow
    outputs: BlobStore
    """Tool outputs too large for a history item, kept whole."""
    attachments: ChatAttachments
    """The files messages attach: checked before a turn, kept with its message."""
    audit: AuditSink
    verifier: UserTokenVerifier
    service_token: ServiceTokenSource
    environments: EnvironmentRegistry
    gradio_queue: GradioQueue
    """Turns joined through the Gradio endpoint, waiting for the stream that runs them."""
    auth_failures: AuthFailureSampler = field(default_factory=AuthFailureSampler)
    confirmation_timeout_s: int = DEFAULT_CONFIRMATION_TIMEOUT_S
    approval_timeout_s: int = DEFAULT_APPROVAL_TIMEOUT_S
    prefetch_timeout_s: float = DEFAULT_PREFETCH_TIMEOUT_S
    stream_coalesce_s: float = DEFAULT_STREAM_COALESCE_S
    stream_heartbeat_s: float = DEFAULT_STREAM_HEARTBEAT_S
    turns: ChatTurns = field(init=False, repr=False, compare=False)
    service: ChatService = field(init=False, repr=False, compare=False)
    """What the chat routes call: the turns behind the page context's and the token's checks."""
    approvals: SecondApprovals = field(init=False, repr=False, compare=False)
    """The approvals view's reads and decisions, and a second decision told in its turn."""

    def __post_init__(self) -> None:
        turns = ChatTurns(
            self.agent,
            self.store,
            self.confirmations,
            self.workflow,
            audit=self.audit,
            confirmation_timeout_s=self.confirmation_timeout_s,
            approval_timeout_s=self.approval_timeout_s,
            prefetch_timeout_s=self.prefetch_timeout_s,
            outputs=self.outputs,
            attachments=self.attachments,
        )
        object.__setattr__(self, "turns", turns)
        service = ChatService(
            turns,
            environments=self.environments,
            audit=self.audit,
            service_token=self.service_token,
        )
        object.__setattr__(self, "service", service)
        approvals = SecondApprovals(
            turns,
            self.agent,
            self.confirmations,
            self.workflow,
            audit=self.audit,
            service_token=self.service_token,
        )
        object.__setattr__(self, "approvals", approvals)

    def prepare_snapshot(self) -> None:
        """What SnapStart's before-snapshot hook does: builds what a first turn would otherwise
        build (the agent, the router's example embeddings: it waits for the warm-up thread) and
        sends held audit records, so that the snapshot holds the work and none of the records.
        A failed warm-up is logged, not raised: the snapshot routes on keywords until the
        warm-up thread's next attempt, which a restored environment carries on."""
        router = self.agent().router
        if router is not None:
            try:
                router.warm()
            except Exception:
                logger.exception("the tool router's embeddings failed before the snapshot")
        self.audit.flush()

    def renew_after_restore(self) -> None:
        """What SnapStart's after-restore hook does (`adapters.process_state`): new random
        state and AWS connections, the cached service token forgotten, the upstream client's
        pool reopened."""
        renew_after_restore(self.service_token, self.agent().upstream)

    def route_deps(self, origin_verify_secret: SecretStr | None) -> ChatRouteDeps:
        """What the chat routes share, over these collaborators; a client's address is read
        from CloudFront's header only when the origin secret proves CloudFront sent it."""
        return ChatRouteDeps(
            self.service,
            verifier=self.verifier,
            audit=self.audit,
            auth_failures=self.auth_failures,
            client_addresses=ClientAddresses.trusting(origin_verify_secret),
            coalesce_s=self.stream_coalesce_s,
            heartbeat_s=self.stream_heartbeat_s,
            gradio_queue=self.gradio_queue,
        )

    def expiry_recorder(self) -> ExpiryRecorder:
        """What the expiry function tells expired cards with, over these collaborators."""
        return ExpiryRecorder(self.turns, self.agent, self.store, self.confirmations, self.audit)


def chat_attachments_from(settings: ChatSettings) -> ChatAttachments:
    """The files' checks and keeping; images and PDFs reach the model as content blocks where
    its provider takes them (Bedrock Converse)."""
    return ChatAttachments(
        attachment_store_from(settings),
        settings.attachment_limits(),
        model_takes_files=settings.model_provider == "bedrock",
    )


def agent_from(settings: ChatSettings, *, routed: bool = True) -> Callable[[], ChatAgent]:
    """The agent, built once and then shared by every turn (its graph is stateless:
    conversations live in the checkpointer). The chat function builds it while Lambda
    initialises the container (main.py); the router's embeddings warm in the background.
    Without `routed` (the expiry function, which routes no message) there is no router."""

    @functools.cache
    def agent() -> ChatAgent:
        router = tool_router_from(settings, warm_in_background=True) if routed else None
        return ChatAgent(
            build_chat_model(settings, router=router),
            checkpointer_from(settings),
            tool_policy_from(settings),
            upstream_client_from(settings),
            output_budget_chars=settings.tool_output_budget_chars,
            router=router,
            plan_timeout_s=settings.plan_timeout_s,
        )

    return agent


def build_chat(settings: ChatSettings, *, routed: bool = True) -> ChatDeps:
    """The chat function's collaborators, wired to AWS as `settings` say (without `routed`: an
    agent without the tool router, for the expiry function)."""
    return ChatDeps(
        agent=agent_from(settings, routed=routed),
        store=conversation_store_from(settings),
        confirmations=confirmation_store_from(settings),
        workflow=confirmation_workflow_from(settings),
        outputs=tool_output_store_from(settings),
        attachments=chat_attachments_from(settings),
        audit=audit_sink_from(settings),
        verifier=user_verifier_from(settings),
        service_token=service_token_client_from(settings, secrets_reader_from(settings)),
        environments=settings.environments(),
        gradio_queue=gradio_queue_from(settings),
        auth_failures=settings.auth_failure_sampler(),
        confirmation_timeout_s=settings.confirmation_timeout_s,
        approval_timeout_s=settings.approval_timeout_s,
        prefetch_timeout_s=settings.prefetch_timeout_s,
        stream_coalesce_s=settings.stream_coalesce_s,
        stream_heartbeat_s=settings.stream_heartbeat_s,
    )
