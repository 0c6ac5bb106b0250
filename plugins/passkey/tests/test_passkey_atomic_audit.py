"""A passkey change and its audit entry are stored together or not at all."""

from __future__ import annotations

from typing import Any

import pytest
from hostgate.db.models.identity import AuthCredential
from sqlmodel import select

from tests.faults.atomic_support import audit_writes_fail

pytestmark = pytest.mark.usefixtures("passkeys_on")


async def passkey_rows(kernel: Any, user_id: str) -> list[tuple[str, str]]:
    """(id, name) of the user's stored passkeys."""
    async with kernel.db.session() as session:
        query = select(AuthCredential).where(AuthCredential.user_id == user_id)
        return sorted((row.id, row.name) for row in (await session.exec(query)).all())


async def audit_count(kernel: Any, event_type: str) -> int:
    """How many audit entries of ``event_type`` are stored."""
    from hostgate.db.models.audit import AuditEntry

    async with kernel.db.session() as session:
        query = select(AuditEntry).where(AuditEntry.event_type == event_type)
        return len((await session.exec(query)).all())


def assert_storage_full(status: int, body: dict[str, Any]) -> None:
    """The answer of a change refused because the audit log cannot be written."""
    assert status == 503, body
    assert body["code"] == "storage_full"


async def test_registration_without_its_audit_entry_stores_nothing(
    kernel, make_user, passkeys, authenticator
):
    """When the audit entry cannot be written, the new passkey is not stored either."""
    alice = await make_user("alice")
    with audit_writes_fail(kernel):
        answer = await passkeys.register(alice, authenticator, name="YubiKey")
    assert_storage_full(answer.status_code, await answer.get_json())
    assert await passkey_rows(kernel, alice.id) == []
    assert await audit_count(kernel, "auth.passkey_registered") == 0
    # without the fault the same authenticator registers (nothing half-stored blocks it)
    assert (await passkeys.register(alice, authenticator, name="YubiKey")).status_code == 200
    assert [name for _, name in await passkey_rows(kernel, alice.id)] == ["YubiKey"]
    assert await audit_count(kernel, "auth.passkey_registered") == 1


async def test_rename_and_delete_without_their_audit_entries_change_nothing(
    client, kernel, make_user, passkeys, authenticator
):
    """A rename or delete whose audit entry fails leaves the passkey as it was."""
    bob = await make_user("bob")
    created = await (await passkeys.register(bob, authenticator, name="Laptop")).get_json()
    passkey_id = created["passkey"]["id"]
    path = f"/api/v1/profile/passkeys/{passkey_id}"
    with audit_writes_fail(kernel):
        renamed = await client.put(path, json={"name": "Phone"}, headers=bob.headers)
        deleted = await client.delete(path, headers=bob.headers)
    assert_storage_full(renamed.status_code, await renamed.get_json())
    assert_storage_full(deleted.status_code, await deleted.get_json())
    assert await passkey_rows(kernel, bob.id) == [(passkey_id, "Laptop")]
    assert await audit_count(kernel, "auth.passkey_renamed") == 0
    assert await audit_count(kernel, "auth.passkey_removed") == 0
    # the passkey still logs in, and the same changes succeed once the disk has room
    assert (await passkeys.login(authenticator, "bob")).status_code == 200
    assert (await client.put(path, json={"name": "Phone"}, headers=bob.headers)).status_code == 200
    assert await passkey_rows(kernel, bob.id) == [(passkey_id, "Phone")]
    assert (await client.delete(path, headers=bob.headers)).status_code == 200
    assert await passkey_rows(kernel, bob.id) == []
    assert await audit_count(kernel, "auth.passkey_removed") == 1
