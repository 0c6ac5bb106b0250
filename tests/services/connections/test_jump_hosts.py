"""Connections through jump hosts (ProxyJump) against real servers the gateway cannot
reach directly: an SSH terminal, SFTP and a telnet terminal through a jump sshd; the
checks on every hop (access, loops, host keys, network policy); the chain in the audit."""

from __future__ import annotations

from typing import Any

import hostgate_access.plugin as access_plugin
import hostgate_ssh.plugin as ssh_plugin
import hostgate_telnet.plugin as telnet_plugin
import pytest

from tests.services.sessions.helpers import Screen, socket_path, ticket_for

API = "/api/v1"


@pytest.fixture
def plugins() -> list[object]:
    """The ssh pack (jump hosts, terminals, SFTP), the telnet pack, the access pack."""
    return [ssh_plugin, telnet_plugin, access_plugin]


async def create(client: Any, user: Any, **body: Any) -> dict[str, Any]:
    response = await client.post(f"{API}/connections", headers=user.headers, json=body)
    assert response.status_code == 201, await response.get_json()
    return await response.get_json()  # type: ignore[no-any-return]


async def jump_and_target(client: Any, user: Any, net: Any, protocol: str = "ssh") -> tuple:
    jump = await create(
        client, user, name="bastion", protocol="ssh", host=net.jump.host, port=net.jump.port,
        username=net.jump.username, password=net.jump.password,
    )  # fmt: skip
    server = net.telnet if protocol == "telnet" else net.target
    target = await create(
        client, user, name="inner", protocol=protocol, host=server.host, port=server.port,
        username=server.username, password=server.password, jumpHostId=jump["id"],
    )  # fmt: skip
    return jump, target


async def test_an_ssh_terminal_reaches_a_host_only_the_jump_host_reaches(
    client, kernel, make_user, jump_net
):
    user = await make_user("alice")
    jump, target = await jump_and_target(client, user, jump_net)
    assert target["jumpHostId"] == jump["id"]

    # the direct route does not exist: the same target without the jump host fails
    direct = await create(
        client, user, name="direct", protocol="ssh", host=jump_net.target.host,
        port=jump_net.target.port, username="x", password="y",
    )  # fmt: skip
    async with client.websocket(
        socket_path("ssh", ticket_for(kernel, user), direct["id"])
    ) as socket:
        screen = Screen(socket)
        assert await screen.until_closed() == 4003

    async with client.websocket(
        socket_path("ssh", ticket_for(kernel, user), target["id"])
    ) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        # the target sees the connection come from the jump host, on its own loopback
        await screen.step("echo conn=$SSH_CONNECTION", f"127.0.0.1 {jump_net.target.port}")
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000
    assert "Accepted password for hgtest from 127.0.0.1" in jump_net.target.log()
    assert "Accepted password for hgtest" in jump_net.jump.log()

    # host-key trust applies to each hop: both keys are remembered
    for connection in (jump, target):
        keys = await client.get(
            f"{API}/connections/{connection['id']}/host-key", headers=user.headers
        )
        assert keys.status_code == 200
        assert (await keys.get_json())["trusted"]["fingerprint"].startswith("SHA256:")

    # the audit names the whole route
    response = await client.get(
        f"{API}/audit?eventType=connection.session_started", headers=user.headers
    )
    [started] = [
        e
        for e in (await response.get_json())["entries"]
        if e["details"].get("connectionId") == target["id"]
    ]
    route = started["details"]["route"]
    assert route.startswith(f"bastion ({jump_net.jump.host}:{jump_net.jump.port}) -> inner")


async def test_sftp_through_a_jump_host(client, make_user, jump_net):
    user = await make_user("alice")
    _, target = await jump_and_target(client, user, jump_net, protocol="sftp")
    folder = f"jump-sftp-{target['id'][:8]}"
    base = f"{API}/sftp/{target['id']}"
    response = await client.post(f"{base}/mkdir", headers=user.headers, json={"path": folder})
    assert response.status_code == 200, await response.get_json()
    response = await client.post(
        f"{base}/upload?path={folder}/hello.txt", headers=user.headers, data=b"through the bastion"
    )
    assert response.status_code == 200, await response.get_json()
    listed = await client.post(f"{base}/list", headers=user.headers, json={"path": folder})
    assert [f["filename"] for f in (await listed.get_json())["files"]] == ["hello.txt"]
    assert (jump_net.target.home / folder / "hello.txt").read_bytes() == b"through the bastion"
    download = await client.get(f"{base}/download?path={folder}/hello.txt", headers=user.headers)
    assert await download.get_data() == b"through the bastion"


async def test_a_telnet_terminal_through_a_jump_host(client, kernel, make_user, jump_net):
    user = await make_user("alice")
    _, target = await jump_and_target(client, user, jump_net, protocol="telnet")
    async with client.websocket(
        socket_path("telnet", ticket_for(kernel, user), target["id"])
    ) as socket:
        screen = Screen(socket)
        await screen.prompt(timeout=20)
        await screen.step("echo via-$((40+2))", "via-42")
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000


