"""LDAP login against a real slapd: provisioning, lockout, audit, injection, TLS."""

from __future__ import annotations

from typing import Any

import pytest
from hostgate.testing import LoggedInClient, audit_entries

from testsupport.slapd import SlapdServer

pytestmark = pytest.mark.peer("slapd")


async def login(client: Any, username: str, password: str) -> Any:
    return await client.post(
        "/api/v1/auth/login/ldap", json={"username": username, "password": password}
    )


async def audit_events(client: Any, admin: Any, event_type: str) -> list[dict[str, Any]]:
    """The audit entries of one type, oldest first, read through ``GET /audit``."""
    as_admin = LoggedInClient(client, admin.token, {})
    return list(reversed(await audit_entries(as_admin, event_type)))


async def test_login_provisions_user_and_token_works(client, admin, kernel, ldap_on):
    answer = await login(client, "alice", "alice-password")
    assert answer.status_code == 200, await answer.get_data(as_text=True)
    body = await answer.get_json()
    assert set(body) == {"token", "user"}
    assert set(body["user"]) == {"id", "username"}
    assert body["user"]["username"] == "alice"
    assert "hostgate_token=" in answer.headers.get("Set-Cookie", "")
    me = await client.get("/api/v1/auth/me", headers={"Authorization": f"Bearer {body['token']}"})
    assert me.status_code == 200
    assert (await me.get_json())["user"]["username"] == "alice"
    user = await kernel.logins.get_user(body["user"]["id"])
    assert user is not None
    assert user.auth_provider == "ldap"
    linked = await kernel.logins.find_external("ldap", "uid=alice,ou=people,dc=example,dc=org")
    assert linked is not None and linked.id == user.id
    assert user.display_name == "Alice Liddell"
    assert user.email == "alice@example.org"
    # no local password: the directory's password does not open a local login
    local = await client.post(
        "/api/v1/auth/login", json={"username": "alice", "password": "alice-password"}
    )
    assert local.status_code == 401
    logins = await audit_events(client, admin, "auth.login")
    assert logins[-1]["username"] == "alice"
    assert logins[-1]["details"]["method"] == "ldap"


async def test_second_login_reuses_the_account(client, ldap_on):
    first = await (await login(client, "bob", "bob-password")).get_json()
    second = await (await login(client, "BOB", "bob-password")).get_json()
    assert first["user"]["id"] == second["user"]["id"]
    assert first["token"] != second["token"]


async def test_local_name_clash_gets_a_suffix(client, make_user, ldap_on):
    await make_user("carol")
    body = await (await login(client, "carol", "carol-password")).get_json()
    assert body["user"]["username"] == "carol_ldap"


async def test_wrong_password_is_401_and_audited(client, admin, kernel, ldap_on):
    answer = await login(client, "alice", "wrong-password")
    assert answer.status_code == 401
    assert (await answer.get_json())["code"] == "invalid_credentials"
    failed = await audit_events(client, admin, "auth.login_failed")
    assert failed[-1]["details"]["reason"] == "invalid_password"
    assert failed[-1]["details"]["provider"] == "ldap"
    assert "wrong-password" not in str(failed[-1]["details"])


async def test_unknown_user_is_the_same_401(client, admin, kernel, ldap_on):
    answer = await login(client, "mallory", "whatever")
    assert answer.status_code == 401
    assert (await answer.get_json())["error"] == "Invalid username or password"
    failed = await audit_events(client, admin, "auth.login_failed")
    assert failed[-1]["details"]["reason"] == "user_not_found"


async def test_empty_password_never_binds(client, ldap_on):
    # An LDAP simple bind with an empty password is an anonymous bind that "succeeds".
    answer = await login(client, "alice", "")
    assert answer.status_code == 400


@pytest.mark.parametrize(
    "username",
    ["*", "al*", "alice)(uid=*", "*)(|(uid=*", "alice\\", "(uid=alice)", "ålice"],
)
async def test_filter_injection_is_neutralised(client, ldap_on, username):
    answer = await login(client, username, "alice-password")
    assert answer.status_code == 401


@pytest.mark.parametrize("username", ["alice\x00", "alice\n", "\x1balice", "ali\x7fce"])
async def test_control_characters_in_the_username_are_refused(
    client, admin, kernel, ldap_on, username
):
    answer = await login(client, username, "alice-password")
    assert answer.status_code == 400
    assert (await answer.get_json())["code"] == "invalid_username"
    assert await audit_events(client, admin, "auth.login") == []
    assert await audit_events(client, admin, "auth.login_failed") == []


async def test_lockout_after_repeated_failures(client, admin, kernel, ldap_on):
    await kernel.settings.update({"security.max_login_attempts": 3})
    await (await login(client, "alice", "alice-password")).get_json()  # provision
    for _ in range(3):
        assert (await login(client, "alice", "nope")).status_code == 401
    locked = await login(client, "alice", "alice-password")
    assert locked.status_code == 429
    assert int(locked.headers["Retry-After"]) > 0
    assert await audit_events(client, admin, "auth.account_locked")


async def test_unprovisioned_names_lock_too(client, kernel, ldap_on):
    await kernel.settings.update({"security.max_login_attempts": 2})
    for _ in range(2):
        assert (await login(client, "bob", "nope")).status_code == 401
    assert (await login(client, "bob", "bob-password")).status_code == 429


