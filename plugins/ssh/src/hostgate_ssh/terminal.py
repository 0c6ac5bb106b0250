"""The ``ssh`` terminal: a login shell on a PTY (``xterm-256color``), resize and keepalive.

The kernel's socket does the rest (tickets, recording, command log, idle timeout,
audit). Back-pressure: output is read only when the kernel asks for it, and
asyncssh stops extending the SSH window while its buffer is full, so a slow
browser pauses the remote side instead of filling the gateway's memory.
"""

from __future__ import annotations

import asyncio
import contextlib

import asyncssh
from hostgate import ConnectionTarget, KernelAPI, RemoteError, TerminalSize

from .client import connect

TERM_TYPE = "xterm-256color"
READ_SIZE = 64 * 1024
KEEPALIVE_INTERVAL = 30.0
KEEPALIVE_COUNT_MAX = 3
CLOSE_TIMEOUT = 5.0
CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
)
"""AES-GCM first: with hardware AES it costs asyncssh about half the CPU per packet of
chacha20-poly1305 (asyncssh's own first choice), which bulk output such as ``cat``
of a large file feels; the server picks from what it also offers."""


class SSHTerminal:
    """One interactive SSH shell (implements ``hostgate.Terminal``)."""

    term_type = TERM_TYPE

    def __init__(
        self,
        connection: asyncssh.SSHClientConnection,
        process: asyncssh.SSHClientProcess[bytes],
    ) -> None:
        self._connection = connection
        self._process = process
        self._closed = False

    async def read(self) -> bytes:
        """Next output bytes (stdout and stderr); ``b""`` once the shell ended."""
        if self._closed:
            return b""
        try:
            data = await self._process.stdout.read(READ_SIZE)
        except (asyncssh.ConnectionLost, asyncssh.DisconnectError) as exc:
            raise RemoteError(f"SSH connection lost: {exc.reason}") from None
        except BrokenPipeError:
            return b""
        if not data:
            # the exit status may follow the end of output: wait for the channel's close
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._process.wait_closed(), CLOSE_TIMEOUT)
        return data

    async def write(self, data: bytes) -> None:
        """Keystrokes to the shell."""
        if self._closed or self._process.stdin.is_closing():
            return
        self._process.stdin.write(data)
        await self._process.stdin.drain()

    @property
    def exit_status(self) -> int | None:
        """The shell's or command's exit status once it ended (None: not said)."""
        return self._process.exit_status

    async def write_eof(self) -> None:
        """End the remote side's input (a command reading its stdin to the end)."""
        if not self._closed and not self._process.stdin.is_closing():
            self._process.stdin.write_eof()

    async def resize(self, size: TerminalSize) -> None:
        """Send a window-change request."""
        if not self._closed:
            self._process.change_terminal_size(size.cols, size.rows)

    async def close(self) -> None:
        """End the shell and the connection."""
        if self._closed:
            return
        self._closed = True
        self._process.close()
        self._connection.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._connection.wait_closed(), CLOSE_TIMEOUT)


async def open_terminal(
    kernel: KernelAPI, target: ConnectionTarget, size: TerminalSize
) -> SSHTerminal:
    """Connect (host key checked by the kernel) and start a shell on a PTY."""
    return await _open_process(target, None, size)


async def open_command(
    kernel: KernelAPI, target: ConnectionTarget, command: str, size: TerminalSize | None
) -> SSHTerminal:
    """Connect and run one command, on a PTY when ``size`` is given (stderr merged)."""
    return await _open_process(target, command, size)


async def open_channel(
    kernel: KernelAPI, target: ConnectionTarget, kind: str, value: str
) -> SSHTerminal:
    """Connect and open a raw channel: the subsystem ``value`` or the command ``value``.

    No PTY and stderr dropped: the channel carries a protocol (SFTP, scp, rsync, git)
    that a message mixed into stdout would corrupt.
    """
    if kind not in {"subsystem", "exec"}:
        raise ValueError(f"unknown channel kind {kind!r}")
    connection = await connect(
        target,
        keepalive_interval=KEEPALIVE_INTERVAL,
        keepalive_count_max=KEEPALIVE_COUNT_MAX,
        encryption_algs=CIPHERS,
    )
    try:
        if kind == "subsystem":
            process = await connection.create_process(
                subsystem=value, encoding=None, stderr=asyncssh.DEVNULL
            )
        else:
            process = await connection.create_process(value, encoding=None, stderr=asyncssh.DEVNULL)
    except asyncssh.Error as exc:
        connection.close()
        raise RemoteError(f"the SSH server refused the {kind} channel: {exc.reason}") from None
    except BaseException:
        connection.close()
        raise
    return SSHTerminal(connection, process)


async def _open_process(
    target: ConnectionTarget, command: str | None, size: TerminalSize | None
) -> SSHTerminal:
    # a client's forwarded agent (the SSH front door): forwarded to the session only,
    # never offered for the gateway's own sign-in (that stays the stored credential)
    forwarding = (
        {"agent_forwarding": target.agent_forward_path} if target.agent_forward_path else {}
    )
    connection = await connect(
        target,
        keepalive_interval=KEEPALIVE_INTERVAL,
        keepalive_count_max=KEEPALIVE_COUNT_MAX,
        encryption_algs=CIPHERS,
        **forwarding,
    )
    try:
        process = await connection.create_process(
            command,
            term_type=TERM_TYPE if size is not None else None,
            term_size=(size.cols, size.rows) if size is not None else None,
            encoding=None,
            stderr=asyncssh.STDOUT,
        )
    except asyncssh.Error as exc:
        connection.close()
        what = "a shell" if command is None else "the command"
        raise RemoteError(f"the SSH server refused {what}: {exc.reason}") from None
    except BaseException:
        connection.close()
        raise
    return SSHTerminal(connection, process)
