"""Single sign-on and hostgate's own second step, against the real OIDC provider.

An account that holds TOTP (or a pack's step in a role that requires two-step
verification) gets no session from the callback: the browser app fetches the pending
step once and answers it as after a password.
"""

from __future__ import annotations

from typing import Any

import pytest
from hostgate.db.models.audit import AuditEntry
from sqlmodel import select

from tests.services.identity.helpers import enable_mfa, next_code

pytestmark = pytest.mark.peer("oidc-provider-mock")
API = "/api/v1"


def cookies_set(answer: Any) -> dict[str, str]:
    """Name -> the whole ``Set-Cookie`` header of each cookie the answer sets."""
    return {h.split("=", 1)[0]: h for h in answer.headers.get_all("Set-Cookie")}


def session_token(answer: Any) -> str:
    header = cookies_set(answer)["hostgate_token"]
    return header.split(";", 1)[0].split("=", 1)[1]


async def logins(kernel: Any) -> list[AuditEntry]:
    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == "auth.login")
        return list((await session.exec(query)).all())


async def test_a_totp_holder_gets_the_second_step_not_a_session(
    flow, kernel, oidc_provider, oidc_on
):
    oidc_provider.set_user("sub-erin", preferred_username="erin", email="erin@example.org")
    first = await flow.login("sub-erin")
    assert first.headers["Location"] == "/?sso=success"
    totp = await enable_mfa(flow.client, session_token(first))

    answer = await flow.login("sub-erin")
    assert answer.status_code == 302
    assert answer.headers["Location"] == "/?sso=second_step"  # no token in the URL
    cookies = cookies_set(answer)
    assert "hostgate_token" not in cookies
    step_cookie = cookies["hostgate_oidc_step"]
    assert "HttpOnly" in step_cookie and "Path=/api/v1/auth/oidc" in step_cookie

    pending = await flow.client.post(f"{API}/auth/oidc/second-step")
    assert pending.status_code == 200
    body = await pending.get_json()
    assert body["mfaRequired"] is True and body["mfaMethods"] == ["totp"]
    assert "token" not in body
    # once only
    again = await flow.client.post(f"{API}/auth/oidc/second-step")
    assert again.status_code == 401
    assert (await again.get_json())["code"] == "invalid_mfa_token"

    done = await flow.client.post(
        f"{API}/auth/login/mfa", json={"mfaToken": body["mfaToken"], "code": next_code(totp)}
    )
    assert done.status_code == 200, await done.get_data(as_text=True)
    token = (await done.get_json())["token"]
    me = await flow.client.get(f"{API}/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert (await me.get_json())["user"]["username"] == "erin"
    last = (await logins(kernel))[-1]
    assert last.details["method"] == "oidc" and last.details["provider"] == "oidc"
    assert last.details["mfa"] is True and last.details["secondFactor"] == "totp"


async def test_a_wrong_code_after_sign_on_is_counted(flow, kernel, oidc_provider, oidc_on):
    oidc_provider.set_user("sub-finn", preferred_username="finn", email="finn@example.org")
    totp = await enable_mfa(flow.client, session_token(await flow.login("sub-finn")))
    await flow.login("sub-finn")
    body = await (await flow.client.post(f"{API}/auth/oidc/second-step")).get_json()
    wrong = "000000" if next_code(totp) != "000000" else "111111"
    refused = await flow.client.post(
        f"{API}/auth/login/mfa", json={"mfaToken": body["mfaToken"], "code": wrong}
    )
    assert refused.status_code == 401
    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == "auth.login_failed")
        failed = (await session.exec(query)).all()[-1]
    assert failed.details["reason"] == "invalid_mfa_code"
    assert failed.details["provider"] == "oidc" and failed.details["secondFactor"] == "totp"


async def test_without_a_pending_step_the_fetch_is_refused(flow, oidc_on):
    answer = await flow.client.post(f"{API}/auth/oidc/second-step")
    assert answer.status_code == 401
    assert (await answer.get_json())["code"] == "invalid_mfa_token"


async def test_without_a_second_step_sign_on_is_unchanged(flow, oidc_provider, oidc_on):
    oidc_provider.set_user("sub-gus", preferred_username="gus", email="gus@example.org")
    answer = await flow.login("sub-gus")
    assert answer.headers["Location"] == "/?sso=success"
    assert "hostgate_oidc_step" not in cookies_set(answer)
