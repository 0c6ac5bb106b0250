"""A passkey as the second step after a password, when a role requires two-step verification.

A software authenticator (soft-webauthn) makes real attestations and assertions; the
pending sign-in is the kernel's ``mfaToken``, as for TOTP.
"""

from __future__ import annotations

import time
from typing import Any

import pyotp
import pytest
from hostgate import NotAuthenticated, PermissionDenied
from hostgate.db.models.audit import AuditEntry
from hostgate.services.identity import identity as identity_module
from sqlmodel import select

from testsupport.fixtures import PASSWORD

from .conftest import ORIGIN, Authenticator, Passkeys

pytestmark = pytest.mark.usefixtures("passkeys_on")

API = "/api/v1"


async def require_mfa_for_users(kernel: Any) -> None:
    await kernel.settings.update(
        {"security.require_mfa": "roles", "security.require_mfa_roles": "user"}
    )


async def password_step(client: Any, username: str) -> Any:
    return await client.post(f"{API}/auth/login", json={"username": username, "password": PASSWORD})


async def challenge_for(client: Any, mfa_token: str) -> Any:
    return await client.post(f"{API}/auth/login/passkey/mfa/options", json={"mfaToken": mfa_token})


async def passkey_step(client: Any, mfa_token: str, device: Authenticator) -> tuple[dict, Any]:
    """Answer the pending sign-in with ``device``; the body sent and the answer."""
    options = await challenge_for(client, mfa_token)
    assert options.status_code == 200, await options.get_data(as_text=True)
    issued = await options.get_json()
    body = {
        "mfaToken": mfa_token,
        "challengeId": issued["challengeId"],
        "response": device.get(issued["options"], ORIGIN),
    }
    return body, await client.post(f"{API}/auth/login/passkey/mfa", json=body)


async def audit_details(kernel: Any, event_type: str) -> list[dict[str, Any]]:
    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == event_type)
        return [entry.details for entry in (await session.exec(query)).all()]


async def enable_totp(client: Any, headers: dict[str, str]) -> pyotp.TOTP:
    started = await client.post(f"{API}/profile/mfa/setup", headers=headers)
    totp = pyotp.TOTP((await started.get_json())["secret"])
    verified = await client.post(
        f"{API}/profile/mfa/verify", headers=headers, json={"token": totp.now()}
    )
    assert verified.status_code == 200, await verified.get_json()
    return totp


async def test_a_passkey_satisfies_the_requirement_and_is_the_step_after_the_password(
    client, kernel, make_user, passkeys: Passkeys, authenticator: Authenticator
):
    alice = await make_user("alice")
    await require_mfa_for_users(kernel)
    blocked = await client.get(f"{API}/connections", headers=alice.headers)
    assert (await blocked.get_json())["code"] == "mfa_enrollment_required"
    assert await kernel.logins.second_factors(await kernel.logins.get_user(alice.id)) == []

    # registering a passkey is open while the set-up is due, and it is the set-up
    registered = await passkeys.register(alice, authenticator)
    assert registered.status_code == 200, await registered.get_data(as_text=True)
    assert (await client.get(f"{API}/connections", headers=alice.headers)).status_code == 200
    me = await (await client.get(f"{API}/auth/me", headers=alice.headers)).get_json()
    assert me["user"]["pendingStep"] is None
    user = await kernel.logins.get_user(alice.id)
    assert await kernel.logins.second_factors(user) == ["passkey"]

    # the password alone: a pending sign-in, no session
    first = await password_step(client, "alice")
    assert first.status_code == 200
    pending = await first.get_json()
    assert pending["mfaRequired"] is True
    assert pending["mfaMethods"] == ["passkey"] and pending["mfaMethod"] == "passkey"
    assert "token" not in pending and "Set-Cookie" not in first.headers
    # a TOTP code cannot answer a sign-in that offered only a passkey
    wrong_method = await client.post(
        f"{API}/auth/login/mfa", json={"mfaToken": pending["mfaToken"], "code": "123456"}
    )
    assert wrong_method.status_code == 401
    assert (await wrong_method.get_json())["code"] == "invalid_mfa_token"

    options = await (await challenge_for(client, pending["mfaToken"])).get_json()
    allowed = [c["id"] for c in options["options"]["allowCredentials"]]
    assert allowed == [authenticator.get(options["options"])["rawId"]]

    body, signed = await passkey_step(client, pending["mfaToken"], authenticator)
    assert signed.status_code == 200, await signed.get_data(as_text=True)
    session = await signed.get_json()
    assert session["user"]["username"] == "alice"
    assert "hostgate_token=" in signed.headers["Set-Cookie"]
    works = await client.get(
        f"{API}/connections", headers={"Authorization": f"Bearer {session['token']}"}
    )
    assert works.status_code == 200
    login = (await audit_details(kernel, "auth.login"))[-1]
    assert login["method"] == "local" and login["mfa"] is True
    assert login["secondFactor"] == "passkey" and login["passkeyId"]

    # the same answer again: the pending sign-in was used up
    replayed = await client.post(f"{API}/auth/login/passkey/mfa", json=body)
    assert replayed.status_code == 401
    assert (await replayed.get_json())["code"] == "invalid_mfa_token"
    # the old assertion against a new pending sign-in: its challenge was single use
    again = await (await password_step(client, "alice")).get_json()
    stale = await client.post(
        f"{API}/auth/login/passkey/mfa", json={**body, "mfaToken": again["mfaToken"]}
    )
    assert stale.status_code == 401
    assert (await stale.get_json())["code"] == "passkey_failed"
    failed = (await audit_details(kernel, "auth.login_failed"))[-1]
    assert failed["reason"] == "passkey_invalid_challenge" and failed["secondFactor"] == "passkey"


