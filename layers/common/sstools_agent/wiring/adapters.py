"""The adapters as settings configure them: one plain constructor each, `<thing>_from(settings)`.

Each takes the settings mixin it reads, so a function's settings class is enough to build what
that function uses; the agent's own (policy, router, upstream client) are in `wiring.chat`.
Nothing is cached here: `build_chat` and `build_api` call these once, and the
function's module-level app holds the result. Nothing here imports the agent (langchain): the
REST API function starts without it.
"""

from __future__ import annotations

from collections.abc import Callable

from sstools_agent.adapters.attachment_store import S3AttachmentStore
from sstools_agent.adapters.audit import EventBridgeAuditSink
from sstools_agent.adapters.blob_store import S3BlobStore
from sstools_agent.adapters.dynamodb.confirmations import DynamoDBConfirmationStore
from sstools_agent.adapters.dynamodb.conversations import DynamoDBConversationStore
from sstools_agent.adapters.dynamodb.gradio_queue import DynamoDBGradioQueue
from sstools_agent.adapters.jwks import JwksUrlKeys
from sstools_agent.adapters.policy_object import S3PolicyReader
from sstools_agent.adapters.secrets import SecretsReader
from sstools_agent.adapters.service_tokens import KmsJwtIssuer, ServiceTokenClient
from sstools_agent.adapters.stepfunctions import StepFunctionsConfirmationWorkflow
from sstools_agent.domain.cursors import CursorCodec
from sstools_agent.domain.identity import (
    ClientCredentials,
    KeyResolver,
    StaticKey,
    UserTokenVerifier,
)
from sstools_agent.domain.policy_engine import FixedPolicies, PolicySource
from sstools_agent.domain.policy_loading import ReloadingPolicies
from sstools_agent.domain.tool_catalog import CATALOG
from sstools_agent.rest.service import ConversationsApi
from sstools_agent.settings import (
    ApiSettings,
    AttachmentSettings,
    AuditSettings,
    ConfirmationSettings,
    ConversationStoreSettings,
    OffloadBucketSettings,
    PolicyObjectSettings,
    SecretsSettings,
    ServiceTokenClientSettings,
    ServiceTokenIssuerSettings,
    UserAuthSettings,
)


def user_verifier_from(settings: UserAuthSettings) -> UserTokenVerifier:
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
        groups_claim=settings.jwt_groups_claim,
    )


def policy_source_from(
    settings: PolicyObjectSettings, on_refused: Callable[[], None] = lambda: None
) -> PolicySource:
    """The policy set the function decides with: the team's S3 object, read now (at init) and
    again after each TTL, when a bucket is configured; else the shipped set."""
    if settings.policy_bucket is None:
        return FixedPolicies.shipped()
    reader = S3PolicyReader(
        settings.policy_bucket,
        settings.policy_object_key,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )
    return ReloadingPolicies(reader, CATALOG.names, on_refused=on_refused)


def conversation_store_from(settings: ConversationStoreSettings) -> DynamoDBConversationStore:
    """Conversations in their DynamoDB table."""
    return DynamoDBConversationStore(
        settings.conversations_table,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


def gradio_queue_from(settings: ConversationStoreSettings) -> DynamoDBGradioQueue:
    """Gradio's joined turns in the conversations table (short-lived items with its TTL)."""
    return DynamoDBGradioQueue(
        settings.conversations_table,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


def tool_output_store_from(settings: OffloadBucketSettings) -> S3BlobStore:
    """Tool outputs too large for a history item, kept whole in the checkpoints' bucket."""
    return S3BlobStore(
        settings.checkpoint_bucket,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


def attachment_store_from(settings: AttachmentSettings) -> S3AttachmentStore:
    """The files users attach, in their private bucket."""
    return S3AttachmentStore(
        settings.attachment_bucket,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


def confirmation_store_from(settings: ConversationStoreSettings) -> DynamoDBConfirmationStore:
    """Pending confirmations, in the conversations table."""
    return DynamoDBConfirmationStore(
        settings.conversations_table,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


def confirmation_workflow_from(settings: ConfirmationSettings) -> StepFunctionsConfirmationWorkflow:
    """The confirmation state machine."""
    return StepFunctionsConfirmationWorkflow(
        settings.confirmation_state_machine_arn,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
        approval_timeout_s=settings.approval_timeout_s,
        chat_function=settings.chat_function,
    )


def audit_sink_from(settings: AuditSettings) -> EventBridgeAuditSink:
    """The EventBridge audit bus."""
    return EventBridgeAuditSink(
        settings.audit_bus_name, region=settings.aws_region, endpoint_url=settings.aws_endpoint_url
    )


def secrets_reader_from(settings: SecretsSettings) -> SecretsReader:
    """Secrets Manager and SSM through Powertools parameters, cached."""
    return SecretsReader(
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
        max_age_s=settings.secrets_max_age_s,
    )


def service_token_issuer_from(settings: ServiceTokenIssuerSettings) -> KmsJwtIssuer:
    """Service tokens signed by the configured KMS key (the REST API issues them)."""
    return KmsJwtIssuer(
        settings.service_token_kms_key_ids,
        issuer=settings.service_token_issuer,
        audience=settings.service_token_audience,
        region=settings.aws_region,
        endpoint_url=settings.aws_endpoint_url,
    )


def service_verifier_from(
    settings: ServiceTokenIssuerSettings, keys: KeyResolver
) -> UserTokenVerifier:
    """Verifies service tokens as the upstream does: RS256, keys from the REST API's JWKS."""
    return UserTokenVerifier(
        algorithm="RS256",
        keys=keys,
        issuer=settings.service_token_issuer,
        audience=settings.service_token_audience,
    )


def conversations_api_from(settings: ApiSettings, reader: SecretsReader) -> ConversationsApi:
    """The REST API's conversation use cases, cursors signed with the cursor secret."""
    secret = reader.text(settings.cursor_secret_id)
    return ConversationsApi(
        conversation_store_from(settings),
        CursorCodec(secret, "conversations"),
        CursorCodec(secret, "history"),
        tool_output_store_from(settings),
    )


def client_credentials_from(
    settings: SecretsSettings, reader: SecretsReader
) -> Callable[[], ClientCredentials]:
    """The agent's client credentials, read (and cached) from Secrets Manager on each use."""
    return lambda: reader.client_credentials(settings.service_client_secret_id)


def service_token_client_from(
    settings: ServiceTokenClientSettings, reader: SecretsReader
) -> ServiceTokenClient:
    """The chat's service token: fetched from the REST API with the client credentials."""

    def url() -> str:
        if settings.service_token_url_parameter:
            return reader.parameter(settings.service_token_url_parameter)
        return settings.service_token_url

    return ServiceTokenClient(url, client_credentials_from(settings, reader))
