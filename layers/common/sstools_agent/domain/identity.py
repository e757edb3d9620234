"""Identities: the user's JWT verified into a principal, and JWTs minted for the agent service.

Verification is strict: the configured algorithm only (so "none" and RS256/HS256 confusion are
refused), signature, expiry, issuer and audience checked, subject required. Keys come from a
`KeyResolver`: a static key (HS256 secret or RSA public key) or a JWKS document; fetching a JWKS
over HTTP is an adapter's job (`sstools_agent.adapters.jwks`).
"""

from __future__ import annotations

import hmac
import json
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Protocol

import jwt
from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey

from sstools_agent.domain.errors import ErrorCode
from sstools_agent.domain.roles import Role

JwtAlgorithm = Literal["RS256", "HS256"]
DEFAULT_LEEWAY_S: Final = 30
SERVICE_SUBJECT: Final = "ss-tools-agent"
SERVICE_TOKEN_CLAIMS: Final = {"token_use": "service"}
DEFAULT_SERVICE_TOKEN_TTL_S: Final = 300


class AuthenticationError(Exception):
    """A token that does not prove who is calling: a 401 before any work is done."""

    code: Final = ErrorCode.UNAUTHORIZED

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class KeyResolver(Protocol):
    """Finds the key that verifies a token (by its `kid` header, when keys rotate)."""

    def key_for(self, token: str) -> Any:
        """The verification key for `token`; raises AuthenticationError when there is none."""
        ...


@dataclass(frozen=True, slots=True)
class StaticKey:
    """One fixed key: an HS256 secret, or an RSA public key (PEM or key object)."""

    key: Any

    def key_for(self, token: str) -> Any:
        """Always the same key."""
        return self.key


def public_jwk(public_key: RSAPublicKey, key_id: str) -> dict[str, Any]:
    """One public key as a JWK, for a `/.well-known/jwks.json` document."""
    jwk: dict[str, Any] = jwt.algorithms.RSAAlgorithm.to_jwk(public_key, as_dict=True)
    return {**jwk, "kid": key_id, "use": "sig", "alg": "RS256"}


class JwksKeys:
    """Keys from a JWKS document, chosen by the token's `kid`."""

    def __init__(self, jwks: Mapping[str, Any]) -> None:
        self._keys = {key.key_id: key for key in jwt.PyJWKSet.from_dict(dict(jwks)).keys}

    def key_for(self, token: str) -> Any:
        """The key whose id the token names."""
        try:
            kid = jwt.get_unverified_header(token).get("kid")
        except jwt.PyJWTError as error:
            raise AuthenticationError(f"malformed token: {error}") from None
        key = self._keys.get(kid)
        if key is None:
            raise AuthenticationError(f"no signing key with kid {kid!r}")
        return key.key


@dataclass(frozen=True, slots=True)
class Principal:
    """The verified user behind a request."""

    subject: str
    role: Role | None
    """The most privileged known role in the token; None when it names no ss-tools role."""
    roles: tuple[str, ...]
    token: str
    """The raw JWT, forwarded to the upstream as X-User-JWT."""
    expires_at: int
    groups: tuple[str, ...] = ()
    """The groups the token names (its groups claim), which a policy may name."""


def roles_from_claim(value: object, claim: str = "roles") -> tuple[str, ...]:
    """The names a token's claim holds (its roles, its groups): absent (or null) is none, one
    string is one, a list names several. Anything else (a number, a boolean, an object, a list
    holding non-strings) is a token this service does not understand: AuthenticationError,
    never a guess (an object's keys read as roles would be one)."""
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list) and all(isinstance(role, str) for role in value):
        return tuple(value)
    raise AuthenticationError(f"malformed {claim} claim: expected a string or a list of strings")


