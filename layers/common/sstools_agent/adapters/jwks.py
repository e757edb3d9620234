"""JWKS over HTTP: verification keys fetched from the identity provider and cached."""

from __future__ import annotations

from typing import Any, Final

import jwt

from sstools_agent.domain.identity import AuthenticationError

JWKS_CACHE_LIFESPAN_S: Final = 300


class JwksUrlKeys:
    """A `KeyResolver` backed by a JWKS URL (PyJWKClient: caches keys, refetches unknown kids)."""

    def __init__(self, url: str, *, timeout_s: float = 5.0) -> None:
        self._client = jwt.PyJWKClient(
            url, cache_keys=True, lifespan=JWKS_CACHE_LIFESPAN_S, timeout=int(max(timeout_s, 1))
        )

    def key_for(self, token: str) -> Any:
        """The key named by the token's `kid`, fetched from the JWKS when not cached."""
        try:
            return self._client.get_signing_key_from_jwt(token).key
        except jwt.PyJWKClientConnectionError as error:
            raise AuthenticationError(f"signing keys unavailable: {error}") from None
        except jwt.PyJWTError as error:
            raise AuthenticationError(f"no usable signing key: {error}") from None
