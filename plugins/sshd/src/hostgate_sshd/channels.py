"""A session channel of the door: a shell or command, or a raw file-transfer channel.

``DoorProcess`` is asyncssh's server process for shells and commands (relayed by
``server.py`` as terminal sessions). The ``sftp`` subsystem and the file-transfer
commands (``transfers.py``: ``scp -t``/``-f``, ``rsync --server``, git's packs) are
taken over by a ``RawRelay`` instead: the bytes go unchanged to the same subsystem or
command on the target, through ``kernel.front_door.open_channel`` (every access check;
a file session), while a ``Scanner`` reads a copy and reports the file events.

Flow control both ways: the client's channel stops being read while ``INBOX_LIMIT``
bytes wait for the server, and the server's output is read only when the client's
channel takes more; the gateway's memory stays flat whatever the transfer's size.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from typing import TYPE_CHECKING, Any, Protocol

import asyncssh
from hostgate import ApiError, DoorChannel, SessionClosed

from .action_rights import FILE_ACTIONS, SftpGate, command_actions
from .agent import AGENT_FORWARDING, agent_allowed
from .scanning import FileEvent, Scanner
from .sftp_relay import SftpScanner
from .transfers import transfer_scanner

if TYPE_CHECKING:
    from .server import DoorConnection

log = logging.getLogger("hostgate.sshd")

INBOX_LIMIT = 1024 * 1024
"""Client bytes waiting for the server before the client's channel is paused."""
WRITE_BATCH = 256 * 1024
"""Client bytes joined into one write to the server."""
REFUSED_EXIT = 255
EVENT_QUEUE = 10_000
"""File events waiting to be stored; past this one is dropped (and logged), never the bytes."""


class DoorProcess(asyncssh.SSHServerProcess[bytes]):
    """asyncssh's server process, except for the channels relayed raw."""

    def __init__(
        self, connection: DoorConnection, factory: asyncssh.SSHServerProcessFactory[bytes]
    ) -> None:
        super().__init__(factory, None, 0, False)
        self.door_connection = connection
        self.door_channel: asyncssh.SSHServerChannel[bytes] | None = None
        self.raw: RawRelay | None = None
        self.refused_forwarding: list[str] = []
        self.started = False

    def connection_made(self, chan: Any) -> None:
        """Keep the channel (a raw relay writes to it)."""
        self.door_channel = chan
        super().connection_made(chan)

    def subsystem_requested(self, subsystem: str) -> bool:
        """``sftp`` is relayed raw; other subsystems are refused with a reason later."""
        if subsystem == "sftp" and self.door_channel is not None:
            self.raw = RawRelay(
                self.door_connection, self.door_channel, SftpScanner(), subsystem=subsystem
            )
            return True
        return bool(super().subsystem_requested(subsystem))

    def exec_requested(self, command: str) -> bool:
        """A file-transfer command is relayed raw; any other runs as a terminal session."""
        scanner = transfer_scanner(command)
        if scanner is not None and self.door_channel is not None:
            self.raw = RawRelay(self.door_connection, self.door_channel, scanner, command=command)
            return True
        return bool(super().exec_requested(command))

    def forwarding_requested(self, what: str) -> bool:
        """An agent or X11 forwarding request; False refuses it.

        Agent forwarding where allowed (``agent.py``); otherwise refused, and the user
        told so once the session started.
        """
        if what == AGENT_FORWARDING and agent_allowed(self.door_connection.kernel):
            return True
        if self.started:
            self.door_connection.door.spawn(self.door_connection.forwarding_refused(self, what))
        else:
            self.refused_forwarding.append(what)
        return False

    def say(self, message: str) -> None:
        """One ``hostgate:`` line on the client's stderr (its terminal, with a PTY)."""
        channel = self.door_channel
        if channel is None:
            return
        eol = "\r\n" if channel.get_terminal_type() else "\n"
        with contextlib.suppress(Exception):  # the client may have gone
            channel.write_stderr(f"hostgate: {message}{eol}".encode())

    def session_started(self) -> None:
        """Start the raw relay, or the process."""
        self.started = True
        for what in self.refused_forwarding:  # asked before the shell or command
            self.door_connection.door.spawn(self.door_connection.forwarding_refused(self, what))
        if self.raw is not None:
            self.raw.start()
        else:
            super().session_started()

    def data_received(self, data: bytes, datatype: asyncssh.DataType) -> None:
        """Client bytes."""
        if self.raw is not None:
            self.raw.received(data)
        else:
            super().data_received(data, datatype)

    def eof_received(self) -> bool:
        """The client's input ended (the channel stays half open for the answer)."""
        if self.raw is not None:
            self.raw.eof()
            return True
        return bool(super().eof_received())

    def pause_writing(self) -> None:
        """The client's channel is full: stop reading the server."""
        if self.raw is not None:
            self.raw.writable.clear()
        else:
            super().pause_writing()

    def resume_writing(self) -> None:
        """The client's channel takes more."""
        if self.raw is not None:
            self.raw.writable.set()
        else:
            super().resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        """The client's channel closed."""
        if self.raw is not None:
            self.raw.lost()
        super().connection_lost(exc)


