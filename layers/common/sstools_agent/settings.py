"""Configuration, read from the environment once, at a function's entry, into typed settings.

Nothing else in the project reads `os.environ`. Each concern is one small mixin (its fields, their
bounds and defaults); each function's settings class is the mixins it reads, so a function is
validated at entry against exactly the variables it uses: `ChatSettings`, `ApiSettings`,
`AuditFunctionSettings`. `Settings` is all of them, for the local stack and the tests, which run
every function in one process. Every field has a default that runs the local stack; a default that
code outside settings also needs is defined once, beside its concept, and imported here.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Annotated, Any, Final, Literal

from pydantic import Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from sstools_agent.domain.approvals import (
    DEFAULT_APPROVAL_TIMEOUT_S,
    DEFAULT_PROD_APPROVERS,
)
from sstools_agent.domain.attachments import DEFAULT_MAX_BYTES, DEFAULT_MAX_FILES, AttachmentLimits
from sstools_agent.domain.attempt_limits import (
    DEFAULT_AUDIT_PER_SOURCE,
    DEFAULT_AUDIT_PER_WINDOW,
    DEFAULT_AUDIT_WINDOW_S,
    DEFAULT_FAILURE_WINDOW_S,
    DEFAULT_MAX_FAILURES,
    AuthFailureSampler,
    FailureLimiter,
)
from sstools_agent.domain.catalog_types import (
    DEFAULT_RETRY_DELAY_S,
    DEFAULT_SQL_DIALECT,
    DEFAULT_TOOL_TIMEOUT_S,
)
from sstools_agent.domain.confirmations import DEFAULT_CONFIRMATION_TIMEOUT_S
from sstools_agent.domain.environments import DEFAULT_ENVIRONMENT_TIERS, EnvironmentRegistry
from sstools_agent.domain.identity import DEFAULT_SERVICE_TOKEN_TTL_S
from sstools_agent.domain.policy_loading import DEFAULT_POLICY_OBJECT_KEY
from sstools_agent.domain.tool_output_summary import DEFAULT_BUDGET_CHARS

LOCAL_HS256_SECRET = "local-development-secret-not-for-deployment-0123456789"  # noqa: S105
"""The local stack's shared secret; refused when STAGE is anything but `local`."""

DEFAULT_PREFETCH_TIMEOUT_S: Final = 1.5
"""How long a turn waits for the page object's summary (the agent's prefetch takes it too)."""
DEFAULT_PLAN_TIMEOUT_S: Final = 5.0
"""How long the reads of a change's plan may take (a count on prod must not eat the tool's 30 s)."""
DEFAULT_STREAM_COALESCE_S: Final = 0.010
"""Token frames are written to the socket together within this window (`chat.pacing`)."""
DEFAULT_STREAM_HEARTBEAT_S: Final = 15.0
"""A stream silent this long gets an SSE comment line (CloudFront closes one silent 60 s)."""


def _pairs(value: Any) -> Any:
    """`"ss-dev=dev,prod=prod"` -> `{"ss-dev": "dev", "prod": "prod"}`."""
    if not isinstance(value, str):
        return value
    pairs = [item.split("=", 1) for item in value.split(",") if item.strip()]
    if any(len(pair) != 2 for pair in pairs):
        raise ValueError("expected id=tier pairs separated by commas, e.g. ss-dev=dev,prod=prod")
    return {key.strip(): tier.strip() for key, tier in pairs}


def _names(value: Any) -> Any:
    """`"a, b"` -> `["a", "b"]`."""
    if isinstance(value, str):
        return [item.strip() for item in value.split(",") if item.strip()]
    return value


class FunctionSettings(BaseSettings):
    """What every function is told: its stage (the template sets it for all of them)."""

    model_config = SettingsConfigDict(case_sensitive=False, extra="ignore", frozen=True)

    stage: str = "local"


class AwsSettings(FunctionSettings):
    """Where the AWS services are."""

    aws_region: str = "eu-central-1"
    aws_endpoint_url: str | None = None
    """Set for moto in the local stack; unset in AWS."""


class EnvironmentSettings(FunctionSettings):
    """The Superset environments ss-tools manages."""

    known_environments: Annotated[dict[str, str], NoDecode] = Field(
        default_factory=lambda: dict(DEFAULT_ENVIRONMENT_TIERS)
    )

    _split_pairs = field_validator("known_environments", mode="before")(_pairs)

    @field_validator("known_environments")
    @classmethod
    def _tiers_are_known(cls, value: dict[str, str]) -> dict[str, str]:
        EnvironmentRegistry.from_tiers(value)  # raises on an unknown tier or an empty list
        return value

    def environments(self) -> EnvironmentRegistry:
        """The known environments as a registry."""
        return EnvironmentRegistry.from_tiers(self.known_environments)


