"""A hostile VNC server: an oversized rectangle, a huge colour map, 2^31 bytes of cut text.

The relay interprets nothing after the handshake, so no length a server announces
is ever multiplied, allocated or waited for by the gateway: the bytes pass through
in bounded pieces, ``/health`` answers meanwhile, the gateway's memory stays
bounded, and when the server gives up the session closes with its reason.
"""

from __future__ import annotations

import asyncio
import struct

import pytest

from plugins.vnc.tests.test_vnc_relay import events, server_init, vnc_path
from testsupport.hostile.memory import peak_growth
from testsupport.hostile.vnc import HEADERS, NAME, PAYLOAD, HostileVnc
from testsupport.wire import Wire


async def relay_everything(wire: Wire) -> int:
    """Play noVNC through the handshake, ask for an update, read until the close."""
    assert await wire.read(12) == b"RFB 003.008\n"
    await wire.send(b"RFB 003.008\n")
    assert await wire.read(2) == bytes([1, 1])
    await wire.send(bytes([1]))
    assert await wire.read(4) == bytes(4)
    await wire.send(bytes([1]))
    assert await server_init(wire) == (800, 600, NAME)
    await wire.send(struct.pack(">BBHHHH", 3, 0, 0, 0, 800, 600))
    received = 0
    while await wire.pump():
        received += len(wire.buffer)
        wire.buffer.clear()  # noVNC consumes what it gets
    assert wire.closed is not None
    return received


@pytest.mark.parametrize("attack", sorted(HEADERS))
async def test_a_hostile_vnc_server_cannot_make_the_gateway_buffer_or_fall(
    client, kernel, make_user, make_connection, hostile_vnc: HostileVnc, attack: str
):
    hostile_vnc.attack = attack
    user = await make_user("alice")
    connection = await make_connection(user, "vnc", hostile_vnc.host, hostile_vnc.port)
    with peak_growth() as growth:
        async with client.websocket(vnc_path(kernel, user, connection.id)) as socket:
            wire = Wire(socket)
            relayed = asyncio.ensure_future(relay_everything(wire))
            while not relayed.done():
                assert (await client.get("/health")).status_code == 200
                await asyncio.sleep(0.05)
            received = relayed.result()
    # the announced lengths (17 GB of pixels, 2 GiB of text) were never waited for:
    # what the server sent went through, and the session ended when the server left
    assert received == len(HEADERS[attack]) + PAYLOAD == len(HEADERS[attack]) + hostile_vnc.sent
    assert wire.closed == 1000
    [ended] = await events(client, user, "connection.session_ended")
    assert ended["details"]["reason"] == "Connection closed"
    assert growth.grown < PAYLOAD, growth