async def test_every_hop_is_checked(client, kernel, make_user, jump_net, sshd):
    owner = await make_user("owner")
    jump, target = await jump_and_target(client, owner, jump_net)

    # a loop: the jump host through its own dependant
    response = await client.put(
        f"{API}/connections/{jump['id']}", headers=owner.headers, json={"jumpHostId": target["id"]}
    )
    assert response.status_code == 400
    assert (await response.get_json())["code"] == "jump_host_loop"
    # only SSH connections are jump hosts
    telnet = await create(
        client, owner, name="tn", protocol="telnet", host="127.0.0.1", port=23
    )  # fmt: skip
    response = await client.put(
        f"{API}/connections/{target['id']}",
        headers=owner.headers,
        json={"jumpHostId": telnet["id"]},
    )
    assert (await response.get_json())["code"] == "jump_host_not_ssh"
    # a jump host still in use cannot be deleted
    response = await client.delete(f"{API}/connections/{jump['id']}", headers=owner.headers)
    assert response.status_code == 409
    assert (await response.get_json())["code"] == "jump_host_in_use"
    assert "inner" in (await response.get_json())["error"]

    # someone else's jump host: invisible (404), then visible but not usable (403)
    stranger = await make_user("stranger")
    body = {
        "name": "mine", "protocol": "ssh", "host": "127.0.0.1", "port": sshd.port,
        "jumpHostId": jump["id"],
    }  # fmt: skip
    response = await client.post(f"{API}/connections", headers=stranger.headers, json=body)
    assert response.status_code == 404
    await client.put(
        f"{API}/connections/{jump['id']}", headers=owner.headers, json={"shared": True}
    )
    limited = await make_user(
        "limited", permissions=["connections.create", "connections.use_telnet"]
    )
    response = await client.post(f"{API}/connections", headers=limited.headers, json=body)
    assert response.status_code == 403
    assert (await response.get_json())["code"] == "jump_host_not_allowed"


async def test_the_network_policy_applies_beyond_the_jump_host(
    client, kernel, make_user, jump_net, admin
):
    user = await make_user("alice")
    _, target = await jump_and_target(client, user, jump_net)
    await kernel.settings.update({"network.deny": "127.0.0.1/32"})
    seen = len(jump_net.target.log())
    async with client.websocket(
        socket_path("ssh", ticket_for(kernel, user), target["id"])
    ) as socket:
        screen = Screen(socket)
        assert await screen.until_closed() == 4003
    assert "Accepted password" not in jump_net.target.log()[seen:]
    response = await client.get(f"{API}/audit?eventType=network.denied", headers=admin.headers)
    [denied] = (await response.get_json())["entries"]
    assert denied["target"] == f"127.0.0.1:{jump_net.target.port}"