async def test_without_the_requirement_the_password_is_enough(
    client, kernel, make_user, passkeys: Passkeys, authenticator: Authenticator
):
    bob = await make_user("bob")
    await passkeys.register(bob, authenticator)
    signed = await password_step(client, "bob")
    assert signed.status_code == 200
    assert "token" in await signed.get_json()
    # a pending sign-in cannot be made up: a token of the session type is refused
    forged = await challenge_for(client, (await signed.get_json())["token"])
    assert forged.status_code == 401
    assert (await forged.get_json())["code"] == "invalid_mfa_token"


async def test_with_totp_too_either_step_answers(
    client, kernel, make_user, passkeys: Passkeys, authenticator: Authenticator
):
    carol = await make_user("carol")
    totp = await enable_totp(client, carol.headers)
    await passkeys.register(carol, authenticator)
    await require_mfa_for_users(kernel)
    pending = await (await password_step(client, "carol")).get_json()
    assert pending["mfaMethods"] == ["totp", "passkey"]
    _, by_passkey = await passkey_step(client, pending["mfaToken"], authenticator)
    assert by_passkey.status_code == 200

    pending = await (await password_step(client, "carol")).get_json()
    code = totp.at(time.time() + 30)  # the set-up used this step's code
    by_code = await client.post(
        f"{API}/auth/login/mfa", json={"mfaToken": pending["mfaToken"], "code": code}
    )
    assert by_code.status_code == 200, await by_code.get_json()
    assert (await audit_details(kernel, "auth.login"))[-1]["secondFactor"] == "totp"


async def test_an_expired_pending_sign_in_is_refused(
    client, kernel, make_user, passkeys: Passkeys, authenticator: Authenticator, monkeypatch
):
    dave = await make_user("dave")
    await passkeys.register(dave, authenticator)
    await require_mfa_for_users(kernel)
    live = await (await password_step(client, "dave")).get_json()
    issued = await (await challenge_for(client, live["mfaToken"])).get_json()
    monkeypatch.setattr(identity_module, "MFA_TOKEN_SECONDS", -60)  # issued already expired
    expired = await (await password_step(client, "dave")).get_json()
    refused = await challenge_for(client, expired["mfaToken"])
    assert refused.status_code == 401
    assert (await refused.get_json())["code"] == "invalid_mfa_token"
    # an assertion made for a live sign-in's challenge, sent with the expired token
    body = {
        "mfaToken": expired["mfaToken"],
        "challengeId": issued["challengeId"],
        "response": authenticator.get(issued["options"], ORIGIN),
    }
    answer = await client.post(f"{API}/auth/login/passkey/mfa", json=body)
    assert answer.status_code == 401
    assert (await answer.get_json())["code"] == "invalid_mfa_token"
    # nor does that challenge serve another pending sign-in than its own
    monkeypatch.undo()
    other = await (await password_step(client, "dave")).get_json()
    crossed = await client.post(
        f"{API}/auth/login/passkey/mfa", json={**body, "mfaToken": other["mfaToken"]}
    )
    assert (await crossed.get_json())["code"] == "passkey_failed"


