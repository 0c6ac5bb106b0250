"""The small typed interfaces protocol packs implement; the kernel does the rest."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from .closereasons import CloseReason


@dataclass(frozen=True)
class TerminalSize:
    """Columns and rows of a terminal."""

    cols: int = 80
    rows: int = 24


HostKeyCheck = Callable[[str, bytes], Awaitable[None]]
"""``await check(algorithm, public_key_blob)``: records a first-seen key, raises on a change."""

TunnelOpener = Callable[[Sequence["ConnectionTarget"], str, int], Awaitable[socket.socket]]
"""``await open(hops, host, port)``: a socket whose other end is a TCP channel to
``host:port`` opened through the SSH jump hosts ``hops`` (outermost first). Closing the
socket closes the channel and the hops' connections. The ssh pack provides it."""


@dataclass(frozen=True)
class ConnectionTarget:
    """Everything an adapter needs to reach one stored connection, secrets decrypted.

    ``address`` is the IP address the network policy approved: adapters connect
    to it (never re-resolve ``host``) and use ``host`` only for TLS names.
    """

    connection_id: str
    protocol: str
    name: str
    host: str
    address: str
    port: int
    username: str | None = None
    password: str | None = None
    private_key: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    skip_cert_validation: bool = False
    check_host_key: HostKeyCheck | None = None
    via: tuple[ConnectionTarget, ...] = ()
    """The SSH jump hosts to go through, outermost first (empty: connect directly).

    Behind jump hosts ``address`` is ``host`` itself: the last hop resolves it."""
    tunnel: TunnelOpener | None = None
    """How to open a TCP channel through ``via`` (set when ``via`` is not empty)."""
    moderated: bool = False
    """The connection needs a moderator (``moderation: required``): a terminal session's
    input is held until someone with ``sessions.moderate`` joins it."""
    agent_forward_path: str | None = None
    """A UNIX socket of a client's ssh-agent to forward to the server's session (the SSH
    front door with agent forwarding allowed); never used to sign in to the server."""
    denied: frozenset[str] = frozenset()
    """Actions (``hostgate.rights.ACTIONS``: upload, download, delete, copy, paste) the user
    this target was opened for may not do: the connection's ``actions`` switch it off or
    their role lacks its permission. Empty: everything is allowed."""
    on_denied: Callable[[str, str], Awaitable[None]] | None = None
    """How ``refuse`` audits (the kernel sets it for the user's target)."""

    def allows(self, action: str) -> bool:
        """Whether the user may do ``action`` (``upload``, ``copy``...) on this connection."""
        return action not in self.denied

    async def refuse(self, action: str, detail: str = "") -> None:
        """Audit a refused action (``session.action_denied``); the caller does the refusing."""
        if self.on_denied is not None:
            await self.on_denied(action, detail)

    @property
    def chain(self) -> str:
        """The whole route for audit entries and logs: ``jump1 -> jump2 -> target``."""
        return " -> ".join(
            [
                *(f"{hop.name} ({hop.host}:{hop.port})" for hop in self.via),
                f"{self.name} ({self.host}:{self.port})",
            ]
        )