async def guest_through_bastion(
    client: Any, owner: Any, guest: Any, net: Any
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The owner's bastion, shared with everyone, and the guest's own connection to the
    inner host through it."""
    jump = await create(
        client, owner, name="bastion", protocol="ssh", host=net.jump.host, port=net.jump.port,
        username=net.jump.username, password=net.jump.password, shared=True,
    )  # fmt: skip
    target = await create(
        client, guest, name="inner", protocol="ssh", host=net.target.host,
        port=net.target.port, username=net.target.username, password=net.target.password,
        jumpHostId=jump["id"],
    )  # fmt: skip
    return jump, target


def through(client: Any, kernel: Any, user: Any, target: dict[str, Any]) -> Any:
    return client.websocket(socket_path("ssh", ticket_for(kernel, user), target["id"]))


async def test_unsharing_a_jump_host_closes_the_sessions_through_it(
    client, kernel, make_user, jump_net
):
    """Only the final target used to be re-checked: a guest's own connection through a
    bastion that is no longer shared with them stayed open."""
    from hostgate.db.models.connections import Connection

    owner = await make_user("owner")
    guest = await make_user("guest")
    jump, target = await guest_through_bastion(client, owner, guest, jump_net)
    async with through(client, kernel, guest, target) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        unshared = await client.put(
            f"{API}/connections/{jump['id']}", headers=owner.headers, json={"shared": False}
        )
        assert unshared.status_code == 200
        assert await screen.until_closed() == 4003
        assert screen.messages[-1] == {
            "type": "error",
            "message": "the jump host 'bastion' is no longer shared with you",
            "reason": "not_shared",
        }
    # the periodic check finds it too (the sharing flag changed behind the API's back)
    await client.put(
        f"{API}/connections/{jump['id']}", headers=owner.headers, json={"shared": True}
    )
    async with through(client, kernel, guest, target) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        async with kernel.db.session() as db:
            row = await db.get(Connection, jump["id"])
            row.shared = False
            db.add(row)
            await db.commit()
        for session in kernel.terminal_sessions.all():
            await session.enforce_access()  # what the sessions' ticker does every 30 s
        assert await screen.until_closed() == 4003
        assert screen.messages[-1]["reason"] == "not_shared"
        assert "'bastion'" in screen.messages[-1]["message"]


async def test_a_revoked_or_expired_access_to_a_jump_host_closes_the_sessions_through_it(
    client, kernel, make_user, jump_net
):
    from datetime import timedelta

    from hostgate.timefmt import utcnow
    from hostgate_access.models import AccessRequest
    from hostgate_access.plugin import service

    owner = await make_user("owner")
    guest = await make_user("guest")
    approver = await make_user("approver", permissions=["access.approve"])
    jump = await create(
        client, owner, name="bastion", protocol="ssh", host=jump_net.jump.host,
        port=jump_net.jump.port, username=jump_net.jump.username,
        password=jump_net.jump.password, shared=True, approvalRequired=True,
    )  # fmt: skip

    async def approved() -> str:
        body = {"connectionId": jump["id"], "minutes": 30, "reason": "INC-7"}
        asked = await client.post(f"{API}/access-requests", headers=guest.headers, json=body)
        assert asked.status_code == 201, await asked.get_json()
        request_id = (await asked.get_json())["request"]["id"]
        decided = await client.post(
            f"{API}/access-requests/{request_id}/approve", headers=approver.headers, json={}
        )
        assert decided.status_code == 200
        return str(request_id)

    request_id = await approved()
    # the guest's own connection through it (storing one needs the access too)
    target = await create(
        client, guest, name="inner", protocol="ssh", host=jump_net.target.host,
        port=jump_net.target.port, username=jump_net.target.username,
        password=jump_net.target.password, jumpHostId=jump["id"],
    )  # fmt: skip
    async with through(client, kernel, guest, target) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        revoked = await client.post(
            f"{API}/access-requests/{request_id}/revoke", headers=approver.headers, json={}
        )
        assert revoked.status_code == 200
        assert await screen.until_closed() == 4003
        assert screen.messages[-1] == {
            "type": "error",
            "message": "your access to the jump host 'bastion' ended",
            "reason": "access_ended",
        }

    request_id = await approved()
    async with through(client, kernel, guest, target) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        async with kernel.db.session() as db:
            row = await db.get(AccessRequest, request_id)
            row.ends_at = utcnow() - timedelta(seconds=1)
            db.add(row)
            await db.commit()
        assert await service(kernel).sweep() == 1
        assert await screen.until_closed() == 4003
        assert screen.messages[-1]["reason"] == "access_ended"
        assert "'bastion'" in screen.messages[-1]["message"]


async def test_an_open_sftp_session_through_a_jump_host_closes_when_the_hop_is_unshared(
    client, kernel, make_user, jump_net
):
    """The file routes keep their SFTP connection open between requests: it goes through
    the bastion too, so losing the bastion closes it (on the change, and periodically)."""
    import asyncio

    from hostgate.db.models.connections import Connection

    owner = await make_user("owner")
    guest = await make_user("guest")
    jump = await create(
        client, owner, name="bastion", protocol="ssh", host=jump_net.jump.host,
        port=jump_net.jump.port, username=jump_net.jump.username,
        password=jump_net.jump.password, shared=True,
    )  # fmt: skip
    target = await create(
        client, guest, name="inner files", protocol="sftp", host=jump_net.target.host,
        port=jump_net.target.port, username=jump_net.target.username,
        password=jump_net.target.password, jumpHostId=jump["id"],
    )  # fmt: skip
    listing = f"{API}/sftp/{target['id']}/list"

    async def listed() -> int:
        response = await client.post(listing, headers=guest.headers, json={"path": "."})
        return int(response.status_code)

    async def until_closed() -> None:
        for _ in range(200):
            if kernel.files.open_count() == 0:
                return
            await asyncio.sleep(0.05)
        raise AssertionError("the SFTP session through the bastion stayed open")

    assert await listed() == 200
    assert kernel.files.open_count() == 1
    unshared = await client.put(
        f"{API}/connections/{jump['id']}", headers=owner.headers, json={"shared": False}
    )
    assert unshared.status_code == 200
    await until_closed()
    assert await listed() == 404  # the hop is invisible to the guest now

    await client.put(
        f"{API}/connections/{jump['id']}", headers=owner.headers, json={"shared": True}
    )
    assert await listed() == 200
    assert kernel.files.open_count() == 1
    async with kernel.db.session() as db:
        row = await db.get(Connection, jump["id"])
        row.shared = False
        db.add(row)
        await db.commit()
    assert await kernel.files.recheck() == 1  # what runs every 30 s
    assert kernel.files.open_count() == 0
