"""POST /auth/ldap/test: a clear reason on failure, never the bind password."""

from __future__ import annotations

from typing import Any

import pytest

from testsupport.fixtures import store_unchecked
from testsupport.peers import free_port
from testsupport.slapd import SlapdServer

pytestmark = pytest.mark.peer("slapd")


def body_for(server: SlapdServer, **changes: Any) -> dict[str, Any]:
    return {
        "url": server.url,
        "bindDn": server.bind_dn,
        "bindPassword": server.bind_password,
        "searchBase": server.suffix,
        **changes,
    }


async def run_test(client: Any, headers: dict[str, str], body: dict[str, Any]) -> Any:
    answer = await client.post("/api/v1/auth/ldap/test", json=body, headers=headers)
    assert answer.status_code == 200, await answer.get_data(as_text=True)
    return await answer.get_json()


async def test_success(client, admin, ldap_on, slapd_server):
    assert await run_test(client, admin.headers, body_for(slapd_server)) == {"success": True}


async def test_wrong_bind_password(client, admin, ldap_on, slapd_server):
    result = await run_test(
        client, admin.headers, body_for(slapd_server, bindPassword="not-the-password-42")
    )
    assert result["success"] is False
    assert "invalid bind DN or password" in result["error"]
    assert "not-the-password-42" not in result["error"]


async def test_missing_search_base(client, admin, ldap_on, slapd_server):
    result = await run_test(
        client, admin.headers, body_for(slapd_server, searchBase="ou=nowhere,dc=example,dc=org")
    )
    assert result["success"] is False
    assert "does not exist" in result["error"]


async def test_unreachable_server(client, admin, ldap_on, slapd_server):
    result = await run_test(
        client, admin.headers, body_for(slapd_server, url=f"ldap://127.0.0.1:{free_port()}")
    )
    assert result["success"] is False
    assert "Cannot connect" in result["error"]


async def test_untrusted_certificate(client, admin, ldap_on, slapd_server):
    result = await run_test(
        client, admin.headers, body_for(slapd_server, url=slapd_server.ldaps_url)
    )
    assert result["success"] is False
    assert "certificate" in result["error"].lower()


@pytest.mark.parametrize("url", ["http://example.org", "ldap://[::1", "ldap://"])
async def test_bad_url(client, admin, ldap_on, slapd_server, url):
    result = await run_test(client, admin.headers, body_for(slapd_server, url=url))
    assert result == {
        "success": False,
        "error": "The LDAP URL must look like ldap://host:389 or ldaps://host",
    }


async def test_a_stored_url_that_does_not_parse_is_a_502_not_a_crash(client, kernel, ldap_on):
    # refused when saved now; one stored by an older release is still used safely
    await store_unchecked(kernel, "auth.ldap_url", "ldap://[::1")
    answer = await client.post(
        "/api/v1/auth/login/ldap", json={"username": "alice", "password": "alice-password"}
    )
    assert answer.status_code == 502
    assert (await answer.get_json())["code"] == "ldap_misconfigured"


async def test_masked_password_reuses_the_stored_one_only_for_the_same_server(
    client, admin, ldap_on, slapd_server
):
    from hostgate import SECRET_MASK

    same = await run_test(client, admin.headers, body_for(slapd_server, bindPassword=SECRET_MASK))
    assert same == {"success": True}
    other_dn = await run_test(
        client,
        admin.headers,
        body_for(slapd_server, bindPassword=SECRET_MASK, bindDn="cn=other,dc=example,dc=org"),
    )
    assert other_dn["success"] is False


async def test_disabled_answers_success_false(client, admin, kernel, ldap_on, slapd_server):
    await kernel.settings.update({"auth.ldap_enabled": False})
    result = await run_test(client, admin.headers, body_for(slapd_server))
    assert result == {"success": False, "error": "LDAP login is disabled"}


async def test_needs_settings_manage(client, make_user, ldap_on, slapd_server):
    user = await make_user("plain")
    answer = await client.post(
        "/api/v1/auth/ldap/test", json=body_for(slapd_server), headers=user.headers
    )
    assert answer.status_code == 403
    anonymous = await client.post("/api/v1/auth/ldap/test", json={})
    assert anonymous.status_code == 401


async def test_is_audited_without_the_password(client, admin, kernel, ldap_on, slapd_server):
    from hostgate.testing import LoggedInClient, audit_entries

    await run_test(client, admin.headers, body_for(slapd_server, bindPassword="leak-me-not-123"))
    rows = await audit_entries(LoggedInClient(client, admin.token, {}), "auth.ldap_tested")
    assert rows and rows[0]["details"]["success"] is False
    assert "leak-me-not-123" not in str(rows[0])