class UserAuthSettings(FunctionSettings):
    """How user JWTs are verified, and how failed authentications are audited."""

    jwt_algorithm: Literal["RS256", "HS256"] = "HS256"
    jwt_issuer: str = "ss-tools"
    jwt_audience: str = "ss-tools-agent"
    jwt_roles_claim: str = "roles"
    jwt_groups_claim: str = "groups"
    """The claim naming the user's groups (a string or a list), which policies may name."""
    jwt_jwks_url: str | None = None
    jwt_hs256_secret: SecretStr = SecretStr(LOCAL_HS256_SECRET)
    auth_failure_audit_per_source: int = Field(default=DEFAULT_AUDIT_PER_SOURCE, ge=0)
    """Failed authentications audited one by one per source and window (the rest: counted)."""
    auth_failure_audit_per_window: int = Field(default=DEFAULT_AUDIT_PER_WINDOW, ge=0)
    """...and in all, per window and container."""
    auth_failure_window_s: float = Field(default=DEFAULT_AUDIT_WINDOW_S, gt=0, le=86_400)

    @model_validator(mode="after")
    def _no_default_secret_outside_local(self) -> UserAuthSettings:
        if (
            self.stage != "local"
            and self.jwt_algorithm == "HS256"
            and self.jwt_hs256_secret.get_secret_value() == LOCAL_HS256_SECRET
        ):
            raise ValueError("JWT_HS256_SECRET must be set outside the local stack")
        return self

    def auth_failure_sampler(self) -> AuthFailureSampler:
        """Which failed authentications get their own audit record (in-process state)."""
        return AuthFailureSampler(
            per_source=self.auth_failure_audit_per_source,
            per_window=self.auth_failure_audit_per_window,
            window_s=self.auth_failure_window_s,
        )


class OffloadBucketSettings(AwsSettings):
    """The bucket of what is too large for DynamoDB: big checkpoints and whole tool outputs."""

    checkpoint_bucket: str = "checkpointbucket"


class ConversationStoreSettings(OffloadBucketSettings):
    """Conversations, messages and stream events (tool outputs too large kept in the bucket)."""

    conversations_table: str = "ConversationsTable"


class ConfirmationSettings(ConversationStoreSettings):
    """Pending confirmations (in the conversations table) and the state machine that holds them."""

    confirmation_state_machine_arn: str = (
        "arn:aws:states:eu-central-1:123456789012:stateMachine:ConfirmationStateMachine"
    )
    confirmation_timeout_s: int = Field(default=DEFAULT_CONFIRMATION_TIMEOUT_S, ge=1, le=86_400)
    prod_approvers: int = Field(default=DEFAULT_PROD_APPROVERS, ge=1, le=2)
    """How many people approve a write to a prod environment (1: the person who asked)."""
    approval_timeout_s: int = Field(default=DEFAULT_APPROVAL_TIMEOUT_S, ge=1, le=86_400)
    """How long a card confirmed once waits for its second approver."""
    aws_lambda_function_name: str = "ChatFunction"
    """This function's name (Lambda sets it; locally, the stand-in moto function's)."""
    chat_function_alias: str | None = None
    """The alias a second approver's decision invokes (the template's; none locally)."""

    @property
    def chat_function(self) -> str:
        """What the state machine invokes with a second approver's decision."""
        name = self.aws_lambda_function_name
        return f"{name}:{self.chat_function_alias}" if self.chat_function_alias else name

    plan_timeout_s: float = Field(default=DEFAULT_PLAN_TIMEOUT_S, gt=0, le=30)
    """How long the reads of a change's plan may take before its card says it could not read
    them (the card is shown either way)."""


class CheckpointSettings(OffloadBucketSettings):
    """The agent's LangGraph checkpoints."""

    checkpoint_table: str = "CheckpointTable"
    checkpoint_ttl_days: int = Field(default=30, ge=1)


