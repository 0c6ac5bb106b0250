"""The connection queries (visibility, shares, tree, host keys) on PostgreSQL too."""

from __future__ import annotations

import pytest
from hostgate import Conflict
from hostgate.config import Config

from tests.services.connections.support import create, get_json, send


@pytest.fixture
def config(config: Config, postgres_url: str) -> Config:
    """The suite's config, on the test PostgreSQL database."""
    return config.with_overrides(database_url=postgres_url)


async def test_connections_on_postgresql(client, make_user, admin, kernel):
    assert kernel.db.dialect == "postgresql"
    owner = await make_user("owner")
    mate = await make_user("mate")
    group = await send(client, "POST", "/connections/groups", owner, {"name": "g"}, 201)
    sub = await send(
        client, "POST", "/connections/groups", owner, {"name": "s", "parentId": group["id"]}, 201
    )
    by_role = await create(client, owner, name="by-role", groupId=sub["id"], tags=["A"])
    everyone = await create(client, owner, name="everyone", shared=True)
    await create(client, owner, name="private")
    await send(
        client, "PUT", f"/connections/{by_role['id']}/shares", owner,
        {"shares": [{"shareType": "role", "targetId": "user"}]},
    )  # fmt: skip
    listing = await get_json(client, "/connections", mate)
    assert [c["name"] for c in listing["sharedConnections"]] == ["by-role", "everyone"]
    others = await get_json(client, "/connections?scope=all", admin)
    assert sorted(c["name"] for c in others["otherConnections"]) == ["by-role", "private"]
    assert [c["name"] for c in others["sharedConnections"]] == ["everyone"]
    await send(client, "PUT", f"/connections/{everyone['id']}", owner, {"shared": False})
    await send(client, "DELETE", f"/connections/groups/{group['id']}", owner)
    tree = await get_json(client, "/connections", owner)
    assert tree["groups"][0]["connections"][0]["id"] == by_role["id"]
    assert [
        c["name"] for c in (await get_json(client, "/connections", mate))["sharedConnections"]
    ] == ["by-role"]

    connection, _ = await kernel.connections.load(
        await kernel.identity.caller_for_user(owner.id, None, _client()), by_role["id"]
    )
    await kernel.connections.host_keys.check(connection, "ssh-ed25519", b"key-one")
    await kernel.connections.host_keys.check(connection, "ssh-ed25519", b"key-one")
    with pytest.raises(Conflict):
        await kernel.connections.host_keys.check(connection, "ssh-ed25519", b"key-two")
    keys = await get_json(client, f"/connections/{by_role['id']}/host-key", owner)
    assert keys["pending"]["fingerprint"] != keys["trusted"]["fingerprint"]
    await send(client, "POST", f"/connections/{by_role['id']}/host-key/accept", owner, {})
    await kernel.connections.host_keys.check(connection, "ssh-ed25519", b"key-two")


def _client():
    from hostgate import ClientInfo

    return ClientInfo(ip_address="127.0.0.1")
