"""A hostile VNC (RFB 3.8) server on 127.0.0.1, run in the test's event loop.

It completes a normal handshake (security None) and ServerInit (800x600), then, on
the client's first FramebufferUpdateRequest, sends what its ``attack`` names and
closes the connection:

- ``rectangle``: a FramebufferUpdate whose one Raw rectangle is 65535x65535 at
  (65535, 65535) (width*height*4 overflows 32 bits, far outside the framebuffer);
- ``colour-map``: SetColourMapEntries for 65535 colours from colour 65535;
- ``cut-text``: ServerCutText announcing 2^31 bytes.

After the header it streams ``PAYLOAD`` bytes of filler (never what was announced)
in 64 KiB pieces, each waiting for the socket to drain; ``sent`` counts them.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

PAYLOAD = 24 * 1024 * 1024
WIDTH, HEIGHT = 800, 600
NAME = b"hostile-desktop"
PIXEL_FORMAT = struct.pack(">BBBBHHHBBBxxx", 32, 24, 0, 1, 255, 255, 255, 16, 8, 0)
HEADERS = {
    "rectangle": struct.pack(">BxH", 0, 1) + struct.pack(">HHHHi", 65535, 65535, 65535, 65535, 0),
    "colour-map": struct.pack(">BxHH", 1, 65535, 65535),
    "cut-text": struct.pack(">BxxxI", 3, 2**31),
}
CHUNK = 64 * 1024


@dataclass
class HostileVnc:
    """Where the hostile VNC server listens and what it has done."""

    port: int
    attack: str = "rectangle"
    host: str = "127.0.0.1"
    sent: int = 0
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            writer.write(b"RFB 003.008\n")
            await reader.readexactly(12)
            writer.write(bytes([1, 1]))  # one security type: None
            await reader.readexactly(1)
            writer.write(struct.pack(">I", 0))
            await reader.readexactly(1)  # ClientInit
            writer.write(struct.pack(">HH", WIDTH, HEIGHT) + PIXEL_FORMAT)
            writer.write(struct.pack(">I", len(NAME)) + NAME)
            await writer.drain()
            # wait for the first FramebufferUpdateRequest (type 3, 10 bytes)
            while True:
                kind = (await reader.readexactly(1))[0]
                if kind == 3:
                    await reader.readexactly(9)
                    break
                if kind == 0:
                    await reader.readexactly(19)
                elif kind == 2:
                    (count,) = struct.unpack(">xH", await reader.readexactly(3))
                    await reader.readexactly(4 * count)
                else:
                    return
            writer.write(HEADERS[self.attack])
            filler = bytes(CHUNK)
            while self.sent < PAYLOAD:
                writer.write(filler)
                await writer.drain()
                self.sent += CHUNK
        except (asyncio.IncompleteReadError, OSError):
            pass
        finally:
            writer.close()

    def handler(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Answer one connection in its own task."""
        task = asyncio.get_running_loop().create_task(self._answer(reader, writer))
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)


@pytest.fixture
async def hostile_vnc() -> AsyncIterator[HostileVnc]:
    """A hostile VNC server for one test; set ``attack`` before connecting."""
    peer = HostileVnc(port=0)
    server = await asyncio.start_server(peer.handler, "127.0.0.1", 0)
    peer.port = server.sockets[0].getsockname()[1]
    try:
        yield peer
    finally:
        server.close()
        for task in list(peer.tasks):
            task.cancel()
        await server.wait_closed()
