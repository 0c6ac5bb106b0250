"""ProxyJump: ``ssh -J alice@gateway:2222 prod-db`` reaches a stored connection by name.

The client signs in to the door (``alice``, no target) and asks for a ``direct-tcpip``
channel to ``prod-db``. The gateway does not forward any bytes to a network address:
it answers the channel itself with an SSH server of its own (``InnerConnection``),
presenting the jump host key (one ed25519 key for every name, shown by
``GET /sshd/host-keys`` and ``hostgate sshd host-keys``). That inner connection is
signed in already by the outer one (it asks for no key or password: the channel
exists only inside the outer, authenticated connection) and then behaves exactly
like ``alice:prod-db``: the same sessions, checks and recording.

The destination is a connection's name or id that the user sees; the port must be
22 (what ``ssh -J`` asks by default) or the connection's own port. Anything else,
a raw TCP forward to an address, is refused with the reason and an audit entry.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import TYPE_CHECKING, Any, NoReturn, cast

import asyncssh
from hostgate import ApiError, DoorTarget

from .server import DoorConnection, LoginName

if TYPE_CHECKING:
    from .server import FrontDoorServer

log = logging.getLogger("hostgate.sshd")

SSH_PORT = 22
MAX_BUFFERED = 256 * 1024
"""What one side may hold for the other before the bridge is wired (the version lines)."""
INNER_HANDSHAKE_SECONDS = 30.0
"""From the channel's opening to the inner connection signed in: a key exchange, no user
input. Longer means something is stuck: the channel is closed, logged and audited."""


def direct_tcpip(outer: DoorConnection, dest_host: str, dest_port: int) -> Any:
    """The answer to a ``direct-tcpip`` request: a coroutine opening the inner server.

    Refusals raise ``ChannelOpenError``; OpenSSH prints its reason
    (``channel 0: open failed: administratively prohibited: ...``).
    """
    return _open(outer, dest_host, dest_port)


async def _open(
    outer: DoorConnection, dest_host: str, dest_port: int
) -> asyncssh.SSHTCPSession[bytes]:
    if outer.signing_in is not None:
        await asyncio.shield(outer.signing_in)
    caller, login = outer.caller, outer.login
    destination = f"{dest_host}:{dest_port}"[:200]
    if caller is None or login is None:
        raise asyncssh.ChannelOpenError(
            asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, outer.refused or "not signed in"
        )
    if login.target or isinstance(outer, InnerConnection):
        await _refuse(outer, destination, "port forwarding is not offered by this gateway")
    try:
        target = await outer.kernel.front_door.find_target(caller, dest_host)
    except ApiError as refused:
        message = (
            f"{dest_host}: {refused.message}; the gateway forwards no TCP, "
            "it reaches stored connections by name"
        )
        await _refuse(outer, destination, message)
    if dest_port not in (SSH_PORT, target.port):
        await _refuse(
            outer,
            destination,
            f"{target.name} is reached by ProxyJump on port {SSH_PORT} "
            f"(or {target.port}); port forwarding is not offered",
        )
    door = outer.door
    if door.jump_key is None:
        await _refuse(outer, destination, "ProxyJump is not set up on this node")
    return await _serve(door, outer, target, destination)


async def _refuse(outer: DoorConnection, destination: str, message: str) -> NoReturn:
    """Audit the refusal (``sshd.session_refused``) and refuse the channel with ``message``."""
    if outer.caller is not None:
        await outer.kernel.audit.record(
            "sshd.session_refused",
            actor=outer.caller,
            target=destination,
            details={**outer.details(), "channel": "direct-tcpip", "reason": message[:500]},
        )
    raise asyncssh.ChannelOpenError(asyncssh.OPEN_ADMINISTRATIVELY_PROHIBITED, message)


async def _serve(
    door: FrontDoorServer, outer: DoorConnection, target: DoorTarget, destination: str
) -> asyncssh.SSHTCPSession[bytes]:
    """Start the inner SSH server on one end of a socket pair; the channel gets the other.

    The inner handshake is bounded (``INNER_HANDSHAKE_SECONDS``); a failure closes the
    channel, with a log line and an ``sshd.session_refused`` entry.
    """
    loop = asyncio.get_running_loop()
    pipe = _Pipe()
    try:
        near, far = socket.socketpair()
    except OSError as exc:
        log.warning("ProxyJump to %s: no socket pair for the inner server: %s", target.name, exc)
        await _refuse(outer, destination, "the gateway could not start the inner SSH server")
    try:
        await loop.create_connection(lambda: pipe, sock=near)
    except OSError as exc:
        near.close()
        far.close()
        log.warning("ProxyJump to %s: the socket pair did not connect: %s", target.name, exc)
        await _refuse(outer, destination, "the gateway could not start the inner SSH server")
    options = {**door.options, "server_host_keys": [door.jump_key]}

    async def run() -> None:
        try:
            async with asyncio.timeout(INNER_HANDSHAKE_SECONDS):
                await asyncssh.run_server(
                    far, server_factory=lambda: InnerConnection(door, outer, target), **options
                )
        except TimeoutError:
            reason = (
                f"the ProxyJump connection to {target.name} did not complete its SSH "
                f"handshake within {INNER_HANDSHAKE_SECONDS:g} s; the channel was closed"
            )
            log.warning("%s (client %s)", reason, outer.client.ip_address)
            await _inner_failed(outer, pipe, far, destination, reason)
        except (asyncssh.Error, OSError) as exc:
            # the client went away or refused the inner host key: its own decision
            log.info("a ProxyJump connection to %s ended in its handshake: %s", target.name, exc)
            pipe.close()
            far.close()
        except Exception as exc:
            log.exception("the ProxyJump connection to %s failed", target.name)
            reason = f"the ProxyJump connection to {target.name} failed: {type(exc).__name__}"
            await _inner_failed(outer, pipe, far, destination, reason)

    door.spawn(run())
    return _Channel(pipe)


async def _inner_failed(
    outer: DoorConnection, pipe: _Pipe, far: socket.socket, destination: str, reason: str
) -> None:
    """Close both ends of a ProxyJump whose inner server failed, and audit why."""
    pipe.close()
    far.close()
    if outer.caller is not None:
        await outer.kernel.audit.record(
            "sshd.session_refused",
            actor=outer.caller,
            target=destination,
            details={**outer.details(), "channel": "direct-tcpip", "reason": reason[:500]},
        )


class _Pipe(asyncio.Protocol):
    """The gateway's end of the socket pair: what the inner server says goes to the channel.

    The inner server never half-closes: when its end is gone, so is the channel. The
    channel is then closed, not only sent EOF, as sshd closes a ``direct-tcpip``
    channel whose socket ended: OpenSSH's ``ssh -W`` (what ``ssh -J`` runs) waits for
    the server's close and never closes first. Were the channel left open, a jump
    process not killed by its parent (one started with SIGHUP ignored, as under
    ``nohup``) would outlive the session, keep the client's stderr open and hold the
    outer connection for ever.
    """

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.channel: asyncssh.SSHTCPChannel[bytes] | None = None
        self.pending: list[bytes] = []
        self.ended = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # a socket pair's stream transport; uvloop's (hostgate serve's loop) does not
        # subclass asyncio.Transport, so an isinstance check would refuse every ProxyJump
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.channel is None:  # the server's version line, before the channel opened
            self.pending.append(data)
            if sum(map(len, self.pending)) > MAX_BUFFERED and self.transport is not None:
                self.transport.pause_reading()
            return
        self.channel.write(data)

    def eof_received(self) -> bool:
        self._end()
        return False  # the transport closes: connection_lost

    def connection_lost(self, exc: Exception | None) -> None:
        self._end()

    def _end(self) -> None:
        """The inner server is done: EOF, then close the channel (once it is open)."""
        self.ended = True
        if self.channel is not None:
            with contextlib.suppress(Exception):  # the client may have closed it already
                self.channel.write_eof()
            self.channel.close()

    def close(self) -> None:
        """Close the gateway's end (the channel follows, through ``connection_lost``)."""
        if self.transport is not None:
            self.transport.close()
        else:
            self._end()

    def pause_writing(self) -> None:
        if self.channel is not None:
            self.channel.pause_reading()

    def resume_writing(self) -> None:
        if self.channel is not None:
            self.channel.resume_reading()

    def attach(self, channel: asyncssh.SSHTCPChannel[bytes]) -> None:
        self.channel = channel
        for data in self.pending:
            channel.write(data)
        self.pending.clear()
        if self.ended:  # the inner server ended before the channel opened
            self._end()
        elif self.transport is not None:
            self.transport.resume_reading()


