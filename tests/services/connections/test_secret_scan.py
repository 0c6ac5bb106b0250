"""The suite-wide secret scan itself: a GET that echoes a stored secret is caught.

A small pack adds ``GET /api/v1/leak/<id>``, which returns a connection's decrypted
secrets, exactly the bug the scan exists for. Each test checks the ledger noted the
leak, then clears it so the test itself passes.
"""

from __future__ import annotations

import json
from typing import Any

import asyncssh
import pytest
from hostgate import current_kernel, hookimpl, public
from hostgate.db.models.connections import Connection
from quart import Blueprint, Quart, request

from testsupport import fixtures
from testsupport.secretscan import ScanningClient, SecretLedger

leak = Blueprint("leak", __name__)


@leak.get("/leak/<connection_id>")
@public
async def echo_secrets(connection_id: str) -> dict[str, Any]:
    """Every secret of a connection, decrypted: what no route may ever do."""
    kernel = current_kernel()
    async with kernel.db.session() as session:
        row = await session.get(Connection, connection_id)
    box = kernel.secrets
    extra = json.loads(box.open(row.extra_secrets)) if row.extra_secrets else {}
    return {
        "password": box.open_optional(row.password),
        "privateKey": box.open_optional(row.private_key),
        "extra": extra,
    }


class LeakyPack:
    """A pack whose one route leaks stored secrets."""

    @hookimpl
    def register_blueprints(self) -> list[Blueprint]:
        """The leaking blueprint."""
        return [leak]


@pytest.fixture
def plugins(plugins: list[object]) -> list[object]:
    """The connections tests' packs plus the leaking one."""
    return [*plugins, LeakyPack()]


def leaked_values(ledger: SecretLedger) -> str:
    """Everything the ledger noted, as one string; the ledger is cleared."""
    found = "\n".join(ledger.found)
    ledger.found.clear()
    return found


async def test_a_get_echoing_secrets_written_over_http_is_caught(
    client: Any, make_user: fixtures.MakeUser, secret_scan: SecretLedger
) -> None:
    """Password, private key and a pack's secret field POSTed, then echoed by a GET."""
    alice: fixtures.TestUser = await make_user("alice")
    key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    body = {
        "name": "desk",
        "protocol": "fakedesk",
        "host": "127.0.0.1",
        "password": "plain-password-1",
        "privateKey": key,
        "extraConfig": {"token": "desk-token-1"},
    }
    response = await client.post("/api/v1/connections", json=body, headers=alice.headers)
    assert response.status_code == 201
    connection_id = (await response.get_json())["id"]

    shown = await client.get(f"/api/v1/connections/{connection_id}", headers=alice.headers)
    assert shown.status_code == 200
    assert secret_scan.found == []

    assert (await client.get(f"/api/v1/leak/{connection_id}")).status_code == 200
    found = leaked_values(secret_scan)
    assert "plain-password-1" in found
    assert "desk-token-1" in found
    assert "BEGIN OPENSSH PRIVATE KEY" in found


async def test_secrets_stored_without_a_request_are_caught(
    client: Any, make_user: fixtures.MakeUser, make_connection: Any, secret_scan: SecretLedger
) -> None:
    """``make_connection`` seals its secrets directly: the secret box records them."""
    owner: fixtures.TestUser = await make_user("owner")
    row = await make_connection(
        owner, "ssh", password="sealed-password-2", secret_extra={"passphrase": "pp-phrase-2"}
    )
    await client.get(f"/api/v1/leak/{row.id}")
    found = leaked_values(secret_scan)
    assert "sealed-password-2" in found
    assert "pp-phrase-2" in found


async def test_a_client_of_an_app_built_by_the_test_is_scanned(
    secret_scan: SecretLedger,
) -> None:
    """``app.test_client()`` of any Quart app scans too; request-body secrets count."""
    app = Quart(__name__)
    stored: dict[str, str] = {}

    @app.post("/store")
    async def store() -> str:
        """Keep the posted password."""
        stored.update(await request.get_json())
        return "ok"

    @app.get("/echo")
    async def echo() -> str:
        """Give it back."""
        return stored["password"]

    client = app.test_client()
    assert isinstance(client, ScanningClient)
    await client.post("/store", json={"password": "bare-password-3"})
    await client.get("/echo")
    assert "bare-password-3" in leaked_values(secret_scan)


def test_the_credential_route_may_hand_out_its_password_only() -> None:
    """``/connections/:id/session``: the password field is allowed, nothing else."""
    ledger = SecretLedger()
    ledger.add(["pw-secret-4", "key-secret-4"])
    route = "/api/v1/connections/1/session"
    assert ledger.leaked(route, b'{"password": "pw-secret-4", "host": "h"}') == []
    assert ledger.leaked(route, b'{"password": null, "key": "key-secret-4"}') == ["key-secret-4"]
    assert ledger.leaked("/api/v1/connections/1", b'{"x": "pw-secret-4"}') == ["pw-secret-4"]


def test_escaped_and_partial_forms_are_found_and_chance_matches_are_not() -> None:
    """JSON-escaped values and single key lines count; short or numeric values are ignored."""
    ledger = SecretLedger()
    key = asyncssh.generate_private_key("ssh-ed25519").export_private_key().decode()
    ledger.add(['quo"ted-5', "x", "123456", "[redacted]"])
    ledger.add_sealed(json.dumps({"headers": {"Authorization": "Bearer abc-5"}}))
    ledger.add_request({"user": "bob", "newPassword": "new-pass-5", "note": "fine"}, None, None)
    ledger.add_sealed(key.encode())
    assert ledger.leaked("/x", json.dumps({"v": 'quo"ted-5'}).encode()) == ['quo"ted-5']
    assert ledger.leaked("/x", b'{"a": "x", "n": 123456, "p": "[redacted]", "u": "bob"}') == []
    assert ledger.leaked("/x", b"Bearer abc-5") == ["Bearer abc-5"]
    assert ledger.leaked("/x", b"new-pass-5") == ["new-pass-5"]
    assert ledger.leaked("/x", key.splitlines()[2].encode()) == [key]


def test_a_noted_leak_fails_the_test() -> None:
    """The fixture's teardown check raises once a leak was noted."""
    ledger = SecretLedger()
    ledger.add(["pw-secret-6"])
    ledger.assert_clean()
    ledger.check("/api/v1/thing", b"pw-secret-6")
    with pytest.raises(AssertionError, match="pw-secret-6"):
        ledger.assert_clean()