class Peer(Protocol):
    """What a pump relays to: a ``DoorChannel`` or a ``DoorStream``."""

    async def read(self) -> bytes:
        """The far side's next bytes; ``b""`` at its end."""

    async def write(self, data: bytes) -> None:
        """Bytes for the far side."""

    async def write_eof(self) -> None:
        """The client sends no more."""

    async def close(self) -> None:
        """End the far side."""


class ClientChannel(Protocol):
    """The client's side of a pump: an asyncssh session or TCP channel."""

    def write(self, data: bytes) -> None:
        """Bytes for the client."""

    def pause_reading(self) -> None:
        """Stop taking the client's bytes."""

    def resume_reading(self) -> None:
        """Take the client's bytes again."""


class Pump:
    """Bytes between an asyncssh channel (the client) and a peer, both ways, flow-controlled.

    asyncssh's callbacks (``received``, ``eof``, ``lost``, ``writable``) feed it; the
    subclass opens the peer and runs ``pump``.
    """

    def __init__(self, connection: DoorConnection, chan: ClientChannel) -> None:
        self.connection = connection
        self.chan = chan
        self.writable = asyncio.Event()
        self.writable.set()
        self._inbox: deque[bytes] = deque()
        self._queued = 0
        self._reading_paused = False
        self._wake = asyncio.Event()
        self._eof = False
        self._lost = False
        self._peer: Peer | None = None

    # -- asyncssh callbacks (the event loop's thread, never blocking) -------------------

    def received(self, data: bytes) -> None:
        """Queue client bytes; pause the client's channel past ``INBOX_LIMIT``."""
        self._inbox.append(data)
        self._queued += len(data)
        self._wake.set()
        if self._queued >= INBOX_LIMIT and not self._reading_paused:
            self._reading_paused = True
            self.chan.pause_reading()

    def eof(self) -> None:
        """The client's input ended."""
        self._eof = True
        self._wake.set()

    def lost(self) -> None:
        """The client's channel closed: end the far side too."""
        self._lost = True
        self._wake.set()
        self.writable.set()
        peer = self._peer
        if peer is not None:
            self.connection.door.spawn(peer.close())

    # -- the relay ----------------------------------------------------------------------

    def pass_client(self, data: bytes) -> bytes:
        """What of the client's bytes goes on (a subclass may drop requests)."""
        return data

    def pass_server(self, data: bytes) -> bytes:
        """What of the far side's bytes goes on (a subclass may add answers)."""
        return data

    def from_client(self, data: bytes) -> None:
        """Client bytes on their way (a subclass reads them)."""

    def from_server(self, data: bytes) -> None:
        """Far-side bytes on their way (a subclass reads them)."""

    async def pump(self, peer: Peer) -> None:
        """Relay until the far side ends (the client's end ends it: ``lost``)."""
        self._peer = peer
        if self._lost:
            return
        upstream = asyncio.create_task(self._upstream(peer))
        try:
            await self._downstream(peer)
        finally:
            upstream.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await upstream

    async def _upstream(self, peer: Peer) -> None:
        """Client bytes to the far side, then its EOF."""
        inbox = self._inbox
        while True:
            if not inbox:
                if self._eof:
                    await peer.write_eof()
                    return
                if self._lost:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            data = inbox.popleft()
            if inbox and len(data) < WRITE_BATCH:
                parts = [data]
                size = len(data)
                while inbox and size < WRITE_BATCH:
                    part = inbox.popleft()
                    parts.append(part)
                    size += len(part)
                data = b"".join(parts)
            self._queued -= len(data)
            if self._reading_paused and self._queued < INBOX_LIMIT // 2:
                self._reading_paused = False
                with contextlib.suppress(Exception):
                    self.chan.resume_reading()
            data = self.pass_client(data)
            self.from_client(data)
            if data:
                await peer.write(data)

    async def _downstream(self, peer: Peer) -> None:
        """Far-side bytes to the client, read only as fast as the client takes them."""
        while data := await peer.read():
            data = self.pass_server(data)
            self.from_server(data)
            if self._lost:
                return
            try:
                self.chan.write(data)
            except (BrokenPipeError, asyncssh.Error, OSError):
                return
            if not self.writable.is_set():
                await self.writable.wait()