class _Channel(asyncssh.SSHTCPSession[bytes]):
    """The client's side: what the client sends on the channel goes to the inner server."""

    def __init__(self, pipe: _Pipe) -> None:
        self.pipe = pipe

    def connection_made(self, chan: asyncssh.SSHTCPChannel[bytes]) -> None:  # type: ignore[override]
        self.pipe.attach(chan)

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        if self.pipe.transport is not None:
            self.pipe.transport.write(data)

    def eof_received(self) -> bool:
        if self.pipe.transport is not None and self.pipe.transport.can_write_eof():
            self.pipe.transport.write_eof()
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        if self.pipe.transport is not None:
            self.pipe.transport.close()

    def pause_writing(self) -> None:
        if self.pipe.transport is not None:
            self.pipe.transport.pause_reading()

    def resume_writing(self) -> None:
        if self.pipe.transport is not None:
            self.pipe.transport.resume_reading()


class InnerConnection(DoorConnection):
    """The SSH connection inside a ProxyJump channel: signed in as the outer one, one target."""

    def __init__(self, door: FrontDoorServer, outer: DoorConnection, target: DoorTarget) -> None:
        super().__init__(door)
        assert outer.login is not None
        self.outer = outer
        self.login = LoginName(user=outer.login.user, target=target.id)
        self.user = outer.user
        self.caller = outer.caller
        self.credential = outer.credential

    def connection_made(self, conn: asyncssh.SSHServerConnection) -> None:
        """Remember the outer connection's client (the socket pair has no address)."""
        super().connection_made(conn)
        self.client = self.outer.client

    async def begin_auth(self, username: str) -> bool:
        """No authentication: the outer connection signed the user in.

        The inner user name is ignored (``ssh -J`` sends the local one by default).
        """
        return False

    async def _closed(self) -> None:
        """End the terminals; the login session is the outer connection's to end."""
        for terminal in list(self.terminals):
            await terminal.close()
