"""JWT issuers and verifiers built from settings: light (no agent imports), for scripts too.

`make -s token` uses these, so printing a demo token does not load langchain.
"""

from __future__ import annotations

from sstools_agent.domain.identity import JwtIssuer, StaticKey, UserTokenVerifier
from sstools_agent.settings import Settings


def user_token_issuer_from(settings: Settings) -> JwtIssuer:
    """Signs user JWTs the verifier accepts (HS256): demo users of the local stack, and tests."""
    return JwtIssuer(
        algorithm="HS256",
        signing_key=settings.jwt_hs256_secret.get_secret_value(),
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
    )


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
