"""Cached factories: one policy, one verifier, one upstream client per process; tests swap them."""

from __future__ import annotations

import time
from functools import lru_cache

from langgraph_checkpoint_aws import DynamoDBSaver

from sstools_agent.adapters.audit import EventBridgeAuditSink
from sstools_agent.adapters.checkpointer import checkpointer_from
from sstools_agent.adapters.confirmations import (
    DynamoDBConfirmationStore,
    StepFunctionsConfirmationWorkflow,
)
from sstools_agent.adapters.conversation_store import DynamoDBConversationStore
from sstools_agent.adapters.jwks import JwksUrlKeys
from sstools_agent.adapters.upstream_client import UpstreamToolClient
from sstools_agent.agent.models import build_chat_model
from sstools_agent.agent.runtime import ChatAgent
from sstools_agent.chat.turns import ChatTurns
from sstools_agent.domain.identity import (
    JwtIssuer,
    KeyResolver,
    MintedToken,
    StaticKey,
    UserTokenVerifier,
)
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.settings import Settings, load_settings
from sstools_agent.tokens import (
    service_token_issuer_from,
)


def tool_policy_from(settings: Settings) -> ToolPolicy:
    """The tool policy for these settings."""
    return ToolPolicy(
        CATALOG,
        settings.environments(),
        confirm_reads=frozenset(settings.confirm_read_tools),
        sql_dialect=settings.sql_dialect,
    )


def user_verifier_from(settings: Settings) -> UserTokenVerifier:
    """The user-token verifier for these settings (JWKS for RS256, a shared secret for HS256)."""
    keys: KeyResolver
    if settings.jwt_algorithm == "RS256":
        if not settings.jwt_jwks_url:
            raise ValueError("JWT_JWKS_URL is required when JWT_ALGORITHM is RS256")
        keys = JwksUrlKeys(settings.jwt_jwks_url)
    else:
        keys = StaticKey(settings.jwt_hs256_secret.get_secret_value())
    return UserTokenVerifier(
        algorithm=settings.jwt_algorithm,
        keys=keys,
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
        roles_claim=settings.jwt_roles_claim,
    )


def upstream_client_from(settings: Settings) -> UpstreamToolClient:
    """The upstream tool client for these settings."""
    return UpstreamToolClient(
        settings.upstream_base_url,
        default_timeout_s=settings.tool_timeout_s,
        retry_delay_s=settings.tool_retry_delay_s,
    )


@lru_cache(maxsize=1)
def tool_policy() -> ToolPolicy:
    """The process's tool policy."""
    return tool_policy_from(load_settings())


@lru_cache(maxsize=1)
def user_verifier() -> UserTokenVerifier:
    """The process's user-token verifier."""
    return user_verifier_from(load_settings())


@lru_cache(maxsize=1)
def checkpointer() -> DynamoDBSaver:
    """The process's checkpointer (its boto3 clients are reused across invocations)."""
    return checkpointer_from(load_settings())


@lru_cache(maxsize=1)
def upstream_client() -> UpstreamToolClient:
    """The process's upstream client (one connection pool)."""
    return upstream_client_from(load_settings())


@lru_cache(maxsize=1)
def chat_agent() -> ChatAgent:
    """The process's agent: its graph is stateless, conversations live in the checkpointer."""
    settings = load_settings()
    return ChatAgent(
        build_chat_model(settings),
        checkpointer(),
        tool_policy(),
        upstream_client(),
        output_budget_chars=settings.tool_output_budget_chars,
    )


@lru_cache(maxsize=1)
def conversation_store() -> DynamoDBConversationStore:
    """The process's conversation store."""
    settings = load_settings()
    return DynamoDBConversationStore(
        settings.conversations_table,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


def confirmation_store_from(settings: Settings) -> DynamoDBConfirmationStore:
    """Pending confirmations, in the conversations table."""
    return DynamoDBConfirmationStore(
        settings.conversations_table,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


def confirmation_workflow_from(settings: Settings) -> StepFunctionsConfirmationWorkflow:
    """The confirmation state machine."""
    return StepFunctionsConfirmationWorkflow(
        settings.confirmation_state_machine_arn,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


@lru_cache(maxsize=1)
def chat_turns() -> ChatTurns:
    """The process's chat turn service."""
    settings = load_settings()
    return ChatTurns(
        chat_agent,
        conversation_store(),
        confirmation_store_from(settings),
        confirmation_workflow_from(settings),
        audit=audit_sink(),
        confirmation_timeout_s=settings.confirmation_timeout_s,
    )


@lru_cache(maxsize=1)
def audit_sink() -> EventBridgeAuditSink:
    """The process's audit sink: the EventBridge audit bus."""
    settings = load_settings()
    return EventBridgeAuditSink(
        settings.audit_bus_name, region=settings.aws_region, endpoint_url=settings.aws_endpoint_url
    )


class ServiceTokenCache:
    """The agent's service JWT, minted again shortly before it expires."""

    def __init__(self, issuer: JwtIssuer, ttl_s: int, refresh_before_s: int = 60) -> None:
        self._issuer = issuer
        self._ttl_s = ttl_s
        self._refresh_before_s = refresh_before_s
        self._current: MintedToken | None = None

    def __call__(self) -> str:
        if self._current is None or self._current.expires_at - time.time() < self._refresh_before_s:
            self._current = self._issuer.service_token(self._ttl_s)
        return self._current.token


@lru_cache(maxsize=1)
def service_token() -> ServiceTokenCache:
    """The process's service-token source."""
    settings = load_settings()
    return ServiceTokenCache(service_token_issuer_from(settings), settings.service_token_ttl_s)
