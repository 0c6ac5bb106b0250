"""Input that cannot be delivered ends the session with a reason, never a bare close.

The real-peer case (an Xvnc killed while noVNC-style input flows) is in the vnc
pack's ``test_vnc_live.py``: there the read side's "Connection closed" wins. This
backend, in addition, never reports an end on its read side, so the write's own
failure must close the socket after the grace. And should the socket's input path
itself raise (a bug), the browser is told so (1011) and the log says where.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
import websockets
from hostgate import ConnectionTarget, ProtocolSpec, hookimpl
from hostgate.services.sessions import remote_session
from hostgate.ws import relay as relay_socket

from tests.services.sessions import localshell


class DeafStream:
    """A relay whose server vanished: writes are reset, reads never end."""

    def __init__(self) -> None:
        self.writes = 0
        self.closed = asyncio.Event()

    async def read(self) -> bytes:
        await self.closed.wait()
        return b""

    async def write(self, data: bytes) -> None:
        self.writes += 1
        raise ConnectionResetError(104, "Connection reset by peer")

    async def close(self) -> None:
        self.closed.set()


STREAMS: list[DeafStream] = []


async def open_stream(kernel: Any, target: ConnectionTarget) -> DeafStream:
    stream = DeafStream()
    STREAMS.append(stream)
    return stream


class DeafRelayPack:
    @hookimpl
    def register_protocols(self) -> list[ProtocolSpec]:
        return [ProtocolSpec(name="deafrelay", default_port=1, open_stream=open_stream)]

    @hookimpl
    def register_permissions(self) -> dict[str, list[str]]:
        return {"connections": ["connections.use_deafrelay"]}


@pytest.fixture
def plugins() -> list[object]:
    return [localshell, DeafRelayPack()]


async def deaf_socket(live_server: Any, make_user: Any, make_connection: Any) -> tuple[Any, str]:
    """A user and the URL (with a ticket) of a socket to their deafrelay connection."""
    STREAMS.clear()
    user = await make_user("alice")
    connection = await make_connection(user, "deafrelay", "127.0.0.1", 1)
    async with httpx.AsyncClient(base_url=live_server.url) as http:
        response = await http.post("/api/v1/auth/ws-ticket", headers=user.headers)
        ticket = response.json()["ticket"]
    return user, f"{live_server.ws_url}/ws/deafrelay/{connection.id}?ticket={ticket}"


async def test_a_write_the_server_refuses_closes_the_socket_as_a_lost_connection(
    live_server, make_user, make_connection, monkeypatch, caplog
):
    monkeypatch.setattr(remote_session, "INPUT_FAILURE_GRACE", 0.2)
    user, url = await deaf_socket(live_server, make_user, make_connection)
    async with websockets.connect(url) as socket:
        for _ in range(5):
            await socket.send(b"input")
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(socket.recv(), 10)
    received = closed.value.rcvd
    assert received is not None
    assert (received.code, received.reason) == (
        4003,
        "Connection lost: [Errno 104] Connection reset by peer",
    )
    [stream] = STREAMS
    assert stream.writes == 1  # input after the failure is dropped, not retried
    assert stream.closed.is_set()
    assert "Task exception was never retrieved" not in caplog.text

    async with httpx.AsyncClient(base_url=live_server.url) as http:
        response = await http.get("/api/v1/sessions", headers=user.headers)
    [entry] = response.json()["sessions"]
    assert entry["endedAt"] is not None


async def test_a_bug_in_a_sockets_input_closes_it_as_an_internal_error(
    live_server, make_user, make_connection, monkeypatch, caplog
):
    async def broken(session: Any) -> None:
        await input_arrives.wait()
        raise RuntimeError("a bug in the input path")

    input_arrives = asyncio.Event()
    monkeypatch.setattr(relay_socket, "_receive_forever", broken)
    _, url = await deaf_socket(live_server, make_user, make_connection)
    async with websockets.connect(url) as socket:
        input_arrives.set()
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await asyncio.wait_for(socket.recv(), 10)
    received = closed.value.rcvd
    assert received is not None
    assert (received.code, received.reason) == (1011, "Internal error")
    assert "unhandled error in a socket's input" in caplog.text
    assert "a bug in the input path" in caplog.text
    assert "Task exception was never retrieved" not in caplog.text
