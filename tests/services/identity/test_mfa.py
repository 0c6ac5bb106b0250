"""TOTP with real pyotp codes: setup, verify, login, replay, limits, trusted devices, disable."""

import base64
import time
from datetime import timedelta

import jwt
import pyotp
from hostgate.db.models.identity import TrustedDevice
from hostgate.timefmt import utcnow
from sqlmodel import select

from tests.services.identity.helpers import (
    API,
    audit_entries,
    bearer,
    enable_mfa,
    get_user,
    login,
    next_code,
)


async def mfa_challenge(client, username, password):
    response = await login(client, username, password)
    assert response.status_code == 200
    body = await response.get_json()
    assert body["mfaRequired"] is True and body["mfaMethod"] == "totp"
    assert "token" not in body
    assert "Set-Cookie" not in response.headers
    return body["mfaToken"]


async def mfa_login(client, mfa_token, code, trust=False):
    return await client.post(
        f"{API}/auth/login/mfa", json={"mfaToken": mfa_token, "code": code, "trustDevice": trust}
    )


async def test_setup_returns_secret_and_png_qr(client, make_user, kernel):
    await kernel.settings.update({"app.name": "Acme Gate"})
    user = await make_user("mia")
    response = await client.post(f"{API}/profile/mfa/setup", headers=user.headers)
    assert response.status_code == 200
    body = await response.get_json()
    secret = body["secret"]
    assert len(secret) >= 16 and base64.b32decode(secret)
    prefix = "data:image/png;base64,"
    assert body["qrDataUrl"].startswith(prefix)
    assert base64.b64decode(body["qrDataUrl"][len(prefix) :])[:8] == b"\x89PNG\r\n\x1a\n"
    parsed = pyotp.parse_uri(body["otpauthUrl"])
    assert parsed.issuer == "Acme Gate" and parsed.name == "mia" and parsed.secret == secret
    # not enabled until verified; stored encrypted, never in plain text
    status = await client.get(f"{API}/profile/mfa/status", headers=user.headers)
    assert await status.get_json() == {"enabled": False}
    stored = await get_user(kernel, user.id)
    assert stored.mfa_pending_secret.startswith("hg1:") and secret not in stored.mfa_pending_secret
    assert stored.mfa_secret is None


async def test_verify_enables_and_wrong_code_is_400(client, make_user, kernel):
    user = await make_user("ned")
    secret = (
        await (await client.post(f"{API}/profile/mfa/setup", headers=user.headers)).get_json()
    )["secret"]
    totp = pyotp.TOTP(secret)
    wrong = await client.post(
        f"{API}/profile/mfa/verify",
        headers=user.headers,
        json={"token": "000000" if totp.now() != "000000" else "111111"},
    )
    assert wrong.status_code == 400 and (await wrong.get_json())["code"] == "invalid_code"
    ok = await client.post(
        f"{API}/profile/mfa/verify", headers=user.headers, json={"token": totp.now()}
    )
    assert ok.status_code == 200 and await ok.get_json() == {"ok": True}
    status = await client.get(f"{API}/profile/mfa/status", headers=user.headers)
    assert await status.get_json() == {"enabled": True}
    stored = await get_user(kernel, user.id)
    assert stored.mfa_secret.startswith("hg1:") and stored.mfa_pending_secret is None
    assert (await audit_entries(kernel, "auth.mfa_enabled"))[0].user_id == user.id
    again = await client.post(f"{API}/profile/mfa/setup", headers=user.headers)
    assert again.status_code == 409


async def test_verify_without_setup_is_409(client, make_user):
    user = await make_user("oz")
    response = await client.post(
        f"{API}/profile/mfa/verify", headers=user.headers, json={"token": "123456"}
    )
    assert response.status_code == 409
    assert (await response.get_json())["code"] == "mfa_not_started"


async def test_login_with_mfa_and_replay_refusal(client, make_user, kernel):
    user = await make_user("pia")
    totp = await enable_mfa(client, user.token)

    mfa_token = await mfa_challenge(client, "pia", user.password)
    code = next_code(totp)
    response = await mfa_login(client, mfa_token, code)
    assert response.status_code == 200
    body = await response.get_json()
    assert body["user"]["id"] == user.id and body["user"]["username"] == "pia"
    assert "hostgate_token=" in response.headers["Set-Cookie"]
    assert (await client.get(f"{API}/auth/me", headers=bearer(body["token"]))).status_code == 200
    event = (await audit_entries(kernel, "auth.login"))[-1]
    assert event.details == {"method": "local", "mfa": True, "secondFactor": "totp"}

    # the mfaToken is single use
    reused = await mfa_login(client, mfa_token, next_code(totp))
    assert reused.status_code == 401 and (await reused.get_json())["code"] == "invalid_mfa_token"

    # the same code is refused the second time, even with a fresh mfaToken
    second = await mfa_challenge(client, "pia", user.password)
    replay = await mfa_login(client, second, code)
    assert replay.status_code == 401 and (await replay.get_json())["code"] == "invalid_code"
    # an older step is refused too
    older = await mfa_login(client, second, totp.now())
    assert older.status_code == 401


