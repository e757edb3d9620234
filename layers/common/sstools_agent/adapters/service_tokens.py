"""The agent's service token: minted with a KMS key, published as JWKS, fetched by the chat.

- `KmsJwtIssuer` (REST API function): signs RS256 JWTs with an asymmetric KMS key
  (`RSASSA_PKCS1_V1_5_SHA_256` is RS256), so the private key never leaves KMS; `jwks()` publishes
  the public keys. Several key ids may be configured: the first signs, all are published, so a key
  can be rotated without refusing tokens still in flight.
- `ServiceTokenClient` (chat function): presents the client credentials to
  `POST /api/auth/service-token` and keeps the token until shortly before it expires.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import httpx
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
from cryptography.hazmat.primitives.serialization import load_der_public_key

from sstools_agent.adapters.aws_session import aws_session
from sstools_agent.domain.identity import (
    DEFAULT_SERVICE_TOKEN_TTL_S,
    SERVICE_SUBJECT,
    SERVICE_TOKEN_CLAIMS,
    ClientCredentials,
    MintedToken,
    compact_jws,
    public_jwk,
    token_claims,
)

KMS_RS256: Final = "RSASSA_PKCS1_V1_5_SHA_256"
REFRESH_BEFORE_EXPIRY_S: Final = 60


class ServiceTokenUnavailable(Exception):
    """The chat could not obtain a service token (the token endpoint refused or was down)."""


class KmsJwtIssuer:
    """RS256 service tokens signed by KMS; the public half served as JWKS."""

    def __init__(
        self,
        key_ids: Sequence[str],
        *,
        issuer: str,
        audience: str,
        region: str,
        endpoint_url: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not key_ids:
            raise ValueError("at least one KMS key id is needed to sign service tokens")
        self._key_ids = tuple(key_ids)
        self._issuer = issuer
        self._audience = audience
        self._clock = clock
        self._kms = aws_session(region).client("kms", endpoint_url=endpoint_url)
        self._public: dict[str, tuple[str, RSAPublicKey]] = {}

    def _public_key(self, key_id: str) -> tuple[str, RSAPublicKey]:
        """The key's stable id (its KMS key id, whatever alias named it) and its public key."""
        if key_id not in self._public:
            response = self._kms.get_public_key(KeyId=key_id)
            key = load_der_public_key(response["PublicKey"])
            if not isinstance(key, RSAPublicKey):
                raise ValueError(f"KMS key {key_id} is not an RSA key")
            self._public[key_id] = (str(response["KeyId"]).rsplit("/", 1)[-1], key)
        return self._public[key_id]

    def service_token(self, ttl_s: int = DEFAULT_SERVICE_TOKEN_TTL_S) -> MintedToken:
        """The agent service's token, valid for `ttl_s` seconds."""
        signing_key = self._key_ids[0]
        kid, _ = self._public_key(signing_key)
        now = int(self._clock())
        payload = token_claims(
            SERVICE_SUBJECT,
            ttl_s,
            issuer=self._issuer,
            audience=self._audience,
            now=now,
            claims=SERVICE_TOKEN_CLAIMS,
        )

        def sign(message: bytes) -> bytes:
            response = self._kms.sign(
                KeyId=signing_key,
                Message=message,
                MessageType="RAW",
                SigningAlgorithm=KMS_RS256,
            )
            return bytes(response["Signature"])

        token = compact_jws({"alg": "RS256", "typ": "JWT", "kid": kid}, payload, sign)
        return MintedToken(token, now + ttl_s)

    def jwks(self) -> dict[str, Any]:
        """The JWKS document of every configured key."""
        return {"keys": [public_jwk(key, kid) for kid, key in map(self._public_key, self._key_ids)]}


class ServiceTokenClient:
    """The chat's service-token source: fetched from the REST API, cached until near expiry."""

    def __init__(
        self,
        token_url: Callable[[], str],
        credentials: Callable[[], ClientCredentials],
        *,
        timeout_s: float = 10.0,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._token_url = token_url
        self._credentials = credentials
        self._timeout_s = timeout_s
        self._transport = transport
        self._clock = clock
        self._current: MintedToken | None = None
        self._lock = asyncio.Lock()

    def renew_after_restore(self) -> None:
        """Forgets the cached token: one token minted before a SnapStart snapshot would be
        shared by every environment restored from it (and may have expired meanwhile)."""
        self._current = None

    def _fresh(self) -> bool:
        current = self._current
        return current is not None and (
            current.expires_at - self._clock() > REFRESH_BEFORE_EXPIRY_S
        )

    async def __call__(self) -> str:
        """A service token valid for at least another minute."""
        if not self._fresh():
            async with self._lock:  # one fetch, however many turns start at once
                if not self._fresh():
                    self._current = await self._fetch()
        assert self._current is not None  # noqa: S101 (set just above)
        return self._current.token

    async def _fetch(self) -> MintedToken:
        credentials = await asyncio.to_thread(self._credentials)
        url = await asyncio.to_thread(self._token_url)
        try:
            async with httpx.AsyncClient(
                timeout=self._timeout_s, transport=self._transport
            ) as client:
                response = await client.post(
                    url,
                    json={
                        "client_id": credentials.client_id,
                        "client_secret": credentials.client_secret,
                    },
                )
        except httpx.HTTPError as error:
            raise ServiceTokenUnavailable(f"token endpoint unreachable: {error}") from None
        if response.status_code != 200:
            raise ServiceTokenUnavailable(
                f"token endpoint answered {response.status_code}: {response.text[:200]}"
            )
        try:
            body = response.json()
            return MintedToken(str(body["access_token"]), int(body["expires_at"]))
        except (ValueError, KeyError, TypeError) as error:
            raise ServiceTokenUnavailable(f"token endpoint answered no token: {error}") from None


ServiceTokenSource = Callable[[], Awaitable[str]]
"""What the chat needs: an awaitable that yields a valid service token."""
