"""User JWT verification and service JWT minting (PyJWT; RS256 via JWKS or HS256)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization

from sstools_agent.domain.identity import (
    SERVICE_SUBJECT,
    AuthenticationError,
    JwksKeys,
    JwtIssuer,
    StaticKey,
    UserTokenVerifier,
    public_jwk,
)
from sstools_agent.domain.roles import Role

ISSUER, AUDIENCE, SECRET = "ss-tools", "ss-tools-agent", "s" * 48


@pytest.fixture
def rs_issuer(rsa_private_key):
    return JwtIssuer(
        algorithm="RS256",
        signing_key=rsa_private_key,
        issuer=ISSUER,
        audience=AUDIENCE,
        key_id="k1",
    )


@pytest.fixture
def rs_verifier(rsa_private_key):
    jwks = {"keys": [public_jwk(rsa_private_key.public_key(), "k1")]}
    return UserTokenVerifier(
        algorithm="RS256", keys=JwksKeys(jwks), issuer=ISSUER, audience=AUDIENCE
    )


@pytest.fixture
def hs_issuer():
    return JwtIssuer(algorithm="HS256", signing_key=SECRET, issuer=ISSUER, audience=AUDIENCE)


@pytest.fixture
def hs_verifier():
    return UserTokenVerifier(
        algorithm="HS256", keys=StaticKey(SECRET), issuer=ISSUER, audience=AUDIENCE
    )


def test_an_rs256_user_token_becomes_a_principal(rs_issuer, rs_verifier):
    minted = rs_issuer.issue("ivanova", 300, {"roles": ["analyst", "engineer"]})
    principal = rs_verifier.verify(minted.token)
    assert principal.subject == "ivanova"
    assert principal.role is Role.ENGINEER
    assert principal.roles == ("analyst", "engineer")
    assert principal.token == minted.token
    assert principal.expires_at == minted.expires_at


def test_an_hs256_user_token_becomes_a_principal(hs_issuer, hs_verifier):
    principal = hs_verifier.verify(hs_issuer.issue("petrov", 60, {"roles": "admin"}).token)
    assert principal.role is Role.ADMIN


@pytest.mark.parametrize(
    "claim", [5, 0, True, False, 1.5, {"admin": True}, ["admin", 1], [["admin"]], [None]]
)
def test_a_malformed_roles_claim_is_an_authentication_failure(hs_issuer, hs_verifier, claim):
    token = hs_issuer.issue("mallory", 60, {"roles": claim}).token
    with pytest.raises(AuthenticationError, match="malformed roles claim"):
        hs_verifier.verify(token)


@pytest.mark.parametrize(
    ("claim", "roles"), [(None, ()), ([], ()), ("admin", ("admin",)), (["admin"], ("admin",))]
)
def test_absent_one_or_several_roles_are_read_as_such(hs_issuer, hs_verifier, claim, roles):
    extra = {} if claim is None else {"roles": claim}
    assert hs_verifier.verify(hs_issuer.issue("u", 60, extra).token).roles == roles


@pytest.mark.parametrize(
    ("claim", "groups"),
    [(None, ()), ("sre", ("sre",)), (["sre", "contractors"], ("sre", "contractors"))],
)
def test_the_groups_a_token_names_are_read(hs_issuer, hs_verifier, claim, groups):
    extra = {"roles": "engineer"} | ({} if claim is None else {"groups": claim})
    assert hs_verifier.verify(hs_issuer.issue("u", 60, extra).token).groups == groups


def test_a_malformed_groups_claim_is_an_authentication_failure(hs_issuer, hs_verifier):
    token = hs_issuer.issue("mallory", 60, {"roles": "admin", "groups": {"sre": True}}).token
    with pytest.raises(AuthenticationError, match="malformed groups claim"):
        hs_verifier.verify(token)


def test_unknown_roles_give_no_role(hs_issuer, hs_verifier):
    principal = hs_verifier.verify(hs_issuer.issue("x", 60, {"roles": ["superuser"]}).token)
    assert principal.role is None


def _unsigned(claims: dict[str, Any]) -> str:
    def part(data: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()

    return f"{part({'alg': 'none', 'typ': 'JWT'})}.{part(claims)}."


def _claims(**changes) -> dict[str, Any]:
    now = int(time.time())
    claims = {"sub": "u", "iss": ISSUER, "aud": AUDIENCE, "exp": now + 60, "roles": ["admin"]}
    return claims | changes


@pytest.mark.parametrize("verifier_name", ["rs_verifier", "hs_verifier"])
def test_alg_none_is_refused(request, verifier_name):
    verifier = request.getfixturevalue(verifier_name)
    with pytest.raises(AuthenticationError):
        verifier.verify(_unsigned(_claims()))


def _hs256_signed_with(key: bytes, claims: dict[str, Any]) -> str:
    """A token signed by hand, as an attacker would, HS256 with `key` as the secret."""
    header = base64.urlsafe_b64encode(b'{"alg":"HS256","typ":"JWT","kid":"k1"}').rstrip(b"=")
    body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    digest = hmac.new(key, header + b"." + body, hashlib.sha256).digest()
    signature = base64.urlsafe_b64encode(digest).rstrip(b"=")
    return (header + b"." + body + b"." + signature).decode()


def test_algorithm_confusion_is_refused(rsa_private_key, rs_verifier):
    # An attacker signs HS256 with the RSA *public* key, hoping it is used as an HMAC secret
    public_pem = rsa_private_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    forged = _hs256_signed_with(public_pem, _claims())
    with pytest.raises(AuthenticationError, match="alg value is not allowed"):
        rs_verifier.verify(forged)
    static = UserTokenVerifier(
        algorithm="RS256", keys=StaticKey(public_pem), issuer=ISSUER, audience=AUDIENCE
    )
    with pytest.raises(AuthenticationError, match="alg value is not allowed"):
        static.verify(forged)


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"exp": int(time.time()) - 3600}, "expired"),
        ({"iss": "someone-else"}, "(?i)issuer"),
        ({"aud": "another-service"}, "(?i)audience"),
    ],
)
def test_expired_foreign_issuer_and_audience_are_refused(hs_verifier, changes, reason):
    token = jwt.encode(_claims(**changes), SECRET, algorithm="HS256")
    with pytest.raises(AuthenticationError, match=reason):
        hs_verifier.verify(token)


def test_missing_claims_and_bad_signatures_are_refused(hs_verifier):
    claims = _claims()
    del claims["sub"]
    with pytest.raises(AuthenticationError, match="sub"):
        hs_verifier.verify(jwt.encode(claims, SECRET, algorithm="HS256"))
    with pytest.raises(AuthenticationError, match="Signature"):
        hs_verifier.verify(jwt.encode(_claims(), "another-secret-" * 4, algorithm="HS256"))
    with pytest.raises(AuthenticationError, match="missing"):
        hs_verifier.verify("")
    with pytest.raises(AuthenticationError):
        hs_verifier.verify("not.a.jwt")


def test_an_unknown_kid_is_refused(rsa_private_key, rs_verifier):
    other = JwtIssuer(
        algorithm="RS256",
        signing_key=rsa_private_key,
        issuer=ISSUER,
        audience=AUDIENCE,
        key_id="rotated-away",
    )
    with pytest.raises(AuthenticationError, match="kid"):
        rs_verifier.verify(other.issue("u", 60).token)


def test_the_service_token_is_short_lived_and_verifiable(rs_issuer, rs_verifier):
    minted = rs_issuer.service_token(ttl_s=120)
    principal = rs_verifier.verify(minted.token)
    assert principal.subject == SERVICE_SUBJECT
    assert 0 < minted.expires_at - time.time() <= 120
    assert jwt.get_unverified_header(minted.token)["kid"] == "k1"
