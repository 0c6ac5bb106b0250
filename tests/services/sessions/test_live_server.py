"""End to end over a real hypercorn server and the ``websockets`` client: close reasons
travel, and a browser that stops reading makes the gateway stop reading too.
"""

from __future__ import annotations

import asyncio
import json
import socket as socket_module
from typing import Any

import httpx
import pytest
import websockets


async def ticket(server: Any, user: Any) -> str:
    async with httpx.AsyncClient(base_url=server.url) as http:
        response = await http.post("/api/v1/auth/ws-ticket", headers=user.headers)
        assert response.status_code == 200
        return str(response.json()["ticket"])


async def test_close_code_and_reason_reach_the_client(live_server):
    url = f"{live_server.ws_url}/ws/localshell?ticket=bogus&connectionId=x"
    async with websockets.connect(url) as socket:
        first = json.loads(await socket.recv())
        assert first == {
            "type": "error",
            "message": "Invalid or expired ticket",
            "reason": "ticket_invalid",
        }
        with pytest.raises(websockets.ConnectionClosed) as closed:
            await socket.recv()
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4001
    assert closed.value.rcvd.reason == "Invalid or expired ticket"


async def wait_stalled(session: Any, timeout: float = 30.0) -> int:
    """Wait until the gateway stops reading output (two samples 0.5 s apart agree)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    previous = -1
    while loop.time() < deadline:
        current = session.bytes_out
        if current == previous and current > 0:
            return int(current)
        previous = current
        await asyncio.sleep(0.5)
    raise AssertionError(f"output never stalled ({session.bytes_out} bytes read)")


async def read_until_flowing(socket: Any, session: Any, stalled: int) -> bool:
    """Read output until the gateway reads from the backend again; False after 30 s."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30.0
    while loop.time() < deadline:
        for _ in range(50):
            await asyncio.wait_for(socket.recv(), 30)
        if session.bytes_out > stalled:
            return True
    return False


async def test_slow_client_pauses_the_backend(live_server, make_user, make_connection, tmp_path):
    user = await make_user("alice")
    await live_server.kernel.settings.update({"recordings.enabled": False})
    connection = await make_connection(
        user, "localshell", "127.0.0.1", 1, extra={"home": str(tmp_path)}
    )
    url = (
        f"{live_server.ws_url}/ws/localshell?ticket={await ticket(live_server, user)}"
        f"&connectionId={connection.id}&cols=80&rows=24"
    )
    # without permessage-deflate: `yes` compresses so well that the socket buffers would
    # hold gigabytes of it before filling up (the bound is on compressed bytes)
    # a small receive buffer, like a browser on a slow link
    raw = socket_module.socket()
    raw.setsockopt(socket_module.SOL_SOCKET, socket_module.SO_RCVBUF, 32 * 1024)
    raw.connect(("127.0.0.1", int(live_server.url.rsplit(":", 1)[1])))
    async with websockets.connect(
        url, sock=raw, max_queue=1, max_size=2**20, compression=None
    ) as socket:
        assert json.loads(await socket.recv()) == {"type": "status", "message": "Connected"}
        await socket.send(json.dumps({"type": "data", "data": "yes 0123456789abcdef\r"}))
        [session] = live_server.kernel.terminal_sessions.all()
        stalled = await wait_stalled(session)
        # nothing piles up in the gateway: at most the bounded queue of chunks
        assert session.attachment.queue.qsize() <= session.attachment.queue.maxsize
        await asyncio.sleep(1.0)
        assert session.bytes_out == stalled
        # reading again lets output flow again (how much must be read before the
        # gateway's socket drains below its low-water mark depends on the kernel's
        # buffer autotuning, so read until it moves, within a generous bound)
        assert await read_until_flowing(socket, session, stalled)
        # ending the session while the browser lags: the socket still closes, after
        # at most a few seconds for the queued output, with the session's code
        stalled_again = await wait_stalled(session)
        assert await live_server.kernel.terminal_sessions.terminate(session.id, "bye")
        assert session.ended and session.bytes_out == stalled_again
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await asyncio.wait_for(socket.recv(), 30)
        assert closed.value.rcvd is not None and closed.value.rcvd.code == 4003


async def test_an_oversized_inbound_message_closes_the_socket(
    live_server, make_user, make_connection, tmp_path
):
    from hostgate.commands.serve import WS_MAX_MESSAGE_BYTES

    user = await make_user("alice")
    connection = await make_connection(
        user, "localshell", "127.0.0.1", 1, extra={"home": str(tmp_path)}
    )
    url = (
        f"{live_server.ws_url}/ws/localshell?ticket={await ticket(live_server, user)}"
        f"&connectionId={connection.id}&cols=80&rows=24"
    )
    async with websockets.connect(url, compression=None) as socket:
        assert json.loads(await socket.recv()) == {"type": "status", "message": "Connected"}
        # a large paste (well over a kernel pipe buffer, below the limit) is typed in
        paste = "x" * (256 * 1024)
        await socket.send(
            json.dumps({"type": "data", "data": f"echo {len(paste)} > /dev/null #{paste}\r"})
        )
        await socket.send(json.dumps({"type": "data", "data": "echo still-$((1+1))\r"}))
        seen = b""
        while b"still-2" not in seen:
            frame = await asyncio.wait_for(socket.recv(), 30)
            if isinstance(frame, bytes):
                seen = (seen + frame)[-4096:]
        await socket.send("y" * (WS_MAX_MESSAGE_BYTES + 1))
        with pytest.raises(websockets.ConnectionClosed) as closed:
            while True:
                await asyncio.wait_for(socket.recv(), 30)
    assert closed.value.rcvd is not None and closed.value.rcvd.code == 1009