class UserTokenVerifier:
    """Verifies user JWTs into principals."""

    def __init__(
        self,
        *,
        algorithm: JwtAlgorithm,
        keys: KeyResolver,
        issuer: str,
        audience: str,
        roles_claim: str = "roles",
        groups_claim: str = "groups",
        leeway_s: int = DEFAULT_LEEWAY_S,
    ) -> None:
        self._algorithm = algorithm
        self._keys = keys
        self._issuer = issuer
        self._audience = audience
        self._roles_claim = roles_claim
        self._groups_claim = groups_claim
        self._leeway_s = leeway_s

    def verify(self, token: str) -> Principal:
        """The principal of a valid token; AuthenticationError with the reason otherwise."""
        if not token:
            raise AuthenticationError("missing token")
        key = self._keys.key_for(token)
        try:
            claims = jwt.decode(
                token,
                key,
                algorithms=[self._algorithm],
                issuer=self._issuer,
                audience=self._audience,
                leeway=self._leeway_s,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise AuthenticationError("token expired") from None
        except jwt.PyJWTError as error:
            raise AuthenticationError(f"invalid token: {error}") from None
        roles = roles_from_claim(claims.get(self._roles_claim))
        return Principal(
            subject=str(claims["sub"]),
            role=Role.highest_of(roles),
            roles=roles,
            token=token,
            expires_at=int(claims["exp"]),
            groups=roles_from_claim(claims.get(self._groups_claim), "groups"),
        )


@dataclass(frozen=True, slots=True)
class MintedToken:
    """A signed JWT and when it stops being valid (epoch seconds)."""

    token: str
    expires_at: int


class TokenIssuer(Protocol):
    """Mints the agent service's own token."""

    def service_token(self, ttl_s: int = DEFAULT_SERVICE_TOKEN_TTL_S) -> MintedToken:
        """A service token valid for `ttl_s` seconds."""
        ...


def token_claims(
    subject: str,
    ttl_s: int,
    *,
    issuer: str,
    audience: str,
    now: int,
    claims: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The registered claims every JWT minted here carries, plus `claims`."""
    return {
        **(claims or {}),
        "sub": subject,
        "iss": issuer,
        "aud": audience,
        "iat": now,
        "exp": now + ttl_s,
        "jti": uuid.uuid4().hex,
    }


def compact_jws(
    header: Mapping[str, Any], payload: Mapping[str, Any], sign: Callable[[bytes], bytes]
) -> str:
    """A JWS in compact serialisation, signed by `sign` (e.g. a KMS key that never leaves KMS)."""

    def part(value: Mapping[str, Any]) -> str:
        raw = json.dumps(value, separators=(",", ":"), sort_keys=True).encode()
        return jwt.utils.base64url_encode(raw).decode()

    signing_input = f"{part(header)}.{part(payload)}"
    signature = jwt.utils.base64url_encode(sign(signing_input.encode())).decode()
    return f"{signing_input}.{signature}"


@dataclass(frozen=True, slots=True)
class ClientCredentials:
    """An agent service's client credentials (kept in Secrets Manager)."""

    client_id: str
    client_secret: str = field(repr=False)

    def matches(self, client_id: str, client_secret: str) -> bool:
        """Whether the presented pair is this one (constant time in the secret)."""
        same_id = hmac.compare_digest(client_id.encode(), self.client_id.encode())
        same_secret = hmac.compare_digest(client_secret.encode(), self.client_secret.encode())
        return same_id and same_secret


class JwtIssuer:
    """Signs JWTs with a key held in memory: demo users' tokens for the local stack and tests."""

    def __init__(
        self,
        *,
        algorithm: JwtAlgorithm,
        signing_key: Any,
        issuer: str,
        audience: str,
        key_id: str | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._algorithm = algorithm
        self._signing_key = signing_key
        self._issuer = issuer
        self._audience = audience
        self._key_id = key_id
        self._clock = clock

    def issue(
        self, subject: str, ttl_s: int, claims: Mapping[str, Any] | None = None
    ) -> MintedToken:
        """A token for `subject`, valid for `ttl_s` seconds, with extra `claims`."""
        now = int(self._clock())
        payload = token_claims(
            subject, ttl_s, issuer=self._issuer, audience=self._audience, now=now, claims=claims
        )
        headers = {"kid": self._key_id} if self._key_id else None
        token = jwt.encode(payload, self._signing_key, algorithm=self._algorithm, headers=headers)
        return MintedToken(token, now + ttl_s)

    def service_token(self, ttl_s: int = DEFAULT_SERVICE_TOKEN_TTL_S) -> MintedToken:
        """A token shaped like the agent's service token (tests of the verifiers)."""
        return self.issue(SERVICE_SUBJECT, ttl_s, SERVICE_TOKEN_CLAIMS)


class InvalidCredentials(Exception):
    """Client credentials that are not the agent's (401)."""
