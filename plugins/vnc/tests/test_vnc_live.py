"""The vnc relay over a real hypercorn server with the ``websockets`` client (as noVNC)."""

from __future__ import annotations

import asyncio
import contextlib
import struct
from typing import Any

import httpx
import pytest
import websockets

from tests.services.sessions.live import live_server  # noqa: F401
from testsupport.peers import stop
from testsupport.xvnc import TEST_PASSWORD, start_xvnc


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


async def test_a_server_that_goes_away_while_the_browser_writes_closes_with_its_reason(
    live_server,  # noqa: F811
    make_user,
    make_connection,
    tmp_path,
    caplog,
):
    """Input racing the server's exit must not close the socket without a reason."""
    server = start_xvnc(
        tmp_path / "xvnc", password=None, width=320, height=240, desktop="hostgate-leaving"
    )
    try:
        user = await make_user("alice")
        connection = await make_connection(user, "vnc", server.host, server.port)
        token = await ticket(live_server, user)
        url = f"{live_server.ws_url}/ws/vnc/{connection.id}?ticket={token}"
        async with websockets.connect(url) as socket:
            buffer = bytearray()
            await receive_exactly(socket, buffer, 12)
            await socket.send(b"RFB 003.008\n")
            await receive_exactly(socket, buffer, 2)
            await socket.send(bytes([1]))
            await receive_exactly(socket, buffer, 4)
            await socket.send(bytes([1]))
            await receive_exactly(socket, buffer, 24)
            # incremental FramebufferUpdateRequests, as noVNC keeps sending, while the server dies
            request = struct.pack(">BBHHHH", 3, 1, 0, 0, 320, 240)

            async def keep_asking() -> None:
                while True:
                    await socket.send(request * 64)
                    await asyncio.sleep(0)

            asking = asyncio.create_task(keep_asking())
            await asyncio.sleep(0.2)
            server.process.kill()
            with pytest.raises(websockets.ConnectionClosed) as closed:
                while True:
                    await socket.recv()
            asking.cancel()
            with contextlib.suppress(asyncio.CancelledError, websockets.ConnectionClosed):
                await asking
    finally:
        stop(server.process)
    received = closed.value.rcvd
    assert received is not None
    assert (received.code, received.reason) == (1000, "Connection closed") or (
        received.code == 4003 and received.reason.startswith("Connection lost: ")
    ), (received.code, received.reason)
    assert "Task exception was never retrieved" not in caplog.text
