"""What a jump-host refusal tells the caller: the real reason, and no connection they
cannot see by name. Nothing here connects anywhere: storing and deleting only."""

from __future__ import annotations

from typing import Any

import hostgate_ssh.plugin as ssh_plugin
import hostgate_telnet.plugin as telnet_plugin
import pytest

API = "/api/v1"


@pytest.fixture
def plugins() -> list[object]:
    """The ssh pack (SSH connections are jump hosts) and telnet (one goes through them)."""
    return [ssh_plugin, telnet_plugin]


async def create(client: Any, user: Any, expect: int = 201, **body: Any) -> dict[str, Any]:
    payload = {"protocol": "ssh", "host": "127.0.0.1", "port": 22, **body}
    response = await client.post(f"{API}/connections", headers=user.headers, json=payload)
    assert response.status_code == expect, await response.get_json()
    return await response.get_json()  # type: ignore[no-any-return]


async def test_deleting_a_jump_host_never_names_a_connection_the_caller_cannot_see(
    client, make_user, admin
):
    alice = await make_user("alice")
    bob = await make_user("bob")
    bastion = await create(client, alice, name="bastion", shared=True)
    await create(client, alice, name="alice-inner", jumpHostId=bastion["id"])
    await create(client, bob, name="bobs-secret-db", jumpHostId=bastion["id"])

    response = await client.delete(f"{API}/connections/{bastion['id']}", headers=alice.headers)
    assert response.status_code == 409
    body = await response.get_json()
    assert body["code"] == "jump_host_in_use"
    assert "bobs-secret-db" not in body["error"]
    assert "'alice-inner'" in body["error"]
    assert "1 connection you cannot see" in body["error"]

    # someone who may see every connection is told their names
    response = await client.delete(f"{API}/connections/{bastion['id']}", headers=admin.headers)
    assert response.status_code == 409
    error = (await response.get_json())["error"]
    assert "'bobs-secret-db'" in error and "'alice-inner'" in error
    assert "cannot see" not in error


async def test_a_jump_host_refusal_gives_the_missing_reason(client, kernel, make_user):
    owner = await make_user("owner")
    bastion = await create(client, owner, name="bastion", shared=True, approvalRequired=True)
    carol = await make_user("carol")
    response = await client.post(
        f"{API}/connections",
        headers=carol.headers,
        json={"name": "x", "protocol": "ssh", "host": "127.0.0.1", "jumpHostId": bastion["id"]},
    )
    assert response.status_code == 403
    body = await response.get_json()
    assert body["code"] == "jump_host_not_allowed"
    assert "approved access request" in body["error"]
    assert "requires connections.use_ssh" not in body["error"]

    no_ssh = await make_user("dave", permissions=["connections.create", "connections.use_telnet"])
    response = await client.post(
        f"{API}/connections",
        headers=no_ssh.headers,
        json={"name": "t", "protocol": "telnet", "host": "127.0.0.1", "jumpHostId": bastion["id"]},
    )
    assert response.status_code == 403
    assert "requires connections.use_ssh" in (await response.get_json())["error"]
