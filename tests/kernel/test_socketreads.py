"""hypercorn reads client sockets in big chunks once the app is created."""

from __future__ import annotations

import asyncio

import hypercorn.asyncio.tcp_server as tcp_server
from hostgate import socketreads
from hostgate.app import create_app
from hostgate.config import Config
from hypercorn.config import Config as HyperConfig


async def test_created_app_makes_hypercorn_read_big_chunks(config: Config) -> None:
    """After ``create_app`` a connection reads up to 256 KiB and buffers 1 MiB before pausing."""
    create_app(config)
    assert tcp_server.MAX_RECV == socketreads.READ_BYTES

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    transport, _ = await loop.create_datagram_endpoint(asyncio.DatagramProtocol, ("127.0.0.1", 0))
    try:
        writer = asyncio.StreamWriter(transport, asyncio.Protocol(), reader, loop)  # type: ignore[arg-type]
        tcp_server.TCPServer(None, loop, HyperConfig(), None, {}, reader, writer)  # type: ignore[arg-type]
    finally:
        transport.close()
    assert reader._limit == socketreads.BUFFER_LIMIT  # type: ignore[attr-defined]
