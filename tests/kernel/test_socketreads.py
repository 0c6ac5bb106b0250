"""hypercorn reads client sockets in big chunks once the app is created."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import random
from collections.abc import AsyncIterator
from typing import Any

import hypercorn.asyncio.tcp_server as tcp_server
import hypercorn.protocol.h11 as h11_protocol
import pytest
from hostgate._compat import hypercorn as socketreads
from hostgate._compat import patches_enabled
from hostgate.app import create_app
from hostgate.chunkreader import ChunkReader
from hostgate.config import Config
from hypercorn.asyncio import serve
from hypercorn.config import Config as HyperConfig
from hypercorn.events import RawData

from testsupport.peers import free_port


async def test_created_app_makes_hypercorn_read_big_chunks(config: Config) -> None:
    """After ``create_app`` a connection reads up to 256 KiB and buffers 1 MiB before pausing
    (with the compat patches off: hypercorn's own reads and asyncio's default buffer)."""
    create_app(config)
    patched = patches_enabled()
    assert (
        socketreads.READ_BYTES if patched else socketreads._original_max_recv
    ) == tcp_server.MAX_RECV

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, ("127.0.0.1", 0))
    try:
        writer = asyncio.StreamWriter(transport, asyncio.Protocol(), reader, loop)  # type: ignore[arg-type]
        tcp_server.TCPServer(None, loop, HyperConfig(), None, {}, reader, writer)  # type: ignore[arg-type]
    finally:
        transport.close()
    limit = reader._limit  # type: ignore[attr-defined]
    assert limit == (socketreads.BUFFER_LIMIT if patched else asyncio.StreamReader()._limit)  # type: ignore[attr-defined]


# -- request bodies pass h11 by ------------------------------------------------


@contextlib.asynccontextmanager
async def echo_server(bodies: list[list[bytes]]) -> AsyncIterator[int]:
    """hypercorn (patched as the gateway runs it) serving an app that keeps each request's
    body messages and answers with the body's length and SHA-256."""
    socketreads.install()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (message := await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        pieces: list[bytes] = []
        while True:
            message = await receive()
            pieces.append(message.get("body", b""))
            if not message.get("more_body"):
                break
        bodies.append(pieces)
        data = b"".join(pieces)
        answer = f"{len(data)} {hashlib.sha256(data).hexdigest()}".encode()
        headers = [(b"content-length", str(len(answer)).encode())]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": answer})

    port = free_port()
    config = HyperConfig()
    config.bind = [f"127.0.0.1:{port}"]
    stop = asyncio.Event()
    task = asyncio.create_task(serve(app, config, shutdown_trigger=stop.wait))  # type: ignore[arg-type]
    try:
        for _ in range(200):
            try:
                _, writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                await asyncio.sleep(0.05)
                continue
            writer.close()
            break
        yield port
    finally:
        stop.set()
        await asyncio.wait_for(task, 30)


def expected(data: bytes) -> bytes:
    return f"{len(data)} {hashlib.sha256(data).hexdigest()}".encode()


async def answer(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200")
    length = int(
        next(
            line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        ).split(b":")[1]
    )
    return await reader.readexactly(length)


async def test_body_pieces_reach_the_app_as_received_and_the_next_request_still_parses(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    received: list[bytes] = []
    delivered: list[bytes] = []
    patched = patches_enabled()

    async def spy(self: Any, event: Any) -> None:
        if isinstance(event, RawData):
            received.append(event.data)
        await (socketreads._handle if patched else socketreads._original_handle)(self, event)

    feed = ChunkReader.feed_data
    monkeypatch.setattr(
        ChunkReader, "feed_data", lambda self, data: (delivered.append(data), feed(self, data))[1]
    )

    bodies: list[list[bytes]] = []
    payload = random.Random(5).randbytes(3 * 1024 * 1024 + 777)
    second = b"the next request's body"
    async with echo_server(bodies) as port:
        monkeypatch.setattr(h11_protocol.H11Protocol, "handle", spy)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        head = f"POST /up HTTP/1.1\r\nHost: x\r\nContent-Length: {len(payload)}\r\n\r\n"
        writer.write(head.encode() + payload[:1000])  # headers and the body's start together
        await writer.drain()
        for start in range(1000, len(payload) - 5000, 200_000):
            writer.write(payload[start : min(start + 200_000, len(payload) - 5000)])
            await writer.drain()
            await asyncio.sleep(0.01)  # separate reads on the server
        # the body's end and a whole second request in one write: h11 parses them
        follow = f"POST /again HTTP/1.1\r\nHost: x\r\nContent-Length: {len(second)}\r\n\r\n"
        writer.write(payload[len(payload) - 5000 :] + follow.encode() + second)
        await writer.drain()
        assert await answer(reader) == expected(payload)
        assert await answer(reader) == expected(second)
        writer.close()
    assert b"".join(bodies[0]) == payload  # in order, nothing lost or repeated
    assert b"".join(bodies[1]) == second
    if not patched:
        return  # hypercorn and h11 as they ship: the body arrives whole, copied
    # the pieces in between are the very objects the transport delivered (ChunkReader)
    # and hypercorn read (passing h11 by): nothing copied them on the way
    passed = [piece for piece in bodies[0] if piece and any(piece is raw for raw in received)]
    assert sum(map(len, passed)) > len(payload) // 2
    assert all(any(piece is data for data in delivered) for piece in passed)


async def test_an_expect_continue_body_and_a_chunked_body_arrive_whole() -> None:
    bodies: list[list[bytes]] = []
    payload = random.Random(6).randbytes(600_000)
    async with echo_server(bodies) as port:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            f"POST /up HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
            f"Content-Length: {len(payload)}\r\n\r\n".encode()
        )
        await writer.drain()
        assert (await reader.readuntil(b"\r\n\r\n")).startswith(b"HTTP/1.1 100")
        for start in range(0, len(payload), 100_000):
            writer.write(payload[start : start + 100_000])
            await writer.drain()
            await asyncio.sleep(0.01)
        assert await answer(reader) == expected(payload)
        chunked = b"".join(
            b"%x\r\n%s\r\n" % (len(part), part) for part in (payload[:300_000], payload[300_000:])
        )
        writer.write(b"POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        writer.write(chunked + b"0\r\n\r\n")
        await writer.drain()
        assert await answer(reader) == expected(payload)
        writer.close()
    assert [b"".join(body) for body in bodies] == [payload, payload]
