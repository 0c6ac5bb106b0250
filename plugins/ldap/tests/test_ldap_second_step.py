"""The second step after a directory password, against a real slapd.

An LDAP account that holds TOTP (or a pack's step in a role that requires two-step
verification) gets the same ``mfaRequired`` answer as a local password login, never a
session from the directory password alone.
"""

from __future__ import annotations

from typing import Any

import pytest
from hostgate.testing import LoggedInClient, audit_entries
from hostgate_ldap import plugin

from tests.services.identity.helpers import enable_mfa, next_code
from tests.services.identity.test_second_factors import HOLDERS, build_pack

pytestmark = pytest.mark.peer("slapd")
API = "/api/v1"


@pytest.fixture
def plugins() -> list[object]:
    HOLDERS.clear()
    return [plugin, build_pack()]


async def ldap_login(client: Any, username: str, password: str) -> Any:
    return await client.post(
        f"{API}/auth/login/ldap", json={"username": username, "password": password}
    )


async def events(client: Any, admin: Any, event_type: str) -> list[dict[str, Any]]:
    """The audit entries of one type, oldest first."""
    as_admin = LoggedInClient(client, admin.token, {})
    return list(reversed(await audit_entries(as_admin, event_type)))


async def test_a_totp_holder_gets_the_second_step_not_a_session(client, admin, ldap_on):
    first = await (await ldap_login(client, "alice", "alice-password")).get_json()
    totp = await enable_mfa(client, first["token"])

    answer = await ldap_login(client, "alice", "alice-password")
    assert answer.status_code == 200
    pending = await answer.get_json()
    assert pending["mfaRequired"] is True
    assert pending["mfaMethods"] == ["totp"] and pending["mfaMethod"] == "totp"
    assert "token" not in pending
    assert "hostgate_token=" not in answer.headers.get("Set-Cookie", "")
    # the pending token is no session
    me = await client.get(
        f"{API}/auth/me", headers={"Authorization": f"Bearer {pending['mfaToken']}"}
    )
    assert me.status_code == 401

    wrong = "000000" if next_code(totp) != "000000" else "111111"
    refused = await client.post(
        f"{API}/auth/login/mfa", json={"mfaToken": pending["mfaToken"], "code": wrong}
    )
    assert refused.status_code == 401
    [failed] = await events(client, admin, "auth.login_failed")
    assert failed["username"] == "alice"
    assert failed["details"]["reason"] == "invalid_mfa_code"
    assert failed["details"]["provider"] == "ldap"
    assert failed["details"]["secondFactor"] == "totp"

    right = await client.post(
        f"{API}/auth/login/mfa", json={"mfaToken": pending["mfaToken"], "code": next_code(totp)}
    )
    assert right.status_code == 200, await right.get_data(as_text=True)
    token = (await right.get_json())["token"]
    me = await client.get(f"{API}/auth/me", headers={"Authorization": f"Bearer {token}"})
    assert (await me.get_json())["user"]["username"] == "alice"
    login = (await events(client, admin, "auth.login"))[-1]
    assert login["details"]["method"] == "ldap" and login["details"]["provider"] == "ldap"
    assert login["details"]["mfa"] is True and login["details"]["secondFactor"] == "totp"


async def test_wrong_codes_after_a_directory_password_hit_the_step_limit(client, ldap_on):
    first = await (await ldap_login(client, "bob", "bob-password")).get_json()
    totp = await enable_mfa(client, first["token"])
    wrong = "000000" if next_code(totp) != "000000" else "111111"
    answers = []
    for _ in range(6):
        pending = await (await ldap_login(client, "bob", "bob-password")).get_json()
        answer = await client.post(
            f"{API}/auth/login/mfa", json={"mfaToken": pending["mfaToken"], "code": wrong}
        )
        answers.append(answer.status_code)
    # five wrong codes per five minutes per user, whichever password step came first
    assert answers == [401] * 5 + [429]


async def test_a_required_role_asks_a_pack_step_held(client, kernel, ldap_on):
    first = await (await ldap_login(client, "carol", "carol-password")).get_json()
    await kernel.settings.update(
        {"security.require_mfa": "roles", "security.require_mfa_roles": "user"}
    )
    # holding nothing: the session must set a step up first, as a local user's
    blocked = await client.get(
        f"{API}/connections", headers={"Authorization": f"Bearer {first['token']}"}
    )
    assert (await blocked.get_json())["code"] == "mfa_enrollment_required"
    fresh = await (await ldap_login(client, "carol", "carol-password")).get_json()
    assert "token" in fresh and "mfaRequired" not in fresh

    HOLDERS.add("carol")
    pending = await (await ldap_login(client, "carol", "carol-password")).get_json()
    assert pending["mfaRequired"] is True and pending["mfaMethods"] == ["card"]
    done = await client.post(
        f"{API}/auth/login/card", json={"mfaToken": pending["mfaToken"], "answer": "card"}
    )
    assert done.status_code == 200
    token = (await done.get_json())["token"]
    allowed = await client.get(f"{API}/connections", headers={"Authorization": f"Bearer {token}"})
    assert allowed.status_code == 200


async def test_without_a_second_step_the_directory_password_signs_in(client, ldap_on):
    answer = await (await ldap_login(client, "alice", "alice-password")).get_json()
    assert set(answer) == {"token", "user"}


async def test_a_suspended_directory_account_is_refused_before_any_step(
    client, kernel, admin, ldap_on
):
    first = await (await ldap_login(client, "alice", "alice-password")).get_json()
    await enable_mfa(client, first["token"])
    suspend = await client.post(
        f"{API}/users/{first['user']['id']}/suspend", headers=admin.headers, json={}
    )
    assert suspend.status_code == 200, await suspend.get_data(as_text=True)
    answer = await ldap_login(client, "alice", "alice-password")
    assert answer.status_code == 403
    assert (await answer.get_json())["code"] == "account_suspended"
