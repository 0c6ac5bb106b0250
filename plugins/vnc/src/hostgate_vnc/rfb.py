"""The RFB (VNC) handshake, both halves.

The gateway is a client of the VNC server, and the server the browser (noVNC)
talks to. RFC 6143: protocol version (3.3, 3.7 or 3.8), security types, VNC
Authentication (a 16-byte challenge DES-encrypted with the password),
SecurityResult. After the handshake both sides speak the same protocol
(ClientInit, ServerInit, messages), whatever version each side negotiated, so
the relay joins them byte for byte.
"""

from __future__ import annotations

import asyncio
import re
import struct
from dataclasses import dataclass

from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
from cryptography.hazmat.primitives.ciphers import Cipher, modes
from hostgate import RemoteAuthFailed, RemoteError

SECURITY_INVALID = 0
SECURITY_NONE = 1
SECURITY_VNC_AUTH = 2
CHALLENGE_SIZE = 16
MAX_REASON = 4096
VERSION_PATTERN = re.compile(rb"RFB (\d{3})\.(\d{3})\n")
SECURITY_NAMES = {
    1: "None",
    2: "VNC Authentication",
    5: "RA2",
    6: "RA2ne",
    16: "Tight",
    18: "TLS",
    19: "VeNCrypt",
    22: "XVP",
    30: "Apple Remote Desktop",
    113: "MSLogonII",
    129: "Unix Login",
}


def version_line(minor: int) -> bytes:
    """The 12-byte ProtocolVersion message of RFB 3.<minor>."""
    return b"RFB 003.%03d\n" % minor


def negotiated_minor(line: bytes) -> int | None:
    """The RFB 3.x minor version to speak with a peer that sent ``line`` (3, 7 or 8).

    RFC 6143 §7.1.1: unknown 3.x versions below 3.7 are read as 3.3; anything
    newer than 3.8 (e.g. Apple's 3.889, or 4.x) is answered with 3.8. ``None``
    when the line is not an RFB version at all.
    """
    match = VERSION_PATTERN.fullmatch(line)
    if match is None:
        return None
    major, minor = int(match.group(1)), int(match.group(2))
    if major < 3:
        return None
    if major > 3 or minor >= 8:
        return 8
    return 7 if minor == 7 else 3


def _des_key(password: str) -> bytes:
    """The VNC DES key: the password's first 8 bytes, zero-padded, each byte bit-reversed."""
    raw = password.encode()[:8].ljust(8, b"\0")
    return bytes(int(f"{byte:08b}"[::-1], 2) for byte in raw)


def vnc_auth_response(password: str, challenge: bytes) -> bytes:
    """The answer to a VNC Authentication challenge (two DES-ECB blocks)."""
    if len(challenge) != CHALLENGE_SIZE:
        raise ValueError("a VNC challenge has 16 bytes")
    # TripleDES with one 8-byte key (K1 = K2 = K3) is single DES.
    encryptor = Cipher(TripleDES(_des_key(password)), modes.ECB()).encryptor()
    return encryptor.update(challenge) + encryptor.finalize()


def security_name(number: int) -> str:
    """A readable name of a security type for error messages."""
    return SECURITY_NAMES.get(number, f"type {number}")


@dataclass(frozen=True)
class ServerSession:
    """What the handshake with the VNC server settled."""

    version: str
    security_type: int


