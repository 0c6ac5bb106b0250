"""OIDC login against a real provider process (oidc-provider-mock over HTTPS)."""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urlencode, urlsplit

import pytest
from hostgate.db.models.identity import User
from sqlmodel import select

pytestmark = pytest.mark.peer("oidc-provider-mock")


def sso_error(answer: Any) -> str:
    assert answer.status_code == 302
    location = answer.headers["Location"]
    assert location.startswith("/?sso_error="), location
    return unquote(location.split("=", 1)[1])


async def audit_events(kernel: Any, event_type: str) -> list[Any]:
    from hostgate.db.models.audit import AuditEntry

    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == event_type)
        return list((await session.exec(query)).all())


def session_cookie(answer: Any) -> str | None:
    for header in answer.headers.get_all("Set-Cookie"):
        if header.startswith("hostgate_token="):
            return header.split(";", 1)[0].split("=", 1)[1] or None
    return None


async def test_login_provisions_user_and_sets_the_cookie(flow, kernel, oidc_provider, oidc_on):
    oidc_provider.set_user(
        "sub-alice", preferred_username="Alice", name="Alice Liddell", email="alice@example.org"
    )
    answer = await flow.login("sub-alice")
    assert answer.status_code == 302
    assert answer.headers["Location"] == "/?sso=success"
    cookie = next(
        h for h in answer.headers.get_all("Set-Cookie") if h.startswith("hostgate_token=")
    )
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    token = session_cookie(answer)
    assert token
    me = await flow.client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert me.status_code == 200
    assert (await me.get_json())["user"]["username"] == "alice"
    async with kernel.db.session() as session:
        user = (await session.exec(select(User).where(User.provider_id == "sub-alice"))).one()
    assert user.auth_provider == "oidc"
    assert user.display_name == "Alice Liddell"
    assert user.email == "alice@example.org"
    assert user.password_hash is None
    logins = await audit_events(kernel, "auth.login")
    assert logins[-1].details["method"] == "oidc"


async def test_the_same_subject_is_the_same_user(flow, kernel, oidc_provider, oidc_on):
    oidc_provider.set_user("sub-bob", preferred_username="bob", email="bob@example.org")
    assert (await flow.login("sub-bob")).headers["Location"] == "/?sso=success"
    oidc_provider.set_user("sub-bob", preferred_username="robert", email="bob@example.org")
    assert (await flow.login("sub-bob")).headers["Location"] == "/?sso=success"
    async with kernel.db.session() as session:
        users = (await session.exec(select(User).where(User.provider_id == "sub-bob"))).all()
    assert [u.username for u in users] == ["bob"]


async def test_authorize_uses_state_nonce_and_pkce(flow, oidc_provider, oidc_on, registration):
    answer = await flow.client.get("/api/v1/auth/oidc/authorize")
    url = (await answer.get_json())["url"]
    assert url.startswith(f"{oidc_provider.issuer}/oauth2/authorize?")
    params = flow.query(url)
    assert params["response_type"] == "code"
    assert params["client_id"] == registration.client_id
    assert params["redirect_uri"] == registration.redirect_uri
    assert "openid" in params["scope"].split()
    assert params["code_challenge_method"] == "S256"
    assert len(params["code_challenge"]) == 43
    assert len(params["state"]) >= 32 and len(params["nonce"]) >= 32
    cookie = answer.headers["Set-Cookie"]
    assert cookie.startswith("hostgate_oidc=")
    assert "HttpOnly" in cookie and "SameSite=Lax" in cookie and "Path=/api/v1/auth/oidc" in cookie
    second = flow.query(await flow.start())
    assert second["state"] != params["state"] and second["nonce"] != params["nonce"]


async def test_forged_state_is_rejected_and_audited(flow, kernel, oidc_provider, oidc_on):
    url = await flow.start()
    params = await flow.sign_in(url, "sub-mallory")
    params["state"] = "forged-" + params["state"][7:]
    answer = await flow.callback(params)
    assert sso_error(answer) == "Invalid or expired login state"
    assert session_cookie(answer) is None
    failed = await audit_events(kernel, "auth.login_failed")
    assert failed[-1].details == {"reason": "invalid_state", "provider": "oidc", "failedCount": 1}


async def test_state_is_single_use(flow, oidc_provider, oidc_on):
    params = await flow.sign_in(await flow.start(), "sub-carol")
    assert (await flow.callback(params)).headers["Location"] == "/?sso=success"
    assert sso_error(await flow.callback(params)) == "Invalid or expired login state"


async def test_state_is_bound_to_the_browser(flow, app, oidc_provider, oidc_on):
    params = await flow.sign_in(await flow.start(), "sub-dave")
    other_browser = app.test_client()
    answer = await flow.callback(params, client=other_browser)
    assert sso_error(answer) == "This login was started in another browser"


async def test_wrong_nonce_is_rejected_and_audited(flow, kernel, oidc_provider, oidc_on):
    url = await flow.start()
    params = flow.query(url)
    params["nonce"] = "an-attacker-chosen-nonce-0123456789abcdef"
    tampered = url.split("?", 1)[0] + "?" + urlencode(params)
    answer = await flow.callback(await flow.sign_in(tampered, "sub-erin"))
    assert sso_error(answer) == "The ID token's nonce does not match"
    assert session_cookie(answer) is None
    failed = await audit_events(kernel, "auth.login_failed")
    assert failed[-1].details["reason"] == "oidc_nonce_mismatch"
    async with kernel.db.session() as session:
        assert (
            await session.exec(select(User).where(User.provider_id == "sub-erin"))
        ).first() is None


