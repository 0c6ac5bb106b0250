"""The ``vnc`` relay: log in to the VNC server, then join it to the browser's socket.

``open_stream`` connects to the approved address, completes the RFB handshake
with the server itself (VNC Authentication with the stored password, when the
server asks for it) and only then hands the kernel a ``Stream``. The browser is
offered a fresh handshake with security type None; its ClientInit and everything
after it travel unchanged both ways. The VNC password never leaves the gateway.

Back-pressure: the server is read only when the kernel asks for more output, so a
slow browser stops the gateway reading and TCP flow control slows the server.

Recorded sessions (``record_to``): see ``recording.py``; the recorder only
queues, so the relay loop never waits for the disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from hostgate import (
    CloseReason,
    ConnectionTarget,
    KernelAPI,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
    SessionClosed,
    StreamRecorder,
    open_tcp,
)

from . import recording
from .clipboard import CLIPBOARD, ClipboardGate
from .rfb import BrowserHandshake, BrowserHandshakeError, ServerHandshake, ServerSession

log = logging.getLogger("hostgate.vnc")

CONNECT_TIMEOUT = 15.0
HANDSHAKE_TIMEOUT = 15.0
READ_SIZE = 64 * 1024
CLOSE_TIMEOUT = 5.0


class VncStream:
    """One relayed VNC session (implements ``hostgate.RecordableStream``)."""

    recording_format = "rfb"

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        server: ServerSession,
        gate: ClipboardGate | None = None,
    ) -> None:
        self.server = server
        self._gate = gate
        self._reader = reader
        self._writer = writer
        self._browser = BrowserHandshake()
        self._pending = bytearray(self._browser.greeting())
        self._failure: SessionClosed | None = None
        self._changed = asyncio.Event()
        self._closed = False
        self._server_scan: recording.ServerScanner | None = None
        self._client_scan: recording.ClientScanner | None = None
        self._key_frames: asyncio.Task[None] | None = None

    def record_to(self, recorder: StreamRecorder) -> None:
        """Record the session from the ServerInit on (the gateway's own handshake is left out)."""
        self._server_scan = recording.ServerScanner(recorder)
        self._client_scan = recording.ClientScanner(recorder, self._server_scan)
        self._key_frames = asyncio.create_task(
            self._ask_for_key_frames(recorder), name="vnc-key-frames"
        )

    async def _ask_for_key_frames(self, recorder: StreamRecorder) -> None:
        """Every ``KEY_FRAME_SECONDS``, a full update request between two browser messages."""
        server, client = self._server_scan, self._client_scan
        assert server is not None and client is not None
        while not self._closed and recorder.active and not server.broken:
            await asyncio.sleep(recording.KEY_FRAME_SECONDS)
            if client.at_boundary and server.width and not self._closed:
                # not through the client scanner: the request is the relay's, not input
                self._writer.write(recording.update_request(server.width, server.height))
                with contextlib.suppress(OSError):
                    await self._writer.drain()

    @property
    def relaying(self) -> bool:
        """True once the browser's handshake is done and bytes pass straight through."""
        return self._browser.done

    async def read(self) -> bytes:
        """Handshake bytes for the browser first, then the server's output."""
        while True:
            self._changed.clear()
            if self._pending:
                data = bytes(self._pending)
                self._pending.clear()
                return data
            if self._failure is not None:
                raise self._failure
            if self._closed:
                return b""
            if self.relaying:
                data = await self._reader.read(READ_SIZE)
                if data and self._gate is not None:
                    data = self._gated(self._gate.from_server, data)
                    if not data:
                        if self._failure is not None:
                            raise self._failure
                        continue  # only a dropped clipboard: read on
                if self._server_scan is not None:
                    self._server_scan.feed(data)
                return data
            await self._changed.wait()

    async def write(self, data: bytes) -> None:
        """Browser bytes: the handshake answers, then straight to the server."""
        if self._closed or self._failure is not None or not data:
            return
        if self.relaying:
            await self._to_server(data)
            return
        try:
            self._pending += self._browser.feed(data)
        except BrowserHandshakeError as exc:
            self._pending += exc.reply
            self._failure = SessionClosed(4003, str(exc), CloseReason.BAD_REQUEST)
        self._changed.set()
        if self.relaying and self._browser.leftover:
            await self._to_server(self._browser.leftover)

    def _gated(self, step: Callable[[bytes], bytes], data: bytes) -> bytes:
        """Data through the clipboard gate; a message it cannot frame ends the session."""
        try:
            return step(data)
        except ValueError as exc:
            log.info("VNC clipboard gate: %s; the session ends", exc)
            self._failure = SessionClosed(
                4003,
                f"The VNC session ended: the gateway could not read a message ({exc})",
                CloseReason.BAD_REQUEST,
            )
            self._changed.set()
            return b""

    async def _to_server(self, data: bytes) -> None:
        if self._gate is not None:
            data = self._gated(self._gate.from_browser, data)
            if not data:
                return
        if self._client_scan is not None:
            data = self._client_scan.feed(data)
            if not data:
                return
        self._writer.write(data)
        await self._writer.drain()

    async def close(self) -> None:
        """Close the connection to the VNC server."""
        if self._closed:
            return
        self._closed = True
        self._changed.set()
        if self._key_frames is not None:
            self._key_frames.cancel()
        self._writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), CLOSE_TIMEOUT)


async def open_stream(kernel: KernelAPI, target: ConnectionTarget) -> VncStream:
    """Connect and authenticate to the VNC server; raise hostgate Remote* errors on failure."""
    where = f"{target.host}:{target.port}"
    try:
        reader, writer = await open_tcp(target, timeout=CONNECT_TIMEOUT)
    except TimeoutError:
        raise RemoteTimeout(f"Timed out connecting to the VNC server at {where}") from None
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise RemoteUnreachable(f"Cannot reach the VNC server at {where}: {reason}") from None
    try:
        handshake = ServerHandshake(reader, writer, target.password)
        server = await asyncio.wait_for(handshake.run(), HANDSHAKE_TIMEOUT)
    except BaseException as exc:
        writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(writer.wait_closed(), CLOSE_TIMEOUT)
        if isinstance(exc, TimeoutError):
            raise RemoteTimeout(f"The VNC server at {where} did not finish the handshake") from None
        if isinstance(exc, OSError):
            raise RemoteError(f"VNC connection to {where} failed: {exc}") from None
        raise
    log.debug("VNC %s: RFB %s, security %s", where, server.version, server.security_type)
    denied = target.denied & CLIPBOARD
    gate = ClipboardGate(denied, _auditor(target)) if denied else None
    return VncStream(reader, writer, server, gate)


def _auditor(target: ConnectionTarget) -> Callable[[str], None]:
    """Audit each refused clipboard transfer without holding up the relay."""
    tasks: set[asyncio.Task[None]] = set()

    def refuse(action: str) -> None:
        task = asyncio.create_task(target.refuse(action, "vnc clipboard"))
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    return refuse
