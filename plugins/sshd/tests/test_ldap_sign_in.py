"""Directory (LDAP) passwords by keyboard-interactive, against a real slapd.

The door asks the same login method chain as the web: the LDAP pack's own check,
its lockout, rate limit and audit; one budget with ``POST /auth/login/ldap``.
"""

from __future__ import annotations

from typing import Any

import asyncssh
import pytest
from hostgate import ApiError, ClientInfo
from hostgate_ldap import plugin as ldap_plugin
from hostgate_ssh import plugin as ssh_plugin
from hostgate_sshd import approval as approval_module
from hostgate_sshd import plugin as sshd_plugin
from hostgate_sshd import server as server_module

from plugins.sshd.tests.door import audit_entries, door_of
from plugins.sshd.tests.test_password_sign_in import connect
from testsupport.fixtures import store_unchecked
from testsupport.slapd import SlapdServer, slapd_server  # noqa: F401

pytestmark = pytest.mark.peer("slapd")


@pytest.fixture
def plugins(door_listens_on_a_free_port: None) -> list[object]:
    return [ssh_plugin, sshd_plugin, ldap_plugin]


@pytest.fixture
async def ldap_on(kernel: Any, slapd_server: SlapdServer) -> None:  # noqa: F811
    await kernel.settings.update(
        {
            "auth.ldap_enabled": True,
            "auth.ldap_url": slapd_server.url,
            "auth.ldap_bind_dn": slapd_server.bind_dn,
            "auth.ldap_bind_password": slapd_server.bind_password,
            "auth.ldap_search_base": slapd_server.suffix,
            "auth.ldap_username_attr": "uid",
        }
    )


async def test_a_directory_password_signs_in_and_makes_the_account(client, kernel, admin, ldap_on):
    conn, answered = await connect(door_of(kernel).port, "alice:nowhere", ["alice-password"])
    async with conn:
        result = await conn.run("true", check=False)
    assert answered.prompts == ["Password: "]
    # signed in: the refusal is the target's, not the sign-in's
    assert "hostgate: Connection not found" in str(result.stderr)
    [login] = await audit_entries(client, admin, "auth.login")
    assert login["username"] == "alice"
    assert login["details"]["method"] == "ldap"
    assert login["details"]["provider"] == "ldap" and login["details"]["via"] == "ssh"
    users = await (await client.get("/api/v1/users", headers=admin.headers)).get_json()
    [alice] = [u for u in users["users"] if u["username"] == "alice"]
    assert alice["authProvider"] == "ldap"

    # the second time the account's own method (LDAP) is asked again, not the local one
    conn, _ = await connect(door_of(kernel).port, "alice:nowhere", ["alice-password"])
    conn.close()
    assert len(await audit_entries(client, admin, "auth.login")) == 2


async def test_a_wrong_directory_password_counts_in_the_web_lockout(client, kernel, admin, ldap_on):
    await store_unchecked(kernel, "security.max_login_attempts", 2)
    port = door_of(kernel).port
    for _ in range(2):
        with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
            await connect(port, "bob:box", ["not-bobs-password"])
    failures = await audit_entries(client, admin, "auth.login_failed")
    assert [f["details"]["provider"] for f in failures] == ["ldap", "ldap"]
    assert [f["details"]["reason"] for f in failures] == ["invalid_password"] * 2
    web = await client.post(
        "/api/v1/auth/login/ldap", json={"username": "bob", "password": "bob-password"}
    )
    assert web.status_code == 429
    assert (await web.get_json())["code"] == "account_locked"


async def test_an_empty_directory_password_never_binds(
    client, kernel, admin, ldap_on, monkeypatch: pytest.MonkeyPatch
):
    """At the door an empty answer asks for a browser approval; the check itself refuses it."""
    monkeypatch.setattr(approval_module, "APPROVAL_SECONDS", 1)
    monkeypatch.setattr(server_module, "APPROVAL_SECONDS", 1)
    with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
        await connect(door_of(kernel).port, "carol:box", [""])
    assert await audit_entries(client, admin, "auth.login") == []
    [failed] = await audit_entries(client, admin, "auth.login_failed")
    assert failed["details"]["reason"] == "ssh_approval_expired"  # never a bind

    from hostgate_ldap.routes import directory_sign_in

    with pytest.raises(ApiError) as refused:
        await directory_sign_in(kernel, "carol", "", ClientInfo(ip_address="192.0.2.7"))
    assert refused.value.status == 401
    failures = await audit_entries(client, admin, "auth.login_failed")
    assert failures[0]["details"]["provider"] == "ldap"
    assert await audit_entries(client, admin, "auth.login") == []


async def test_local_accounts_still_use_the_local_check(client, kernel, make_user, ldap_on):
    user = await make_user("dave")
    conn, _ = await connect(door_of(kernel).port, "dave:nowhere", [user.password])
    conn.close()
    [login] = await audit_entries(client, user, "auth.login")
    assert login["details"]["method"] == "local"
