"""TCP channels through SSH jump hosts, for every pack that speaks TCP to its target.

``open_tunnel`` connects the chain of jump hosts, asks the last one for a channel to
``host:port`` (``direct-tcpip``) and hands back one end of a socket pair whose other
end is pumped to and from that channel. A pack then uses an ordinary socket
(``asyncio.open_connection(sock=...)``, TLS included) and never sees SSH; closing its
socket closes the channel and the jump hosts' connections.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence

import asyncssh
from hostgate import ConnectionTarget, RemoteUnreachable

from .client import close_all, connect_chain

CHUNK = 256 * 1024
_pumps: set[asyncio.Task[None]] = set()


async def open_tunnel(hops: Sequence[ConnectionTarget], host: str, port: int) -> socket.socket:
    """A socket connected, through the jump hosts ``hops`` (outermost first), to host:port."""
    connections = await connect_chain(hops)
    try:
        remote_reader, remote_writer = await connections[-1].open_connection(host, port)
    except asyncssh.ChannelOpenError as exc:
        close_all(connections)
        raise RemoteUnreachable(
            f"jump host {hops[-1].name!r} cannot reach {host}:{port}: {exc.reason}"
        ) from None
    except BaseException:
        close_all(connections)
        raise
    ours, theirs = socket.socketpair()
    ours.setblocking(False)
    task = asyncio.get_running_loop().create_task(
        _pump(ours, remote_reader, remote_writer, connections)
    )
    _pumps.add(task)
    task.add_done_callback(_pumps.discard)
    return theirs


async def _pump(
    ours: socket.socket,
    remote_reader: asyncssh.SSHReader[bytes],
    remote_writer: asyncssh.SSHWriter[bytes],
    connections: Sequence[asyncssh.SSHClientConnection],
) -> None:
    """Copy both ways until one side is done, then close everything.

    The protocols carried (telnet, VNC, RDP, FTP) never half-close a connection and
    keep talking, so the end of either direction ends the tunnel.
    """
    local_reader, local_writer = await asyncio.open_connection(sock=ours, limit=CHUNK)

    async def to_remote() -> None:
        await _copy(local_reader.read, remote_writer.write, remote_writer.drain)
        remote_writer.write_eof()

    async def to_local() -> None:
        await _copy(remote_reader.read, local_writer.write, local_writer.drain)
        if local_writer.can_write_eof():
            local_writer.write_eof()

    directions = [asyncio.ensure_future(to_remote()), asyncio.ensure_future(to_local())]
    try:
        await asyncio.wait(directions, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for direction in directions:
            direction.cancel()
        # a side that went away raised OSError or asyncssh.Error: nothing more to say
        await asyncio.gather(*directions, return_exceptions=True)
        local_writer.close()
        remote_writer.close()
        close_all(connections)


async def _copy(
    read: Callable[[int], Awaitable[bytes]],
    write: Callable[[bytes], object],
    drain: Callable[[], Awaitable[None]],
) -> None:
    while True:
        data = await read(CHUNK)
        if not data:
            return
        write(data)
        await drain()