async def test_mfa_token_expiry_and_forgery(client, make_user, kernel):
    user = await make_user("quy")
    totp = await enable_mfa(client, user.token)
    now = int(time.time())
    expired = jwt.encode(
        {"sub": user.id, "typ": "mfa", "iat": now - 400, "exp": now - 100, "jti": "x"},
        kernel.identity.signing_key,
        algorithm="HS256",
    )
    response = await mfa_login(client, expired, next_code(totp))
    assert (
        response.status_code == 401 and (await response.get_json())["code"] == "invalid_mfa_token"
    )
    forged = jwt.encode(
        {"sub": user.id, "typ": "mfa", "iat": now, "exp": now + 300, "jti": "y"},
        "not-the-signing-key-of-this-instance-at-all",
        algorithm="HS256",
    )
    assert (await mfa_login(client, forged, next_code(totp))).status_code == 401
    # a session token is not an mfaToken
    assert (await mfa_login(client, user.token, next_code(totp))).status_code == 401


async def test_mfa_login_limit_is_five_per_user(client, make_user):
    user = await make_user("rex")
    totp = await enable_mfa(client, user.token)
    mfa_token = await mfa_challenge(client, "rex", user.password)
    good = next_code(totp)
    bad = "000000" if good != "000000" else "111111"
    for _ in range(5):
        response = await mfa_login(client, mfa_token, bad)
        assert response.status_code == 401
    limited = await mfa_login(client, mfa_token, good)
    assert limited.status_code == 429
    assert int(limited.headers["Retry-After"]) > 0
    assert (await limited.get_json())["error"] == "Too many MFA attempts. Please try again later."


async def test_mfa_verify_limit_is_five_per_user(client, make_user):
    user = await make_user("sam")
    secret = (
        await (await client.post(f"{API}/profile/mfa/setup", headers=user.headers)).get_json()
    )["secret"]
    good = pyotp.TOTP(secret).now()
    bad = "000000" if good != "000000" else "111111"
    for _ in range(5):
        response = await client.post(
            f"{API}/profile/mfa/verify", headers=user.headers, json={"token": bad}
        )
        assert response.status_code == 400
    limited = await client.post(
        f"{API}/profile/mfa/verify", headers=user.headers, json={"token": good}
    )
    assert limited.status_code == 429 and "Retry-After" in limited.headers


async def test_trusted_device_skips_totp(app, make_user, kernel):
    user = await make_user("tia")
    setup_client = app.test_client()
    totp = await enable_mfa(setup_client, user.token)

    browser = app.test_client()
    mfa_token = await mfa_challenge(browser, "tia", user.password)
    response = await mfa_login(browser, mfa_token, next_code(totp), trust=True)
    assert response.status_code == 200
    cookies = response.headers.getlist("Set-Cookie")
    device_cookie = next(c for c in cookies if c.startswith("hostgate_trusted_device="))
    assert "HttpOnly" in device_cookie and "Max-Age=2592000" in device_cookie
    value = device_cookie.split(";")[0].split("=", 1)[1]
    async with kernel.db.session() as session:
        rows = (await session.exec(select(TrustedDevice))).all()
    assert len(rows) == 1 and rows[0].user_id == user.id and rows[0].token_hash != value
    assert rows[0].expires_at - rows[0].created_at == timedelta(days=30)

    # the same browser now logs in with the password alone
    trusted = await login(browser, "tia", user.password)
    body = await trusted.get_json()
    assert trusted.status_code == 200 and "token" in body and "mfaRequired" not in body
    assert (await audit_entries(kernel, "auth.login"))[-1].details["trustedDevice"] is True

    # another browser still needs the code
    await mfa_challenge(app.test_client(), "tia", user.password)

    # the cookie does not help another user
    other = await make_user("ugo")
    other_totp = await enable_mfa(app.test_client(), other.token)
    assert other_totp
    await mfa_challenge(browser, "ugo", other.password)

    # an expired device is no longer trusted
    async with kernel.db.session() as session:
        row = (await session.exec(select(TrustedDevice))).first()
        row.expires_at = utcnow() - timedelta(seconds=1)
        session.add(row)
        await session.commit()
    await mfa_challenge(browser, "tia", user.password)


async def test_disable_needs_the_password(client, make_user, kernel):
    user = await make_user("vic")
    await enable_mfa(client, user.token)
    wrong = await client.post(
        f"{API}/profile/mfa/disable", headers=user.headers, json={"password": "wrong-password"}
    )
    assert wrong.status_code == 400 and (await wrong.get_json())["error"] == "Incorrect password"
    assert (await get_user(kernel, user.id)).mfa_enabled is True
    ok = await client.post(
        f"{API}/profile/mfa/disable", headers=user.headers, json={"password": user.password}
    )
    assert ok.status_code == 200 and await ok.get_json() == {"ok": True}
    stored = await get_user(kernel, user.id)
    assert stored.mfa_enabled is False and stored.mfa_secret is None
    assert (await audit_entries(kernel, "auth.mfa_disabled"))[0].user_id == user.id
    plain = await login(client, "vic", user.password)
    assert "token" in await plain.get_json()