async def open_tcp(
    target: ConnectionTarget,
    *,
    timeout: float | None,
    limit: int = 2**16,
    reader: asyncio.StreamReader | None = None,
) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Open a TCP connection to the target: directly, or through its jump hosts.

    Every pack that speaks TCP to a target (telnet, VNC, RDP, FTP...) opens it here, so
    jump hosts work for it without knowing about them. ``TimeoutError`` and ``OSError``
    propagate as from ``asyncio.open_connection``; a jump host that fails raises the
    ssh pack's Remote* errors. ``reader`` replaces the ``StreamReader`` (``limit`` is
    then the reader's own), e.g. one that keeps the received chunks instead of copying
    them into a buffer.
    """
    loop = asyncio.get_running_loop()
    if reader is None:
        reader = asyncio.StreamReader(limit=limit, loop=loop)
    protocol = asyncio.StreamReaderProtocol(reader, loop=loop)
    if not target.via:
        transport, _ = await asyncio.wait_for(
            loop.create_connection(lambda: protocol, target.address, target.port), timeout
        )
    else:
        if target.tunnel is None:
            raise OSError("jump hosts need the ssh pack, which is not installed")
        sock = await asyncio.wait_for(target.tunnel(target.via, target.host, target.port), timeout)
        transport, _ = await loop.create_connection(lambda: protocol, sock=sock)
    return reader, asyncio.StreamWriter(transport, protocol, reader, loop)


@dataclass(frozen=True)
class RemoteEntry:
    """One remote file or directory. Adapters fill what their protocol knows."""

    name: str
    is_dir: bool
    size: int = 0
    mode: int | None = None
    uid: int | None = None
    gid: int | None = None
    atime: datetime | None = None
    mtime: datetime | None = None


FILE_OPERATIONS = frozenset(
    {"list", "download", "upload", "mkdir", "delete", "rename", "stat", "chmod", "copy"}
)
"""Every operation a ``RemoteFiles.operations`` may name (each is one file route);
a route whose operation the adapter does not name answers 404 ``unsupported_operation``."""

STAT_FIELDS = ("size", "isDirectory", "permissions", "mode", "uid", "gid", "atime", "mtime")
"""The names ``ProtocolSpec.stat_fields`` may list: the fields of ``POST .../stat``'s
answer, each read from the ``RemoteEntry`` (``permissions`` is ``mode`` as ``rwxr-xr-x``)."""


@runtime_checkable
class RemoteFiles(Protocol):
    """A file session on one connection. Raise ``hostgate`` Remote* errors on failure."""

    operations: frozenset[str]

    async def list(self, path: str) -> list[RemoteEntry]:
        """Entries of a directory (without ``.`` and ``..``)."""
        ...

    async def stat(self, path: str) -> RemoteEntry:
        """Attributes of one path."""
        ...

    def read(self, path: str, offset: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        """Stream a file's bytes from ``offset`` (``length`` bytes, or to the end)."""
        ...

    async def write(self, path: str, chunks: AsyncIterator[bytes], size: int | None = None) -> int:
        """Write a file from chunks, atomically (temporary name, then rename); return bytes.

        ``size`` is the upload's declared length (the request's ``Content-Length``), or
        None when the client declared none; the kernel fails the upload (raising from
        ``chunks``) when the body does not match it. ``hostgate.UploadStaging`` does the
        atomic part. A ``write`` without ``size`` still works (deprecated: the kernel
        warns once per class and calls it without).
        """
        ...

    async def mkdir(self, path: str) -> None:
        """Create a directory."""
        ...

    async def remove(self, path: str) -> None:
        """Delete a file, or a directory recursively."""
        ...

    async def rename(self, old_path: str, new_path: str) -> None:
        """Rename or move."""
        ...

    async def chmod(self, path: str, mode: int) -> None:
        """Change Unix permissions."""
        ...

    async def copy(self, src_path: str, dest_path: str) -> None:
        """Copy a file or a directory tree on the server side."""
        ...

    async def close(self) -> None:
        """Release the remote session."""
        ...


@runtime_checkable
class Terminal(Protocol):
    """An interactive terminal (SSH shell, telnet)."""

    async def read(self) -> bytes:
        """Next output bytes; ``b""`` once the remote side closed."""
        ...

    async def write(self, data: bytes) -> None:
        """Send keystrokes."""
        ...

    async def resize(self, size: TerminalSize) -> None:
        """Change the window size."""
        ...

    async def close(self) -> None:
        """Close the remote session."""
        ...


class SessionClosed(Exception):
    """A session could not open or had to end: the WebSocket close code and reason.

    ``reason`` is the text people read (the close frame's reason and the ``error``
    frame's ``message``); ``reason_code`` the stable code clients match on (the
    ``error`` frame's ``reason``, left out when None). A relay's ``Stream.read()``
    may raise it to end the socket with that code.
    """

    def __init__(self, code: int, reason: str, reason_code: CloseReason | None = None) -> None:
        super().__init__(reason)
        self.code = code
        self.reason = reason
        self.reason_code = reason_code


@runtime_checkable
class Stream(Protocol):
    """A byte pipe for relays (VNC, RDP)."""

    async def read(self) -> bytes:
        """Next bytes from the server; ``b""`` at end."""
        ...

    async def write(self, data: bytes) -> None:
        """Bytes from the browser to the server."""
        ...

    async def close(self) -> None:
        """Close the relay."""
        ...


class StreamRecorder(Protocol):
    """What the kernel hands a recordable relay: appends that never block (stream recordings).

    Every call stamps the bytes with the milliseconds since the session started
    and queues them for the kernel's writer, off the relay loop; nothing raises.
    When the recording stops (size cap, disk low, writer behind) calls are
    ignored and ``active`` turns False. The framing is in docs/recordings.md.
    """

    @property
    def active(self) -> bool:
        """False once the recording has stopped."""
        ...

    def sync(self, data: bytes) -> int | None:
        """A sync record: the state a player starts decoding from; its offset (None: stopped).

        The first one opens the stream; a later one becomes a key frame in the
        index once ``key_frame`` is called with its offset (what follows it proved
        to decode without anything recorded before).
        """
        ...

    def key_frame(self, offset: int) -> None:
        """Index the sync record at ``offset`` as a key frame (a seek may start there)."""
        ...

    def server(self, data: bytes) -> None:
        """Bytes the server sent (to the browser)."""
        ...

    def client(self, data: bytes) -> None:
        """Input the browser sent (to the server)."""
        ...

    def input_event(self, event_type: str) -> None:
        """An input event for the session's timeline (``click``, ``key``), as RDP records them."""
        ...


@runtime_checkable
class RecordableStream(Stream, Protocol):
    """A relay stream the gateway can record (``recording_format`` names the file format)."""

    recording_format: str
    """The format name stored with the recording and used as its file extension."""

    def record_to(self, recorder: StreamRecorder) -> None:
        """Start recording into ``recorder`` (called once, before any byte is relayed)."""
        ...
