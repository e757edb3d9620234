"""Cached factories: one policy, one verifier, one upstream client per process; tests swap them."""

from __future__ import annotations

from functools import lru_cache

from langgraph_checkpoint_aws import DynamoDBSaver

from sstools_agent.adapters.checkpointer import checkpointer_from
from sstools_agent.adapters.jwks import JwksUrlKeys
from sstools_agent.adapters.upstream_client import UpstreamToolClient
from sstools_agent.domain.identity import JwtIssuer, KeyResolver, StaticKey, UserTokenVerifier
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.domain.tool_policy import ToolPolicy
from sstools_agent.settings import Settings, load_settings


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


def service_token_issuer_from(settings: Settings) -> JwtIssuer:
    """Signs the agent's service token (HS256 with the shared secret until issue 6's JWKS)."""
    return JwtIssuer(
        algorithm="HS256",
        signing_key=settings.jwt_hs256_secret.get_secret_value(),
        issuer=settings.service_token_issuer,
        audience=settings.service_token_audience,
    )


def service_verifier_from(settings: Settings) -> UserTokenVerifier:
    """Verifies the agent's service token, as the upstream does."""
    return UserTokenVerifier(
        algorithm="HS256",
        keys=StaticKey(settings.jwt_hs256_secret.get_secret_value()),
        issuer=settings.service_token_issuer,
        audience=settings.service_token_audience,
    )


@lru_cache(maxsize=1)
def checkpointer() -> DynamoDBSaver:
    """The process's checkpointer (its boto3 clients are reused across invocations)."""
    return checkpointer_from(load_settings())
