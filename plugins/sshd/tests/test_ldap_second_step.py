"""A directory account's TOTP code at the front door, against a real slapd.

After the directory password the door asks for the verification code exactly as it
does for a local account; the password alone signs nobody in.
"""

from __future__ import annotations

import asyncssh
import pytest

from plugins.sshd.tests.door import audit_entries, door_of
from plugins.sshd.tests.test_ldap_sign_in import ldap_on, plugins  # noqa: F401
from plugins.sshd.tests.test_password_sign_in import connect
from tests.services.identity.helpers import enable_mfa, next_code
from testsupport.slapd import slapd_server  # noqa: F401

pytestmark = pytest.mark.peer("slapd")


async def test_the_door_asks_a_directory_account_for_its_code(
    client,
    kernel,
    admin,
    ldap_on,  # noqa: F811
):
    first = await client.post(
        "/api/v1/auth/login/ldap", json={"username": "alice", "password": "alice-password"}
    )
    totp = await enable_mfa(client, (await first.get_json())["token"])
    port = door_of(kernel).port
    wrong = "000000" if next_code(totp) != "000000" else "111111"

    with pytest.raises((asyncssh.PermissionDenied, asyncssh.DisconnectError)):
        await connect(port, "alice:nowhere", ["alice-password", wrong])
    failures = await audit_entries(client, admin, "auth.login_failed")
    assert [f["details"]["reason"] for f in failures] == ["invalid_mfa_code"]
    assert failures[0]["details"]["provider"] == "ldap"

    conn, answered = await connect(port, "alice:nowhere", ["alice-password", next_code(totp)])
    async with conn:
        result = await conn.run("true", check=False)
    assert answered.prompts == ["Password: ", "Verification code: "]
    # signed in: the refusal is the target's, not the sign-in's
    assert "hostgate: Connection not found" in str(result.stderr)
    logins = await audit_entries(client, admin, "auth.login")
    door = [entry for entry in logins if entry["details"].get("via") == "ssh"]
    assert len(door) == 1
    assert door[0]["details"]["method"] == "ldap" and door[0]["details"]["mfa"] is True