class ServerHandshake:
    """The gateway logs in to the VNC server (client side of the RFB handshake)."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, password: str | None
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._password = password

    async def _read(self, count: int) -> bytes:
        try:
            return await self._reader.readexactly(count)
        except asyncio.IncompleteReadError:
            raise RemoteError("The VNC server closed the connection during the handshake") from None

    async def _reason(self) -> str:
        (length,) = struct.unpack(">I", await self._read(4))
        text = await self._read(min(length, MAX_REASON))
        return text.decode("utf-8", errors="replace").strip()

    async def _send(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()

    async def run(self) -> ServerSession:
        """Version, security, authentication; raises hostgate Remote* errors on failure."""
        line = await self._read(12)
        minor = negotiated_minor(line)
        if minor is None:
            raise RemoteError("The server did not answer as a VNC (RFB) server")
        await self._send(version_line(minor))
        security = await self._choose_security(minor)
        if security == SECURITY_VNC_AUTH:
            await self._authenticate()
        if minor >= 8 or security == SECURITY_VNC_AUTH:
            await self._security_result(minor)
        return ServerSession(version=f"3.{minor}", security_type=security)

    async def _choose_security(self, minor: int) -> int:
        if minor == 3:
            (chosen,) = struct.unpack(">I", await self._read(4))
            if chosen == SECURITY_INVALID:
                raise RemoteError(f"The VNC server refused the connection: {await self._reason()}")
            if chosen not in (SECURITY_NONE, SECURITY_VNC_AUTH):
                raise RemoteError(
                    f"The VNC server requires {security_name(chosen)}, which hostgate "
                    "does not support (use None or VNC Authentication)"
                )
            return int(chosen)
        (count,) = await self._read(1)
        if count == 0:
            raise RemoteError(f"The VNC server refused the connection: {await self._reason()}")
        offered = list(await self._read(count))
        if SECURITY_NONE in offered:
            chosen = SECURITY_NONE
        elif SECURITY_VNC_AUTH in offered:
            chosen = SECURITY_VNC_AUTH
        else:
            names = ", ".join(security_name(number) for number in offered)
            raise RemoteError(
                f"The VNC server offers only {names}; hostgate supports None and VNC Authentication"
            )
        await self._send(bytes([chosen]))
        return chosen

    async def _authenticate(self) -> None:
        if not self._password:
            raise RemoteAuthFailed(
                "VNC authentication failed: the server asks for a password and the "
                "connection has none stored"
            )
        challenge = await self._read(CHALLENGE_SIZE)
        await self._send(vnc_auth_response(self._password, challenge))

    async def _security_result(self, minor: int) -> None:
        (status,) = struct.unpack(">I", await self._read(4))
        if status == 0:
            return
        reason = ""
        if minor >= 8:
            try:
                reason = await self._reason()
            except RemoteError:
                reason = ""
        raise RemoteAuthFailed(f"VNC authentication failed: {reason or 'wrong password'}")


class BrowserHandshakeError(Exception):
    """The browser's side of the handshake was malformed or chose what we do not offer.

    ``reply`` holds the bytes to send the browser before closing (a failure reason).
    """

    def __init__(self, message: str, reply: bytes = b"") -> None:
        super().__init__(message)
        self.reply = reply


class BrowserHandshake:
    """The gateway as the RFB server the browser sees: only security type None.

    Bytes from the browser go to :meth:`feed`; it returns the bytes to send back
    and, once done, :attr:`done` is true and :attr:`leftover` holds what the
    browser already sent past the handshake (its ClientInit, usually).
    """

    MAX_PENDING = 1024

    def __init__(self) -> None:
        self.done = False
        self.leftover = b""
        self._buffer = bytearray()
        self._minor: int | None = None

    def greeting(self) -> bytes:
        """The first bytes for the browser: our ProtocolVersion."""
        return version_line(8)

    def feed(self, data: bytes) -> bytes:
        """Consume browser bytes; return the answer (possibly empty)."""
        self._buffer += data
        if len(self._buffer) > self.MAX_PENDING:
            raise BrowserHandshakeError("The browser sent too much data during the VNC handshake")
        out = bytearray()
        if self._minor is None:
            if len(self._buffer) < 12:
                return b""
            line = bytes(self._buffer[:12])
            del self._buffer[:12]
            minor = negotiated_minor(line)
            if minor is None:
                raise BrowserHandshakeError("The browser did not send an RFB protocol version")
            self._minor = minor
            if minor == 3:
                out += struct.pack(">I", SECURITY_NONE)
                return bytes(out) + self._finish()
            out += bytes([1, SECURITY_NONE])
        if not self._buffer:
            return bytes(out)
        chosen = self._buffer[0]
        del self._buffer[:1]
        if chosen != SECURITY_NONE:
            if self._minor >= 8:
                reason = b"Only security type None is offered"
                out += struct.pack(">II", 1, len(reason)) + reason
            raise BrowserHandshakeError(
                f"The browser chose {security_name(chosen)}; only None is offered", bytes(out)
            )
        if self._minor >= 8:
            out += struct.pack(">I", 0)
        return bytes(out) + self._finish()

    def _finish(self) -> bytes:
        self.done = True
        self.leftover = bytes(self._buffer)
        self._buffer.clear()
        return b""
