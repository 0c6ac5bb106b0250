"""Local port forwarding (``ssh -L``) through the door, where the connection allows it.

``ssh -L 5432:db.internal:5432 alice:prod-db@gateway`` asks the door for a
``direct-tcpip`` channel to ``db.internal:5432``. The door opens it from the
connection's own server (as ``ssh -L`` straight to that server would), through
``kernel.front_door.open_forward``: only on a connection whose
``allowPortForwarding`` field is on, after the access checks and the network policy;
every forward is audited (``connection.port_forward``: destination, bytes each way).
A refusal is the channel-open failure OpenSSH prints (``open failed: administratively
prohibited: <reason>``) and an ``sshd.session_refused`` entry.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

import asyncssh
from hostgate import ApiError, DoorStream, SessionClosed

from .channels import Pump

if TYPE_CHECKING:
    from .server import DoorConnection

log = logging.getLogger("hostgate.sshd")


async def open_forward(
    connection: DoorConnection, host: str, port: int
) -> asyncssh.SSHTCPSession[bytes]:
    """The session of an allowed forward, else ``ChannelOpenError`` with the reason."""
    ready = await connection.ready()
    if isinstance(ready, str):
        raise asyncssh.ChannelOpenError(asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, ready)
    caller, login = ready
    destination = f"{host}:{port}"
    try:
        stream = await connection.kernel.front_door.open_forward(
            caller, login.target, host, port, details=connection.details()
        )
    except (ApiError, SessionClosed) as refused:
        message = refused.message if isinstance(refused, ApiError) else refused.reason
        await connection.audit_refusal(f"forwarding to {destination}: {message}", login.target)
        raise asyncssh.ChannelOpenError(
            asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, message
        ) from None
    return ForwardSession(connection, stream)


def forward_requested(
    connection: DoorConnection, host: str, port: int
) -> Awaitable[asyncssh.SSHTCPSession[bytes]]:
    """What ``connection_requested`` answers: the forward, opened once checked."""
    return open_forward(connection, host, port)


class ForwardSession(asyncssh.SSHTCPSession[bytes]):
    """The client's ``direct-tcpip`` channel, pumped to the forwarded stream."""

    def __init__(self, connection: DoorConnection, stream: DoorStream) -> None:
        self.door_connection = connection
        self.stream = stream
        self.pump: Pump | None = None
        self.channel: asyncssh.SSHTCPChannel[bytes] | None = None

    def connection_made(self, chan: Any) -> None:
        """The channel is open: pump it."""
        self.channel = chan
        self.pump = Pump(self.door_connection, chan)

    def session_started(self) -> None:
        """Relay until either side ends."""
        self.door_connection.door.run_handler(self.relay())

    async def relay(self) -> None:
        """Pump until either side ends, then close both."""
        assert self.pump is not None
        try:
            await self.pump.pump(self.stream)
        except Exception:
            log.exception("a forwarded front-door stream failed")
        finally:
            await self.stream.close()
            if self.channel is not None:
                with contextlib.suppress(Exception):
                    self.channel.close()

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        """Client bytes."""
        if self.pump is not None:
            self.pump.received(data)

    def eof_received(self) -> bool:
        """The client sends no more: half-close towards the destination."""
        if self.pump is not None:
            self.pump.eof()
        return True

    def pause_writing(self) -> None:
        """The client's channel is full."""
        if self.pump is not None:
            self.pump.writable.clear()

    def resume_writing(self) -> None:
        """The client's channel takes more."""
        if self.pump is not None:
            self.pump.writable.set()

    def connection_lost(self, exc: Exception | None) -> None:
        """The client's channel closed."""
        if self.pump is not None:
            self.pump.lost()
        else:
            self.door_connection.door.spawn(self.stream.close())
