"""The vnc relay over a real hypercorn server with the ``websockets`` client (as noVNC)."""

from __future__ import annotations

import struct
from typing import Any

import httpx
import pytest
import websockets

from tests.services.sessions.live import live_server  # noqa: F401
from testsupport.xvnc import TEST_PASSWORD


async def ticket(server: Any, user: Any) -> str:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/api/v1/auth/ws-ticket", headers=user.headers)
        assert response.status_code == 200
        return str(response.json()["ticket"])


async def receive_exactly(socket: Any, buffer: bytearray, count: int) -> bytes:
    while len(buffer) < count:
        frame = await socket.recv()
        assert isinstance(frame, bytes)  # the relay sends binary frames only
        buffer += frame
    data = bytes(buffer[:count])
    del buffer[:count]
    return data


async def test_novnc_style_client_over_a_real_socket(live_server, make_user, make_connection, xvnc):  # noqa: F811
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD)
    url = f"{live_server.ws_url}/ws/vnc/{connection.id}?ticket={await ticket(live_server, user)}"
    async with websockets.connect(url) as socket:
        buffer = bytearray()
        assert await receive_exactly(socket, buffer, 12) == b"RFB 003.008\n"
        await socket.send(b"RFB 003.008\n")
        assert await receive_exactly(socket, buffer, 2) == bytes([1, 1])
        await socket.send(bytes([1]))
        assert await receive_exactly(socket, buffer, 4) == bytes(4)
        await socket.send(bytes([1]))
        head = await receive_exactly(socket, buffer, 24)
        assert struct.unpack(">HH", head[:4]) == (800, 600)


async def test_wrong_password_close_reason(live_server, make_user, make_connection, xvnc):  # noqa: F811
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", xvnc.host, xvnc.port, password="wrong-one")
    url = f"{live_server.ws_url}/ws/vnc/{connection.id}?ticket={await ticket(live_server, user)}"
    async with websockets.connect(url) as socket:
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await socket.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4003
    assert closed.value.rcvd.reason.startswith("VNC authentication failed")
