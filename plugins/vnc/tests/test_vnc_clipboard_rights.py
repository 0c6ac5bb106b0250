"""Clipboard rights in the VNC relay against a real Xvnc and its X clipboard.

A socket speaks RFB as a browser would. With copy denied, the desktop's clipboard
never reaches the socket (while a socket on an allowing connection gets it); with
paste denied, the browser's cut text never reaches the X clipboard (while an allowed
one does). Messages on one RFB stream are handled in order, so a framebuffer update
answered after a cut text proves the server has handled (or sent) what came before.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import websockets

from plugins.vnc.tests.test_vnc_live import receive_exactly, ticket
from tests.services.sessions.live import live_server  # noqa: F401
from testsupport.xdisplay import Clipboard
from testsupport.xvnc import TEST_PASSWORD, XvncServer

ENC_RAW = 0
ENC_EXTENDED_CLIPBOARD = -1063131698
ROUND_TRIP_TIMEOUT = 20.0


@pytest.fixture
def x_clipboard(xvnc: XvncServer) -> Iterator[Clipboard]:
    clipboard = Clipboard(xvnc.display)
    yield clipboard
    clipboard.close()


class Rfb:
    """One RFB session through the gateway's socket, as a browser would speak it."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.buffer = bytearray()
        self.bpp = 4

    async def read(self, count: int) -> bytes:
        return await receive_exactly(self.socket, self.buffer, count)

    async def start(self, encodings: list[int]) -> None:
        assert await self.read(12) == b"RFB 003.008\n"
        await self.socket.send(b"RFB 003.008\n")
        assert await self.read(2) == bytes([1, 1])  # the gateway offers None
        await self.socket.send(bytes([1]))
        assert await self.read(4) == bytes(4)
        await self.socket.send(bytes([1]))  # ClientInit: shared
        head = await self.read(24)
        self.bpp = head[4] // 8
        (name_length,) = struct.unpack(">I", head[20:24])
        await self.read(name_length)
        await self.socket.send(struct.pack(f">BxH{len(encodings)}i", 2, len(encodings), *encodings))

    async def paste(self, text: str) -> None:
        data = text.encode("latin-1")
        await self.socket.send(struct.pack(">Bxxxi", 6, len(data)) + data)

    async def round_trip(self) -> list[bytes]:
        """Ask for a 1x1 update; the cut texts that came before it."""
        await self.socket.send(struct.pack(">BBHHHH", 3, 0, 0, 0, 1, 1))
        texts: list[bytes] = []
        while True:
            (kind,) = await self.read(1)
            if kind == 0:
                (count,) = struct.unpack(">xH", await self.read(3))
                for _ in range(count):
                    _x, _y, w, h, encoding = struct.unpack(">HHHHi", await self.read(12))
                    assert encoding == ENC_RAW, encoding
                    await self.read(w * h * self.bpp)
                return texts
            if kind == 3:
                (length,) = struct.unpack(">xxxi", await self.read(7))
                texts.append(await self.read(abs(length)))
            elif kind == 1:
                (count,) = struct.unpack(">xxxH", await self.read(5))
                await self.read(6 * count)
            else:
                assert kind == 2, f"unexpected server message {kind}"


@contextlib.asynccontextmanager
async def rfb(server: Any, user: Any, connection: Any, encodings: list[int]) -> AsyncIterator[Rfb]:
    url = f"{server.ws_url}/ws/vnc/{connection.id}?ticket={await ticket(server, user)}"
    async with websockets.connect(url, max_size=None) as socket:
        session = Rfb(socket)
        await session.start(encodings)
        yield session


async def vnc_connection(kernel: Any, make_connection: Any, user: Any, xvnc: Any, **actions: bool):
    from hostgate.db.models.connections import Connection

    connection = await make_connection(
        user, "vnc", xvnc.host, xvnc.port, password=TEST_PASSWORD, name=f"desk {actions}"
    )
    async with kernel.db.session() as session:
        row = await session.get(Connection, connection.id)
        row.actions = actions
        session.add(row)
        await session.commit()
    return connection


async def refusals(kernel: Any, user: Any) -> list[str]:
    from hostgate.db.models.audit import AuditEntry as Entry
    from sqlmodel import select

    for _ in range(100):  # audited off the relay's path: a moment later
        async with kernel.db.session() as session:
            rows = (
                await session.exec(
                    select(Entry).where(
                        Entry.event_type == "session.action_denied", Entry.user_id == user.id
                    )
                )
            ).all()
        if rows:
            return sorted(str(r.details.get("action")) for r in rows)
        await asyncio.sleep(0.05)
    return []


async def test_copy_denied_keeps_the_desktop_clipboard_from_the_browser(
    live_server,  # noqa: F811
    kernel,
    make_user,
    make_connection,
    xvnc,
    x_clipboard,
):
    user = await make_user("alice")
    allowed = await vnc_connection(kernel, make_connection, user, xvnc)
    denied = await vnc_connection(kernel, make_connection, user, xvnc, copy=False)
    secret = "copied on the desktop 42"
    async with (
        rfb(live_server, user, allowed, [ENC_RAW]) as open_side,
        rfb(live_server, user, denied, [ENC_RAW, ENC_EXTENDED_CLIPBOARD]) as closed_side,
    ):
        await open_side.round_trip()
        await closed_side.round_trip()
        await asyncio.to_thread(x_clipboard.set, secret)

        async def until_copied() -> None:
            while not any(secret.encode() in text for text in await open_side.round_trip()):
                await asyncio.sleep(0.1)

        await asyncio.wait_for(until_copied(), ROUND_TRIP_TIMEOUT)
        # Xvnc sent the same text to both sessions before this update
        assert await closed_side.round_trip() == []
    assert await refusals(kernel, user) == ["copy"]


async def test_paste_denied_never_reaches_the_x_clipboard(
    live_server,  # noqa: F811
    kernel,
    make_user,
    make_connection,
    xvnc,
    x_clipboard,
):
    user = await make_user("bob")
    denied = await vnc_connection(kernel, make_connection, user, xvnc, paste=False)
    allowed = await vnc_connection(kernel, make_connection, user, xvnc)
    # Xvnc serves a client's cut text only while that client is connected (it gives the
    # selection up when the client leaves), so the X clipboard is read inside each session
    async with rfb(live_server, user, denied, [ENC_RAW]) as session:
        await session.paste("refused paste")
        await session.round_trip()
        assert await asyncio.to_thread(x_clipboard.get) != "refused paste"
    assert await refusals(kernel, user) == ["paste"]

    async with rfb(live_server, user, allowed, [ENC_RAW]) as session:
        await session.paste("allowed paste")
        await session.round_trip()
        assert await asyncio.to_thread(x_clipboard.wait_for, "allowed paste") == "allowed paste"
