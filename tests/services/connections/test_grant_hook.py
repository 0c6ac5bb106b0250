"""``grant_connection_access``: the hook the kernel asks before anyone but the owner (or
``connections.edit_any``) uses an approval-required connection. A pack answering yes
lets the user in; no pack, a no, or a pack that raises keeps them out. Also the
contract names a feature pack reads connections and users with (``visible`` is
covered by the access pack's tests: a hidden connection answers 404)."""

from __future__ import annotations

from typing import Any

import hostgate_ssh.plugin as ssh_plugin
import pytest
from hostgate import KernelAPI, hookimpl

from tests.services.connections.support import send

GRANTS: set[tuple[str, str]] = set()


class Grants:
    """Grants what is in ``GRANTS``; raises for the connection named ``broken``."""

    @hookimpl
    async def grant_connection_access(
        self, user_id: str, connection_id: str, kernel: KernelAPI
    ) -> bool:
        connection = await kernel.connections.get(connection_id)
        if connection is not None and connection.name == "broken":
            raise RuntimeError("this pack fails")
        return (user_id, connection_id) in GRANTS


class Nos:
    """Always no (asked before ``Grants``: the first yes wins, a no does not end the ask)."""

    @hookimpl
    def grant_connection_access(self, user_id: str, connection_id: str) -> bool:
        return False


@pytest.fixture
def plugins() -> list[object]:
    GRANTS.clear()
    return [ssh_plugin, Grants(), Nos()]


async def guarded(client: Any, owner: Any, name: str) -> str:
    body = {
        "name": name, "protocol": "ssh", "host": "127.0.0.1", "port": 22,
        "shared": True, "approvalRequired": True,
    }  # fmt: skip
    return str((await send(client, "POST", "/connections", owner, body, expect=201))["id"])


async def can_use(client: Any, user: Any, connection_id: str) -> bool:
    detail = await send(client, "GET", f"/connections/{connection_id}", user)
    return bool(detail["canUse"])


async def test_a_pack_grant_opens_an_approval_required_connection(client, kernel, make_user):
    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    guarded_id = await guarded(client, owner, "prod")
    assert await can_use(client, owner, guarded_id)  # the owner needs no grant
    assert not await can_use(client, bob, guarded_id)
    GRANTS.add((bob.id, guarded_id))
    assert await can_use(client, bob, guarded_id)
    GRANTS.clear()
    assert not await can_use(client, bob, guarded_id)


async def test_a_pack_that_raises_grants_nothing(client, kernel, make_user):
    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    broken_id = await guarded(client, owner, "broken")
    GRANTS.add((bob.id, broken_id))
    assert not await can_use(client, bob, broken_id)


async def test_the_contract_reads_connections_and_users(client, kernel, make_user):
    owner = await make_user("owner", role="admin")
    bob = await make_user("bob", permissions=["connections.use_ssh"])
    guarded_id = await guarded(client, owner, "prod")
    api: KernelAPI = kernel
    stored = await api.connections.get(guarded_id)
    assert stored is not None
    assert (stored.name, stored.protocol, stored.owner_id) == ("prod", "ssh", owner.id)
    assert stored.approval_required is True
    assert await api.connections.get("no-such-id") is None
    user = await api.logins.get_user(bob.id)
    assert user is not None and user.username == "bob"
    assert await api.logins.get_user("no-such-id") is None
