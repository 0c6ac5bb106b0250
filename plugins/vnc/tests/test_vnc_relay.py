"""The vnc relay against real Xvnc servers: the test plays noVNC on the gateway socket."""

from __future__ import annotations

import json
import struct
from typing import Any
from urllib.parse import urlencode

import pytest

from tests.services.sessions.helpers import ticket_for
from testsupport.peers import free_port
from testsupport.wire import Wire
from testsupport.xvnc import TEST_PASSWORD


def vnc_path(kernel: Any, user: Any, connection_id: str, *, in_query: bool = False) -> str:
    ticket = ticket_for(kernel, user)
    if in_query:
        return "/ws/vnc?" + urlencode({"ticket": ticket, "connectionId": connection_id})
    return f"/ws/vnc/{connection_id}?" + urlencode({"ticket": ticket})


async def server_init(wire: Wire) -> tuple[int, int, bytes]:
    """Read a ServerInit: (width, height, desktop name)."""
    head = await wire.read(24)
    width, height = struct.unpack(">HH", head[:4])
    (name_length,) = struct.unpack(">I", head[20:24])
    return width, height, await wire.read(name_length)


async def events(client: Any, user: Any, event_type: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1/audit?eventType={event_type}", headers=user.headers)
    return list((await response.get_json())["entries"])


async def test_handshake_completes_with_the_stored_password(
    client, kernel, make_user, make_connection, xvnc
):
    user = await make_user("alice")
    connection = await make_connection(
        user, "vnc", xvnc.host, xvnc.port, name="desk", password=TEST_PASSWORD
    )
    async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
        wire = Wire(socket)
        assert await wire.read(12) == b"RFB 003.008\n"
        await wire.send(b"RFB 003.008\n")
        # Only "None" is offered: the browser never sees a VNC password challenge.
        assert await wire.read(2) == bytes([1, 1])
        await wire.send(bytes([1]))
        assert await wire.read(4) == struct.pack(">I", 0)
        await wire.send(bytes([1]))  # ClientInit, shared
        assert await server_init(wire) == (800, 600, b"hostgate-vnc-test")
        # The relay keeps going after the handshake: ask for the whole screen.
        await wire.send(struct.pack(">BBHHHH", 3, 0, 0, 0, 800, 600))
        update = await wire.read(4)
        assert update[0] == 0  # FramebufferUpdate
        assert struct.unpack(">H", update[2:4])[0] >= 1

    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    [entry] = listed["sessions"]
    assert entry["protocol"] == "vnc"
    assert entry["connectionName"] == "desk"
    assert entry["hasRecording"] is True  # the gateway records VNC (recordings.enabled)
    [started] = await events(client, user, "connection.session_started")
    assert started["details"]["connectionId"] == connection.id
    assert TEST_PASSWORD not in str(started)


@pytest.mark.parametrize(("version", "minor"), [(b"RFB 003.003\n", 3), (b"RFB 003.007\n", 7)])
async def test_older_browser_protocol_versions(
    client, kernel, make_user, make_connection, xvnc, version, minor
):
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    async with client.websocket(vnc_path(kernel, user, connection.id, in_query=True)) as socket:
        wire = Wire(socket)
        assert await wire.read(12) == b"RFB 003.008\n"
        await wire.send(version)
        if minor == 3:
            assert await wire.read(4) == struct.pack(">I", 1)  # the server decides: None
        else:
            assert await wire.read(2) == bytes([1, 1])
            await wire.send(bytes([1]))  # 3.7 sends no SecurityResult for None
        await wire.send(bytes([0]))  # ClientInit, exclusive
        assert await server_init(wire) == (800, 600, b"hostgate-vnc-test")


async def test_server_without_authentication(client, kernel, make_user, make_connection, xvnc_open):
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc_open.host, xvnc_open.port)
    async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
        wire = Wire(socket)
        assert await wire.read(12) == b"RFB 003.008\n"
        await wire.send(b"RFB 003.008\n" + bytes([1]))  # version and choice in one frame
        assert await wire.read(6) == bytes([1, 1]) + struct.pack(">I", 0)
        await wire.send(bytes([1]))
        assert await server_init(wire) == (640, 480, b"hostgate-open-desktop")