class AttachmentSettings(AwsSettings):
    """Files users attach (docs/attachments.md): their bucket and limits."""

    attachment_bucket: str = "attachmentbucket"
    attachment_max_bytes: int = Field(default=DEFAULT_MAX_BYTES, ge=1, le=100 * 1024 * 1024)
    """One file at most (the presigned POST's length range, checked again before a turn)."""
    attachment_max_files: int = Field(default=DEFAULT_MAX_FILES, ge=0, le=20)
    """Files in one message at most (0: attachments are off)."""

    def attachment_limits(self) -> AttachmentLimits:
        return AttachmentLimits(self.attachment_max_bytes, self.attachment_max_files)


class AuditSettings(AwsSettings):
    """The bus audit records are sent to."""

    audit_bus_name: str = "AuditBus"


class AuditTableSettings(AwsSettings):
    """The append-only audit table (the audit function writes it)."""

    audit_table: str = "AuditTable"


class PolicyObjectSettings(AwsSettings):
    """Where the team keeps its Cedar policy set (docs/policy.md, "Loading")."""

    policy_bucket: str | None = None
    """The bucket of the team's versioned policy object (template.yaml `PolicyBucket`); unset
    or empty: the shipped policy set decides."""
    policy_object_key: str = DEFAULT_POLICY_OBJECT_KEY

    @field_validator("policy_bucket", mode="before")
    @classmethod
    def _empty_is_none(cls, value: Any) -> Any:
        return value or None


class SecretsSettings(AwsSettings):
    """Secrets Manager and SSM, and the agent service's client credentials both functions read."""

    secrets_max_age_s: int = Field(default=300, ge=0, le=3600)
    """How long secrets and parameters are cached (Powertools parameters)."""
    service_client_secret_id: str = "ServiceClientSecret"  # noqa: S105 (a secret's name)
    """Secrets Manager secret holding the agent's `{client_id, client_secret}`."""


class ServiceTokenIssuerSettings(SecretsSettings):
    """The service tokens the REST API issues (and the upstream verifies)."""

    service_token_issuer: str = "ss-tools-agent"  # noqa: S105 (a JWT `iss`, not a secret)
    service_token_audience: str = "ss-tools"  # noqa: S105 (a JWT `aud`, not a secret)
    service_token_ttl_s: int = Field(default=DEFAULT_SERVICE_TOKEN_TTL_S, ge=120, le=3600)
    service_token_kms_key_ids: Annotated[list[str], NoDecode] = Field(
        default=["alias/ServiceTokenKey"]
    )
    """KMS keys (RSA_2048, SIGN_VERIFY) of service tokens: the first signs, all are in the JWKS."""
    service_token_max_failures: int = Field(default=DEFAULT_MAX_FAILURES, ge=1)
    """Failed service-token requests a source may make per window before it gets 429."""
    service_token_failure_window_s: float = Field(default=DEFAULT_FAILURE_WINDOW_S, gt=0, le=86_400)

    _split_key_ids = field_validator("service_token_kms_key_ids", mode="before")(_names)

    def service_token_limiter(self, clock: Callable[[], float] = time.time) -> FailureLimiter:
        """How often a source may fail at `POST /api/auth/service-token` (in-process state;
        its windows are `clock`'s)."""
        return FailureLimiter(
            max_failures=self.service_token_max_failures,
            window_s=self.service_token_failure_window_s,
            clock=clock,
        )


class ServiceTokenClientSettings(SecretsSettings):
    """Where the chat obtains its service token."""

    service_token_url: str = "http://127.0.0.1:8000/api/auth/service-token"  # noqa: S105
    service_token_url_parameter: str | None = None
    """In AWS: the SSM parameter holding the token endpoint's URL (overrides the URL above)."""


class CursorSettings(SecretsSettings):
    """The REST API's page cursors."""

    cursor_secret_id: str = "CursorSigningSecret"  # noqa: S105 (a secret's name)
    """Secrets Manager secret (plain text) that signs the REST API's page cursors."""


class ToolSettings(FunctionSettings):
    """The upstream the tools call, and how their calls and outputs are handled."""

    upstream_base_url: str = "http://127.0.0.1:8100"
    tool_timeout_s: float = Field(default=DEFAULT_TOOL_TIMEOUT_S, gt=0, le=900)
    tool_retry_delay_s: float = Field(default=DEFAULT_RETRY_DELAY_S, ge=0, le=30)
    tool_output_budget_chars: int = Field(default=DEFAULT_BUDGET_CHARS, ge=200)
    confirm_read_tools: Annotated[list[str], NoDecode] = Field(default_factory=list)
    sql_dialect: str = DEFAULT_SQL_DIALECT

    _split_tools = field_validator("confirm_read_tools", mode="before")(_names)


