"""ID token checks against the real provider's keys: signature, audience, nonce, algorithm."""

from __future__ import annotations

import asyncio
import base64
import json
import secrets
from dataclasses import replace
from typing import Any

import pytest
from authlib.jose import JsonWebKey, jwt
from hostgate_oidc.provider import OidcClient, OidcError, OidcSettings

from testsupport.oidc import OidcProvider, RegisteredClient

pytestmark = pytest.mark.peer("oidc-provider-mock")


def settings_for(provider: OidcProvider, client: RegisteredClient) -> OidcSettings:
    return OidcSettings(
        issuer=provider.issuer,
        client_id=client.client_id,
        client_secret=client.client_secret,
        redirect_uri=client.redirect_uri,
        ca_cert=provider.ca_pem,
    )


async def real_id_token(
    provider: OidcProvider, client: RegisteredClient
) -> tuple[OidcClient, Any, str, str]:
    oidc = OidcClient(settings_for(provider, client), {})
    metadata = await oidc.metadata()
    nonce, verifier = secrets.token_urlsafe(16), secrets.token_urlsafe(48)
    login = oidc.login_request(metadata, client.redirect_uri, "st", nonce, verifier)
    params = await asyncio.to_thread(provider.sign_in, login.url, "sub-token-test")
    tokens = await oidc.exchange_code(metadata, params["code"], verifier, client.redirect_uri)
    return oidc, metadata, str(tokens["id_token"]), nonce


def b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).rstrip(b"=").decode()


def parts(token: str) -> tuple[dict[str, Any], dict[str, Any], str]:
    header, payload, signature = token.split(".")
    pad = lambda s: s + "=" * (-len(s) % 4)  # noqa: E731
    return (
        json.loads(base64.urlsafe_b64decode(pad(header))),
        json.loads(base64.urlsafe_b64decode(pad(payload))),
        signature,
    )


async def test_a_genuine_token_passes(oidc_provider, registration):
    oidc, metadata, token, nonce = await real_id_token(oidc_provider, registration)
    claims = await oidc.validate_id_token(metadata, token, nonce)
    assert claims["sub"] == "sub-token-test"
    assert claims["iss"] == oidc_provider.issuer


async def test_tampered_claims_fail_the_signature(oidc_provider, registration):
    oidc, metadata, token, nonce = await real_id_token(oidc_provider, registration)
    header, payload, signature = parts(token)
    payload["sub"] = "someone-else"
    forged = f"{b64(header)}.{b64(payload)}.{signature}"
    with pytest.raises(OidcError) as caught:
        await oidc.validate_id_token(metadata, forged, nonce)
    assert caught.value.reason == "oidc_invalid_id_token"


async def test_a_token_signed_by_another_key_fails(oidc_provider, registration):
    oidc, metadata, token, nonce = await real_id_token(oidc_provider, registration)
    header, payload, _ = parts(token)
    foreign = JsonWebKey.generate_key("RSA", 2048, is_private=True)
    forged = jwt.encode({"alg": "RS256", "kid": header.get("kid")}, payload, foreign).decode()
    with pytest.raises(OidcError) as caught:
        await oidc.validate_id_token(metadata, forged, nonce)
    assert caught.value.reason == "oidc_invalid_id_token"


async def test_an_unsigned_token_fails(oidc_provider, registration):
    oidc, metadata, token, nonce = await real_id_token(oidc_provider, registration)
    _, payload, _ = parts(token)
    forged = f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64(payload)}."
    with pytest.raises(OidcError):
        await oidc.validate_id_token(metadata, forged, nonce)


async def test_another_audience_fails(oidc_provider, registration):
    oidc, metadata, token, nonce = await real_id_token(oidc_provider, registration)
    other = OidcClient(replace(oidc.settings, client_id="some-other-client"), {})
    with pytest.raises(OidcError) as caught:
        await other.validate_id_token(metadata, token, nonce)
    assert caught.value.reason == "oidc_invalid_id_token"
    assert "aud" in str(caught.value)


async def test_another_nonce_fails(oidc_provider, registration):
    oidc, metadata, token, _ = await real_id_token(oidc_provider, registration)
    with pytest.raises(OidcError) as caught:
        await oidc.validate_id_token(metadata, token, "not-the-nonce")
    assert caught.value.reason == "oidc_nonce_mismatch"


async def test_plain_http_issuers_are_refused():
    oidc = OidcClient(
        OidcSettings(issuer="http://idp.example.org", client_id="x", client_secret=""), {}
    )
    with pytest.raises(OidcError) as caught:
        await oidc.metadata()
    assert "https" in str(caught.value)


async def test_an_expired_token_fails(oidc_provider, registration, monkeypatch):
    import time as real_time
    from types import SimpleNamespace

    import authlib.oidc.core.claims as claims_module

    oidc, metadata, token, nonce = await real_id_token(oidc_provider, registration)
    _, payload, _ = parts(token)
    later = payload["exp"] + 3600
    monkeypatch.setattr(
        claims_module,
        "time",
        SimpleNamespace(time=lambda: later, **{"monotonic": real_time.monotonic}),
    )
    with pytest.raises(OidcError) as caught:
        await oidc.validate_id_token(metadata, token, nonce)
    assert caught.value.reason == "oidc_token_expired"