class RawRelay(Pump):
    """One raw channel: client bytes to the server's subsystem or command, and back."""

    def __init__(
        self,
        connection: DoorConnection,
        chan: asyncssh.SSHServerChannel[bytes],
        scanner: Scanner,
        *,
        subsystem: str | None = None,
        command: str | None = None,
    ) -> None:
        super().__init__(connection, chan)
        self.session_chan = chan
        self.scanner: Scanner | None = scanner
        self.subsystem = subsystem
        self.command = command
        self._events: asyncio.Queue[FileEvent | None] = asyncio.Queue(EVENT_QUEUE)
        self.gate: SftpGate | None = None

    def start(self) -> None:
        """Run the relay as one of the door's channel handlers."""
        self.connection.door.run_handler(self._run())

    async def _run(self) -> None:
        try:
            status = await self._relay()
        except Exception:
            log.exception("a raw front-door channel failed")
            status = REFUSED_EXIT
        with contextlib.suppress(Exception):
            self.session_chan.exit(status)

    async def _say(self, message: str) -> None:
        with contextlib.suppress(Exception):
            self.session_chan.write_stderr(f"hostgate: {message}\n".encode())

    async def _relay(self) -> int:
        connection = self.connection
        ready = await connection.ready()
        if isinstance(ready, str):
            await self._say(ready)
            return REFUSED_EXIT
        caller, login = ready
        try:
            channel = await connection.kernel.front_door.open_channel(
                caller,
                login.target,
                subsystem=self.subsystem,
                command=self.command,
                details=connection.details(),
                actions=command_actions(self.command) if self.command else (),
            )
        except (ApiError, SessionClosed) as refused:
            message = refused.message if isinstance(refused, ApiError) else refused.reason
            await self._say(message)
            await connection.audit_refusal(message, login.target)
            return REFUSED_EXIT
        if self.subsystem == "sftp" and channel.denied & FILE_ACTIONS:
            self.gate = self._gate(channel)
        store = asyncio.create_task(self._store(channel))
        try:
            await self.pump(channel)
        finally:
            self._report("finish", b"", channel)
            await self._events.put(None)
            with contextlib.suppress(Exception):
                await store
            await channel.close()
        if channel.end_reason:
            await self._say(channel.end_reason)
            return REFUSED_EXIT
        status = channel.exit_status
        return status if status is not None else REFUSED_EXIT

    def _gate(self, channel: DoorChannel) -> SftpGate:
        door = self.connection.door

        def refuse(action: str, detail: str) -> None:
            door.spawn(channel.refuse(action, detail))

        def to_client(answer: bytes) -> None:
            with contextlib.suppress(BrokenPipeError, asyncssh.Error, OSError):
                self.chan.write(answer)

        return SftpGate(channel.denied, refuse=refuse, to_client=to_client)

    def pass_client(self, data: bytes) -> bytes:
        """Requests for denied actions stop here (``SftpGate``)."""
        return data if self.gate is None else self.gate.from_client(data)

    def pass_server(self, data: bytes) -> bytes:
        """The gate's answers join the server's packets."""
        return data if self.gate is None else self.gate.from_server(data)

    def from_client(self, data: bytes) -> None:
        """The scanner reads the client's bytes."""
        self._report("client", data, None)

    def from_server(self, data: bytes) -> None:
        """The scanner reads the server's bytes."""
        self._report("server", data, None)

    def _report(self, where: str, data: bytes, channel: DoorChannel | None) -> None:
        """Run the scanner on some bytes and queue what it found (it never stops the relay).

        ``where``: ``client`` or ``server`` (``data`` came from there), or ``finish``
        (``channel`` ended).
        """
        scanner = self.scanner
        if scanner is None:
            return
        try:
            if where == "client":
                events = scanner.from_client(data)
            elif where == "server":
                events = scanner.from_server(data)
            elif channel is not None:
                events = scanner.finish(channel.bytes_in, channel.bytes_out, channel.exit_status)
            else:
                events = []
        except Exception:
            log.exception("reading a front-door transfer failed; its file events stop here")
            self.scanner = None
            return
        for event in events:
            try:
                self._events.put_nowait(event)
            except asyncio.QueueFull:
                log.warning("front-door file events are not stored fast enough; one dropped")

    async def _store(self, channel: DoorChannel) -> None:
        """Store the file events in order, apart from the relay's path."""
        while (event := await self._events.get()) is not None:
            try:
                await channel.file_event(
                    event.action, event.path, size=event.size, detail=event.detail
                )
            except Exception:
                log.exception("storing a front-door file event failed")
