"""The directory is reached under the target network policy, like every other destination."""

from __future__ import annotations

from typing import Any

import pytest

from testsupport.slapd import SlapdServer

pytestmark = pytest.mark.peer("slapd")


async def denials(client: Any, admin: Any) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/audit?eventType=network.denied", headers=admin.headers)
    return list((await response.get_json())["entries"])


async def test_a_login_against_a_refused_directory_is_a_502_and_audited(
    client, admin, kernel, ldap_on, slapd_server: SlapdServer
):
    await kernel.settings.update({"network.deny": "127.0.0.1"})
    answer = await client.post(
        "/api/v1/auth/login/ldap", json={"username": "alice", "password": "alice-password"}
    )
    assert answer.status_code == 502
    assert (await answer.get_json())["code"] == "ldap_target_denied"
    [entry] = await denials(client, admin)
    assert entry["details"]["purpose"] == "ldap"
    assert entry["target"] == slapd_server.url.removeprefix("ldap://").rstrip("/")
    failed = await client.get("/api/v1/audit?eventType=auth.login_failed", headers=admin.headers)
    [login] = (await failed.get_json())["entries"]
    assert login["details"]["reason"] == "ldap_target_denied"
    assert "network.deny" in login["details"]["error"]

    await kernel.settings.update({"network.deny": ""})
    answer = await client.post(
        "/api/v1/auth/login/ldap", json={"username": "alice", "password": "alice-password"}
    )
    assert answer.status_code == 200


async def test_the_test_route_cannot_probe_what_the_policy_refuses(
    client, admin, kernel, ldap_on, slapd_server: SlapdServer
):
    # A metadata address stands for any internal service an admin account could probe.
    body = {
        "url": "ldap://169.254.169.254:80",
        "bindDn": slapd_server.bind_dn,
        "bindPassword": "x-secret-x",
        "searchBase": slapd_server.suffix,
    }
    answer = await client.post("/api/v1/auth/ldap/test", json=body, headers=admin.headers)
    result = await answer.get_json()
    assert result["success"] is False
    assert "network policy does not allow" in result["error"]
    assert "network.protected" in result["error"]
    [entry] = await denials(client, admin)
    assert entry["target"] == "169.254.169.254:80"
    assert entry["details"]["purpose"] == "ldap"


async def test_a_host_name_is_resolved_once_and_its_certificate_name_still_checked(
    client, kernel, ldap_on, slapd_server: SlapdServer
):
    # ldap3 dials the approved address; the certificate is checked against "localhost".
    url = slapd_server.ldaps_url.replace("127.0.0.1", "localhost")
    await kernel.settings.update({"auth.ldap_url": url, "auth.ldap_ca_cert": slapd_server.ca_pem})
    answer = await client.post(
        "/api/v1/auth/login/ldap", json={"username": "alice", "password": "alice-password"}
    )
    assert answer.status_code == 200, await answer.get_data(as_text=True)