async def test_another_users_passkey_and_bad_assertions_are_refused_and_counted(
    client, kernel, make_user, passkeys: Passkeys, new_authenticator
):
    erin, frank = await make_user("erin"), await make_user("frank")
    erins, franks = new_authenticator(), new_authenticator()
    await passkeys.register(erin, erins)
    await passkeys.register(frank, franks)
    await require_mfa_for_users(kernel)
    pending = (await (await password_step(client, "erin")).get_json())["mfaToken"]

    _, foreign = await passkey_step(client, pending, franks)
    assert foreign.status_code == 401
    assert (await foreign.get_json())["code"] == "passkey_failed"
    assert (await audit_details(kernel, "auth.login_failed"))[-1]["reason"] == "passkey_wrong_user"

    issued = await (await challenge_for(client, pending)).get_json()
    response = erins.get(issued["options"], ORIGIN)
    response["response"]["signature"] = response["response"]["signature"][::-1]
    tampered = await client.post(
        f"{API}/auth/login/passkey/mfa",
        json={"mfaToken": pending, "challengeId": issued["challengeId"], "response": response},
    )
    assert tampered.status_code == 401
    assert (await audit_details(kernel, "auth.login_failed"))[-1]["reason"] == "passkey_invalid"
    malformed = await client.post(
        f"{API}/auth/login/passkey/mfa", json={"mfaToken": pending, "challengeId": "x"}
    )
    assert malformed.status_code == 400

    # five attempts per five minutes per user, as for TOTP codes: three more, then 429
    for _ in range(3):
        wrong = await client.post(
            f"{API}/auth/login/passkey/mfa",
            json={"mfaToken": pending, "challengeId": "unknown", "response": response},
        )
        assert wrong.status_code == 401
    _, limited = await passkey_step(client, pending, erins)
    assert limited.status_code == 429
    assert (await client.get(f"{API}/connections", headers=erin.headers)).status_code == 200


async def test_last_passkey_gone_or_passkeys_off_means_set_up_again(
    client, kernel, make_user, passkeys: Passkeys, authenticator: Authenticator
):
    gina = await make_user("gina")
    await require_mfa_for_users(kernel)
    created = await (await passkeys.register(gina, authenticator)).get_json()
    assert (await client.get(f"{API}/connections", headers=gina.headers)).status_code == 200

    await kernel.settings.update({"security.passkey_enabled": False})
    blocked = await client.get(f"{API}/connections", headers=gina.headers)
    assert (await blocked.get_json())["code"] == "mfa_enrollment_required"
    signed = await (await password_step(client, "gina")).get_json()
    assert "mfaRequired" not in signed  # an onboarding session: set up a step first
    await kernel.settings.update({"security.passkey_enabled": True})
    assert (await client.get(f"{API}/connections", headers=gina.headers)).status_code == 200

    deleted = await client.delete(
        f"{API}/profile/passkeys/{created['passkey']['id']}", headers=gina.headers
    )
    assert deleted.status_code == 200
    blocked = await client.get(f"{API}/connections", headers=gina.headers)
    assert (await blocked.get_json())["code"] == "mfa_enrollment_required"


async def test_the_ssh_front_door_cannot_ask_for_a_passkey(
    kernel, make_user, passkeys: Passkeys, authenticator: Authenticator
):
    from hostgate import ClientInfo

    hana = await make_user("hana")
    await passkeys.register(hana, authenticator)
    await require_mfa_for_users(kernel)
    client = ClientInfo(ip_address="127.0.0.1")
    with pytest.raises(PermissionDenied) as refused:
        await kernel.logins.login_local("hana", PASSWORD, client, None, door=True)
    assert refused.value.code == "second_step_unavailable"
    with pytest.raises(NotAuthenticated):
        await kernel.logins.login_local("hana", "not the password", client, None, door=True)
