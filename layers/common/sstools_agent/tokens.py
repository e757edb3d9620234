"""The user-token issuer built from settings: light (no agent imports), for scripts too.

`make -s token` uses it, so printing a demo token does not load langchain. (Service tokens are
signed by KMS and issued by the REST API: `sstools_agent.adapters.service_tokens`.)
"""

from __future__ import annotations

from sstools_agent.domain.identity import JwtIssuer
from sstools_agent.settings import UserAuthSettings


def user_token_issuer_from(settings: UserAuthSettings) -> JwtIssuer:
    """Signs user JWTs the verifier accepts (HS256): demo users of the local stack, and tests."""
    return JwtIssuer(
        algorithm="HS256",
        signing_key=settings.jwt_hs256_secret.get_secret_value(),
        issuer=settings.jwt_issuer,
        audience=settings.jwt_audience,
    )