async def test_wrong_client_secret_is_refused(flow, kernel, oidc_provider, oidc_on):
    await kernel.settings.update({"auth.oidc_client_secret": "not-the-secret"})
    answer = await flow.login("sub-frank")
    assert sso_error(answer).startswith("The identity provider refused the code exchange")
    failed = await audit_events(kernel, "auth.login_failed")
    assert failed[-1].details["reason"] == "oidc_token_refused"


async def test_provider_error_is_passed_on(flow, oidc_on):
    answer = await flow.callback(
        {"error": "access_denied", "error_description": "The user said no", "state": "x"}
    )
    assert sso_error(answer) == "The identity provider said: The user said no"


async def test_missing_parameters(flow, oidc_on):
    assert sso_error(await flow.callback({})) == "The callback is missing code or state"


@pytest.mark.parametrize(
    "change",
    [
        {"code": "c" * 4097},
        {"state": "s" * 4097},
        {"error": "access_denied", "error_description": "d" * 4097},
        {"padding": "p" * 8200},
    ],
    ids=["code", "state", "error_description", "whole query"],
)
async def test_an_over_long_callback_is_refused_before_the_provider_is_asked(
    flow, kernel, oidc_provider, oidc_on, change
):
    oidc_provider.set_user("sub-lena", preferred_username="lena")
    params = await flow.sign_in(await flow.start(), "sub-lena")
    answer = await flow.callback({**params, **change})
    assert sso_error(answer) == "The callback's parameters are too long"
    assert session_cookie(answer) is None
    failed = await audit_events(kernel, "auth.login_failed")
    assert failed[-1].details["reason"] == "callback_too_long"
    # the pending state was not even looked up (it is single-use), so the code was not
    # sent to the provider: the genuine callback still logs in
    assert (await flow.callback(params)).headers["Location"] == "/?sso=success"


async def test_values_at_the_limit_are_read(flow, oidc_on):
    # each value at most 4096 characters, and the whole query (8,116 here) at most 8 KiB
    answer = await flow.callback({"code": "c" * 4096, "state": "s" * 4008})
    assert sso_error(answer) == "Invalid or expired login state"
    answer = await flow.callback({"error": "access_denied", "error_description": "d" * 4096})
    assert sso_error(answer).startswith("The identity provider said: ddd")


async def test_disabled(flow, kernel, oidc_on):
    await kernel.settings.update({"auth.oidc_enabled": False})
    assert sso_error(await flow.callback({"code": "x", "state": "y"})) == "OIDC login is disabled"
    answer = await flow.client.get("/api/v1/auth/oidc/authorize")
    assert answer.status_code == 403
    assert (await answer.get_json())["code"] == "oidc_disabled"


async def test_untrusted_certificate_is_refused(flow, kernel, oidc_on):
    await kernel.settings.update({"auth.oidc_ca_cert": ""})
    answer = await flow.client.get("/api/v1/auth/oidc/authorize")
    assert answer.status_code == 502
    assert "certificate" in (await answer.get_json())["error"].lower()


async def test_verification_can_be_turned_off(flow, kernel, oidc_provider, oidc_on):
    await kernel.settings.update({"auth.oidc_ca_cert": "", "auth.oidc_tls_verify": False})
    assert (await flow.login("sub-gina")).headers["Location"] == "/?sso=success"


async def test_role_from_a_claim(flow, kernel, oidc_provider, oidc_on):
    await kernel.settings.update(
        {"auth.oidc_role_claim": "groups", "auth.oidc_role_map": '{"gw-admins": "admin"}'}
    )
    oidc_provider.set_user("sub-hank", preferred_username="hank", groups=["staff", "gw-admins"])
    oidc_provider.set_user("sub-ivy", preferred_username="ivy", groups=["staff"])
    roles = {}
    for sub in ("sub-hank", "sub-ivy"):
        token = session_cookie(await flow.login(sub))
        me = await flow.client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {token}"})
        user = (await me.get_json())["user"]
        roles[user["username"]] = user["role"]
    assert roles == {"hank": "admin", "ivy": "user"}


async def test_client_secret_is_encrypted_and_masked(client, kernel, admin, oidc_on):
    from hostgate.db.models.settings import SettingValue

    secret = oidc_on["auth.oidc_client_secret"]
    everything = await (await client.get("/api/v1/settings", headers=admin.headers)).get_json()
    assert everything["settings"]["auth.oidc_client_secret"] not in ("", secret)
    async with kernel.db.session() as session:
        row = await session.get(SettingValue, "auth.oidc_client_secret")
    assert row is not None and secret not in str(row.value)


async def test_redirect_uri_defaults_to_this_host(flow, kernel, oidc_on):
    await kernel.settings.update({"auth.oidc_redirect_uri": ""})
    params = flow.query(await flow.start())
    assert urlsplit(params["redirect_uri"]).path == "/api/v1/auth/oidc/callback"