async def test_wrong_stored_password_closes_cleanly(
    client, kernel, make_user, make_connection, xvnc
):
    user = await make_user("alice")
    connection = await make_connection(
        user, "vnc", xvnc.host, xvnc.port, password="not-the-password"
    )
    async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
        wire = Wire(socket)
        assert await wire.until_closed() == 4003
        assert wire.buffer == bytearray()  # nothing of the handshake reached the browser
    [failed] = await events(client, user, "connection.session_failed")
    assert failed["details"]["connectionId"] == connection.id
    assert "VNC authentication failed" in failed["details"]["error"]
    assert "not-the-password" not in str(failed)
    listed = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    assert listed["sessions"] == []


async def test_missing_password_is_reported(client, kernel, make_user, make_connection, xvnc):
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port)
    async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
        assert await Wire(socket).until_closed() == 4003
    [failed] = await events(client, user, "connection.session_failed")
    assert "none stored" in failed["details"]["error"]


async def test_unreachable_server(client, kernel, make_user, make_connection):
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", "127.0.0.1", free_port())
    async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
        assert await Wire(socket).until_closed() == 4003
    [failed] = await events(client, user, "connection.session_failed")
    assert "Cannot reach the VNC server" in failed["details"]["error"]


async def test_browser_asking_for_vnc_auth_is_refused(
    client, kernel, make_user, make_connection, xvnc
):
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
        wire = Wire(socket)
        assert await wire.read(12) == b"RFB 003.008\n"
        await wire.send(b"RFB 003.008\n")
        assert await wire.read(2) == bytes([1, 1])
        await wire.send(bytes([2]))
        status, length = struct.unpack(">II", await wire.read(8))
        assert status == 1
        assert b"None" in await wire.read(length)
        assert await wire.until_closed() == 4003


async def test_garbage_from_the_browser_closes(client, kernel, make_user, make_connection, xvnc):
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
        wire = Wire(socket)
        assert await wire.read(12) == b"RFB 003.008\n"
        await wire.send(b"GET / HTTP/1.1\r\n")
        assert await wire.until_closed() == 4003
    [ended] = await events(client, user, "connection.session_ended")
    assert "RFB protocol version" in ended["details"]["reason"]


async def test_tickets_permissions_and_ownership(client, kernel, make_user, make_connection, xvnc):
    owner = await make_user("alice")
    connection = await make_connection(owner, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    stranger = await make_user("mallory")
    blocked = await make_user("blocked", permissions=[])
    own_blocked = await make_connection(blocked, "vnc", xvnc.host, xvnc.port)
    not_vnc = await make_connection(owner, "telnet", xvnc.host, xvnc.port)
    cases = [
        (f"/ws/vnc/{connection.id}?ticket=not-a-ticket", 4001),
        (f"/ws/vnc/{connection.id}", 4001),
        (vnc_path(kernel, stranger, connection.id), 4002),
        (vnc_path(kernel, owner, "no-such-connection"), 4002),
        (vnc_path(kernel, owner, not_vnc.id), 4002),
        (vnc_path(kernel, blocked, own_blocked.id), 4003),
    ]
    for path, code in cases:
        async with client.websocket(path) as socket:
            wire = Wire(socket)
            assert await wire.until_closed() == code, path
            assert not wire.buffer, path
    listed = await (await client.get("/api/v1/sessions", headers=owner.headers)).get_json()
    assert listed["sessions"] == []


async def test_the_vnc_password_is_never_handed_to_the_browser(
    client, kernel, make_user, make_connection, xvnc
):
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    response = await client.get(
        f"/api/v1/connections/{connection.id}/session", headers=user.headers
    )
    body = await response.get_json()
    assert response.status_code == 200
    assert body["password"] is None
    assert body["passwordWithheld"] is True
    assert TEST_PASSWORD not in json.dumps(body)
