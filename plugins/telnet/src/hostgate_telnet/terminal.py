"""The ``telnet`` terminal: TCP to the approved address, negotiation, automatic login.

When the connection stores a username (and password), the first ``login:`` /
``username:`` prompt is answered with the username and the first ``password:``
prompt with the password, once each, before the user sees a shell. Back-pressure:
the socket is read only when the kernel asks for output, so a slow browser stops
the reads and TCP flow control pauses the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import socket

from hostgate import (
    ConnectionTarget,
    KernelAPI,
    RemoteTimeout,
    RemoteUnreachable,
    TerminalSize,
    open_tcp,
)

from .protocol import TelnetCodec

TERM_TYPE = "xterm-256color"
READ_SIZE = 64 * 1024
CONNECT_TIMEOUT = 15.0
LOGIN_WINDOW = 64 * 1024
LOGIN_PROMPT = re.compile(rb"(login|username|user name)\s*:\s*$", re.IGNORECASE)
PASSWORD_PROMPT = re.compile(rb"password\s*:\s*$", re.IGNORECASE)
TAIL = 256
REDACT_WINDOW = 4096
"""Output bytes after the password was sent in which an echo of it is masked."""


class LoginAutomation:
    """Answers the server's login prompts with stored credentials, once each."""

    def __init__(self, username: str | None, password: str | None) -> None:
        self.username = username.encode() if username else None
        self.password = password.encode() if password else None
        self.active = bool(self.username or self.password)
        self._tail = b""
        self._seen = 0
        self._user_sent = False
        self._password_sent = False
        self._redact_budget = 0

    def observe(self, data: bytes) -> bytes | None:
        """Watch output; return the line to type when a prompt shows, else None."""
        if not self.active or not data:
            return None
        self._seen += len(data)
        self._tail = (self._tail + data)[-TAIL:]
        answer: bytes | None = None
        if not self._user_sent and self.username and LOGIN_PROMPT.search(self._tail):
            self._user_sent = True
            answer = self.username
        elif not self._password_sent and self.password and PASSWORD_PROMPT.search(self._tail):
            self._password_sent = True
            answer = self.password
        if answer is not None:
            self._tail = b""
            if answer is self.password:
                self._redact_budget = REDACT_WINDOW
        done = (self._password_sent or not self.password) and (self._user_sent or not self.username)
        if done or self._seen > LOGIN_WINDOW:
            self.active = False
        return None if answer is None else answer + b"\r"

    def redact(self, data: bytes) -> bytes:
        """Mask the stored password should the server echo it right after it was sent.

        Servers that print the prompt before turning echo off would otherwise put
        the password into the terminal, the recording and the replay buffer.
        """
        if self._redact_budget <= 0 or not self.password:
            return data
        self._redact_budget -= len(data)
        return data.replace(self.password, b"*" * len(self.password))


class TelnetTerminal:
    """One telnet session (implements ``hostgate.Terminal``)."""

    term_type = TERM_TYPE

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        codec: TelnetCodec,
        login: LoginAutomation,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._codec = codec
        self._login = login
        self._closed = False

    async def _send(self, data: bytes) -> None:
        if data and not self._writer.is_closing():
            self._writer.write(data)
            await self._writer.drain()

    async def read(self) -> bytes:
        """Next terminal output; ``b""`` when the server closed the connection."""
        while not self._closed:
            try:
                raw = await self._reader.read(READ_SIZE)
            except (ConnectionError, OSError):
                return b""
            if not raw:
                return b""
            data = self._login.redact(self._codec.receive(raw))
            await self._send(self._codec.replies())
            answer = self._login.observe(data)
            if answer is not None:
                await self._send(self._codec.encode(answer))
            if data:
                return data
        return b""

    async def write(self, data: bytes) -> None:
        """Keystrokes to the server."""
        if not self._closed:
            await self._send(self._codec.encode(data))

    async def resize(self, size: TerminalSize) -> None:
        """Report the new window size (NAWS)."""
        if not self._closed:
            await self._send(self._codec.window_size(size.cols, size.rows))

    async def close(self) -> None:
        """Close the TCP connection."""
        if self._closed:
            return
        self._closed = True
        self._writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._writer.wait_closed(), 5)


async def open_terminal(
    kernel: KernelAPI, target: ConnectionTarget, size: TerminalSize
) -> TelnetTerminal:
    """Connect to the approved address; negotiation starts with the first read."""
    try:
        reader, writer = await open_tcp(target, timeout=CONNECT_TIMEOUT)
    except TimeoutError:
        raise RemoteTimeout(f"telnet server {target.host}:{target.port} did not answer") from None
    except OSError as exc:
        raise RemoteUnreachable(
            f"cannot reach telnet server {target.host}:{target.port}: {exc.strerror or exc}"
        ) from None
    sock = writer.get_extra_info("socket")
    if sock is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    codec = TelnetCodec(TERM_TYPE, size.cols, size.rows)
    login = LoginAutomation(target.username, target.password)
    return TelnetTerminal(reader, writer, codec, login)