async def test_group_role_mapping_on_first_login(client, kernel, ldap_on, slapd_server):
    mapping = f'{{"{slapd_server.group_dn("admins")}": "admin"}}'
    await kernel.settings.update({"auth.ldap_group_role_map": mapping})
    alice = await (await login(client, "alice", "alice-password")).get_json()
    bob = await (await login(client, "bob", "bob-password")).get_json()
    roles = {}
    for body in (alice, bob):
        me = await client.get(
            "/api/v1/auth/me", headers={"Authorization": f"Bearer {body['token']}"}
        )
        roles[body["user"]["username"]] = (await me.get_json())["user"]["role"]
    assert roles == {"alice": "admin", "bob": "user"}


async def test_user_filter_restricts_who_may_log_in(client, kernel, ldap_on):
    await kernel.settings.update({"auth.ldap_user_filter": "(mail=bob@example.org)"})
    assert (await login(client, "alice", "alice-password")).status_code == 401
    assert (await login(client, "bob", "bob-password")).status_code == 200


async def test_disabled_answers_403(client, kernel, ldap_on):
    await kernel.settings.update({"auth.ldap_enabled": False})
    answer = await login(client, "alice", "alice-password")
    assert answer.status_code == 403
    assert (await answer.get_json())["code"] == "ldap_disabled"


async def test_unknown_fields_are_refused(client, ldap_on):
    answer = await client.post(
        "/api/v1/auth/login/ldap",
        json={"username": "alice", "password": "alice-password", "role": "admin"},
    )
    assert answer.status_code == 400


async def test_unreachable_directory_is_502_and_audited(client, admin, kernel, ldap_on):
    from testsupport.peers import free_port

    await kernel.settings.update({"auth.ldap_url": f"ldap://127.0.0.1:{free_port()}"})
    answer = await login(client, "alice", "alice-password")
    assert answer.status_code == 502
    failed = await audit_events(client, admin, "auth.login_failed")
    assert failed[-1]["details"]["reason"] == "ldap_unreachable"


async def test_ldaps_verifies_the_certificate(
    client, admin, kernel, ldap_on, slapd_server: SlapdServer
):
    await kernel.settings.update({"auth.ldap_url": slapd_server.ldaps_url})
    # The test CA is in no system trust store: verification must fail.
    assert (await login(client, "alice", "alice-password")).status_code == 502
    failed = await audit_events(client, admin, "auth.login_failed")
    assert "certificate" in failed[-1]["details"]["error"].lower()
    await kernel.settings.update({"auth.ldap_ca_cert": slapd_server.ca_pem})
    assert (await login(client, "alice", "alice-password")).status_code == 200


async def test_ldaps_verification_can_be_turned_off(
    client, kernel, ldap_on, slapd_server: SlapdServer
):
    await kernel.settings.update(
        {"auth.ldap_url": slapd_server.ldaps_url, "auth.ldap_tls_verify": False}
    )
    assert (await login(client, "alice", "alice-password")).status_code == 200


async def test_starttls_verifies_the_certificate(
    client, kernel, ldap_on, slapd_server: SlapdServer
):
    await kernel.settings.update({"auth.ldap_starttls": True})
    assert (await login(client, "alice", "alice-password")).status_code == 502
    await kernel.settings.update({"auth.ldap_ca_cert": slapd_server.ca_pem})
    assert (await login(client, "alice", "alice-password")).status_code == 200


async def test_turning_verification_off_is_audited(client, admin, kernel):
    answer = await client.put(
        "/api/v1/settings", json={"auth.ldap_tls_verify": False}, headers=admin.headers
    )
    assert answer.status_code == 200
    updates = await audit_events(client, admin, "settings.updated")
    assert updates[-1]["details"]["after"] == {"auth.ldap_tls_verify": False}


async def test_bad_settings_are_refused(client, admin):
    for change in (
        {"auth.ldap_user_filter": "objectClass=person"},
        {"auth.ldap_user_filter": "(a=b))("},
        {"auth.ldap_group_role_map": "[1, 2]"},
        {"auth.ldap_group_role_map": '{"cn=x": ""}'},
        {"auth.ldap_email_attr": "mail)(x"},
        {"auth.ldap_ca_cert": "not a certificate"},
    ):
        answer = await client.put("/api/v1/settings", json=change, headers=admin.headers)
        assert answer.status_code == 400, change


async def test_bind_password_is_masked_in_settings(client, admin, ldap_on):
    answer = await client.get("/api/v1/settings", headers=admin.headers)
    text = await answer.get_data(as_text=True)
    assert ldap_on["auth.ldap_bind_password"] not in text


@pytest.mark.parametrize("url", ["http://127.0.0.1:389", "ldap://[::1", "ldap.example.org"])
async def test_a_bad_url_is_refused_when_saved_and_logins_keep_working(
    client, kernel, admin, ldap_on, slapd_server: SlapdServer, url: str
):
    answer = await client.put(
        "/api/v1/settings",
        json={"auth.ldap_url": url, "auth.ldap_search_base": "dc=nowhere"},
        headers=admin.headers,
    )
    assert answer.status_code == 400
    body = await answer.get_json()
    assert body["code"] == "invalid_input"
    assert body["error"].startswith("auth.ldap_url: must be an ldap:// or ldaps:// URL")
    assert kernel.settings.get("auth.ldap_url") == slapd_server.url
    assert kernel.settings.get("auth.ldap_search_base") == slapd_server.suffix
    # a 400 at save time, not a 502 at the next login: the directory still answers
    assert (await login(client, "alice", "alice-password")).status_code == 200
