"""The agent service's identity: service tokens for its client credentials, and their JWKS."""

from __future__ import annotations

from typing import Annotated, Final

from fastapi import APIRouter, Header, Request, Response

from sstools_agent.domain.identity import InvalidCredentials
from sstools_agent.http.auth import TooManyAttempts, audit_auth_failure, request_id_from
from sstools_agent.rest.deps import API_OBSERVABILITY, Api, responses
from sstools_agent.rest.schemas import Jwks, ServiceTokenRequest, ServiceTokenResponse

JWKS_MAX_AGE_S: Final = 300

router = APIRouter()


@router.post("/api/auth/service-token", responses=responses(401, 429))
def service_token(
    request: Request,
    body: ServiceTokenRequest,
    api: Api,
    x_request_id: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> ServiceTokenResponse:
    """A short-lived service JWT for the agent service holding the client credentials.

    A source that failed `SERVICE_TOKEN_MAX_FAILURES` times in the window is refused (429)
    until the window ends, right credentials or not, so guessing gains nothing; each failure is
    audited (sampled like every anonymous failure). The source is the address the
    infrastructure vouches for (`ClientAddresses`), never one the caller wrote. Sync: KMS signs
    in the thread pool."""
    source = api.client_addresses.of(request)
    retry_after = api.service_token_failures.retry_after(source)
    if retry_after is not None:
        audit_auth_failure(
            api.audit,
            api.auth_failures,
            source,
            {"reason": "too many failed attempts", "endpoint": "service-token"},
            outcome="rate_limited",
        )
        raise TooManyAttempts(retry_after)
    try:
        minted = api.service_tokens.issue(body.client_id, body.client_secret)
    except InvalidCredentials:
        api.service_token_failures.failed(source)
        audit_auth_failure(
            api.audit,
            api.auth_failures,
            source,
            {
                "reason": "unknown client credentials",
                "endpoint": "service-token",
                "client_id": body.client_id,
                "request_id": request_id_from(x_request_id),
            },
        )
        raise
    API_OBSERVABILITY.logger.info("service token issued", extra={"client_id": body.client_id})
    return ServiceTokenResponse(
        access_token=minted.token,
        expires_in=api.service_tokens.ttl_s,
        expires_at=minted.expires_at,
    )


@router.get("/.well-known/jwks.json")
def jwks(response: Response, api: Api) -> Jwks:
    """The public keys that verify service tokens."""
    response.headers["Cache-Control"] = f"public, max-age={JWKS_MAX_AGE_S}"
    return Jwks(keys=api.jwks()["keys"])
