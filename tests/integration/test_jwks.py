"""User tokens verified through a JWKS fetched over real HTTP (and cached)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from local.servers import serve
from sstools_agent.adapters.jwks import JwksUrlKeys
from sstools_agent.domain.identity import (
    AuthenticationError,
    JwtIssuer,
    UserTokenVerifier,
    public_jwk,
)
from sstools_agent.domain.roles import Role

ISSUER, AUDIENCE = "ss-tools", "ss-tools-agent"


class JwksApp:
    """Serves one JWKS document and counts how often it was fetched."""

    def __init__(self, jwks: dict[str, Any]) -> None:
        self.jwks = jwks
        self.fetches = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.fetches += 1
        status = 200 if scope["path"] == "/.well-known/jwks.json" else 404
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": json.dumps(self.jwks).encode()})


@pytest.fixture
def jwks_app(rsa_private_key) -> JwksApp:
    return JwksApp({"keys": [public_jwk(rsa_private_key.public_key(), "k1")]})


@pytest.fixture
def jwks_url(jwks_app) -> Iterator[str]:
    with serve(jwks_app) as base_url:
        yield f"{base_url}/.well-known/jwks.json"


def verifier(url: str) -> UserTokenVerifier:
    return UserTokenVerifier(
        algorithm="RS256", keys=JwksUrlKeys(url), issuer=ISSUER, audience=AUDIENCE
    )


def test_tokens_verify_through_the_jwks_and_keys_are_cached(rsa_private_key, jwks_app, jwks_url):
    issuer = JwtIssuer(
        algorithm="RS256",
        signing_key=rsa_private_key,
        issuer=ISSUER,
        audience=AUDIENCE,
        key_id="k1",
    )
    users = verifier(jwks_url)
    for _ in range(3):
        principal = users.verify(issuer.issue("ivanova", 60, {"roles": ["admin"]}).token)
        assert principal.role is Role.ADMIN
    assert jwks_app.fetches == 1


def test_an_unreachable_jwks_is_an_authentication_error(rsa_private_key):
    issuer = JwtIssuer(
        algorithm="RS256",
        signing_key=rsa_private_key,
        issuer=ISSUER,
        audience=AUDIENCE,
        key_id="k1",
    )
    users = verifier("http://127.0.0.1:9/.well-known/jwks.json")
    with pytest.raises(AuthenticationError, match="signing keys unavailable"):
        users.verify(issuer.issue("u", 60).token)