class ModelSettings(AwsSettings):
    """The chat model."""

    model_provider: Literal["standin", "bedrock", "openai"] = "standin"
    model_timeout_s: float = Field(default=60, gt=0)
    model_max_tokens: int = Field(default=2048, ge=64)
    standin_token_delay_s: float = Field(default=0.0, ge=0, le=1)
    """The pause between the stand-in's streamed words (a demo shows streaming with 0.02)."""
    bedrock_model_id: str = "anthropic.claude-3-5-haiku-20241022-v1:0"
    openai_base_url: str | None = None
    openai_model: str = "gpt-4o-mini"
    openai_api_key: SecretStr = SecretStr("not-needed-for-local-servers")


class RoutingSettings(AwsSettings):
    """Which tools a turn offers the model, and the page object's prefetch."""

    tool_routing: Literal["hybrid", "keywords", "off"] = "hybrid"
    """hybrid: keywords, embeddings when they match < 3 tools; keywords; off: the policy's set."""
    prefetch_timeout_s: float = Field(default=DEFAULT_PREFETCH_TIMEOUT_S, ge=0, le=10)
    """How long a turn waits for the page object's summary (0: no prefetch)."""
    embeddings_provider: Literal["offline", "bedrock"] = "offline"
    bedrock_embedding_model_id: str = "amazon.titan-embed-text-v2:0"


class OriginCheckSettings(FunctionSettings):
    """The secret that proves CloudFront sent a request (`sstools_agent.http.origin`): the chat
    answers only such requests; both functions believe CloudFront's viewer address only on them
    (`sstools_agent.http.client_address`)."""

    origin_verify_secret: SecretStr | None = None
    """The value CloudFront sends in `X-Origin-Verify`. Set in AWS (template.yaml, from
    `OriginVerifySecret`): the chat refuses (403) requests without it; the REST API, which the
    chat function and ss-tools also call directly, refuses nothing, but reads the viewer's
    address only from requests that carry it. Unset locally and in the tests: nothing checked,
    and no viewer address believed."""


class TracingSettings(FunctionSettings):
    """Whether a function sends X-Ray traces (`sstools_agent.http.observability`): read when its
    module is imported, before its other settings."""

    tracing: bool = False
    """`TRACING=true` (the template's `Tracing=Active`): Powertools Tracer, and in the chat
    function the trace header Lambda Web Adapter passes copied where the X-Ray SDK looks.
    Off, the X-Ray SDK is never imported (150-170 ms of a cold start)."""


class StreamSettings(FunctionSettings):
    """How the chat's responses reach the socket (`sstools_agent.chat.pacing`)."""

    stream_coalesce_s: float = Field(default=DEFAULT_STREAM_COALESCE_S, ge=0, le=1)
    """Token frames are written together within this window; any other frame at once."""
    stream_heartbeat_s: float = Field(default=DEFAULT_STREAM_HEARTBEAT_S, gt=0, le=55)
    """A stream silent this long gets an SSE comment line (CloudFront closes one silent 60 s)."""


class ChatSettings(
    TracingSettings,
    StreamSettings,
    EnvironmentSettings,
    UserAuthSettings,
    ToolSettings,
    ModelSettings,
    RoutingSettings,
    CheckpointSettings,
    ConfirmationSettings,
    AttachmentSettings,
    AuditSettings,
    ServiceTokenClientSettings,
    OriginCheckSettings,
    PolicyObjectSettings,
):
    """The chat function's configuration."""


class ApiSettings(
    TracingSettings,
    EnvironmentSettings,
    UserAuthSettings,
    ConversationStoreSettings,
    CursorSettings,
    AttachmentSettings,
    AuditSettings,
    ServiceTokenIssuerSettings,
    OriginCheckSettings,
    PolicyObjectSettings,
):
    """The REST API function's configuration."""


class AuditFunctionSettings(TracingSettings, AuditTableSettings):
    """The audit function's configuration."""


# The pydantic mypy plugin gives each class its own `model_construct` signature, and those of two
# sibling bases never agree; the fields themselves are the union, checked at runtime.
class Settings(ChatSettings, ApiSettings, AuditFunctionSettings):  # type: ignore[misc]
    """Every function's configuration at once: the local stack and the tests run them all in one
    process (and the sample upstream verifies the service tokens the REST API issues)."""
