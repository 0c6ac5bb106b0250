"""A shell-capable asyncssh server on 127.0.0.1 for terminal tests, and a PTY helper.

Import the fixture into a test package's ``conftest.py``::

    from testsupport.asyncssh_shell import asyncssh_shell  # noqa: F401

``asyncssh_shell`` (session-scoped) yields an :class:`AsyncsshShellServer`:

- ``host``, ``port``, ``username`` (``hgshell``), ``password``
- ``private_key``: an ed25519 client key (OpenSSH text) the server accepts
- ``home``: the directory the shell starts in

Each SSH session with a PTY runs ``bash --norc --noprofile -i`` (prompt ``$ ``)
under a real pseudo-terminal: window-change requests resize it, so ``stty size``
shows what the client asked for. The server runs in a subprocess
(``python -m testsupport.asyncssh_shell``) so its work never competes with the
test's event loop.

``PtyProcess`` runs any program under a pseudo-terminal with non-blocking,
back-pressured reads; the kernel's tests use it as a local terminal backend.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import pty
import signal
import struct
import subprocess
import tempfile
import termios
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from .peers import free_port, launch_module, server_arguments, serving

USERNAME = "hgshell"
PASSWORD = "shell-Test-passw0rd"
SHELL = ["bash", "--norc", "--noprofile", "-i"]


def _set_size(fd: int, cols: int, rows: int) -> None:
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _controlling_tty() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyProcess:
    """A program under a pseudo-terminal; ``read`` returns ``b""`` once it exited."""

    def __init__(self, process: asyncio.subprocess.Process, fd: int) -> None:
        self.process = process
        self.fd = fd
        self.closed = False

    @classmethod
    async def spawn(
        cls,
        argv: Sequence[str],
        *,
        cols: int = 80,
        rows: int = 24,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> PtyProcess:
        """Start ``argv`` with a fresh PTY as its controlling terminal."""
        master, slave = pty.openpty()
        _set_size(master, cols, rows)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=slave,
                stdout=slave,
                stderr=slave,
                env=dict(env) if env is not None else None,
                cwd=cwd,
                preexec_fn=_controlling_tty,
            )
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        return cls(process, master)

    async def _wait(self, writable: bool) -> None:
        loop = asyncio.get_running_loop()
        ready = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        add, remove = (
            (loop.add_writer, loop.remove_writer)
            if writable
            else (loop.add_reader, loop.remove_reader)
        )
        add(self.fd, wake)
        try:
            await ready
        finally:
            remove(self.fd)

    async def read(self, size: int = 65536) -> bytes:
        """Next output (waits; never buffers more than one read)."""
        while not self.closed:
            try:
                return os.read(self.fd, size)
            except BlockingIOError:
                await self._wait(False)
            except OSError:
                return b""
        return b""

    async def write(self, data: bytes) -> None:
        """Send input."""
        view = memoryview(data)
        while view and not self.closed:
            try:
                written = os.write(self.fd, view)
                view = view[written:]
            except BlockingIOError:
                await self._wait(True)

    def resize(self, cols: int, rows: int) -> None:
        """Change the window size (the program gets SIGWINCH)."""
        if not self.closed:
            _set_size(self.fd, cols, rows)

    async def close(self) -> None:
        """End the program and release the PTY."""
        if self.closed:
            return
        self.closed = True
        if self.process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGHUP)
            try:
                await asyncio.wait_for(self.process.wait(), 5)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.process.pid, signal.SIGKILL)
                await self.process.wait()
        os.close(self.fd)


def shell_env(home: str) -> dict[str, str]:
    """A small, predictable environment for test shells (prompt ``$ ``)."""
    return {
        "HOME": home,
        "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
        "TERM": "xterm-256color",
        "PS1": "$ ",
        "PS2": "> ",
        "LANG": "C.UTF-8",
    }


@dataclass
class AsyncsshShellServer:
    """A running shell-capable asyncssh server."""

    port: int
    home: Path
    private_key: str
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"
    username: str = USERNAME
    password: str = PASSWORD


def start_server() -> tuple[AsyncsshShellServer, Path]:
    """Start the server subprocess in a fresh temporary directory."""
    import asyncssh

    base = Path(tempfile.mkdtemp(prefix="hostgate-asyncssh-shell-"))
    home = base / "home"
    home.mkdir()
    client_key = asyncssh.generate_private_key("ssh-ed25519")
    (base / "client.pub").write_bytes(client_key.export_public_key("openssh"))
    port = free_port()
    args = ["--home", str(home), "--host-key", str(base / "host_key")]
    args += ["--client-key", str(base / "client.pub")]
    process = launch_module(
        "asyncssh shell server", "testsupport.asyncssh_shell", base, port, *args
    )
    private = client_key.export_private_key("openssh").decode()
    return AsyncsshShellServer(port=port, home=home, private_key=private, process=process), base


@pytest.fixture(scope="session")
def asyncssh_shell() -> Iterator[AsyncsshShellServer]:
    """An asyncssh server that gives each PTY session a real bash."""
    yield from serving(*start_server())


async def _serve(port: int, home: Path, host_key: Path, client_key: Path) -> None:
    import asyncssh

    from .asyncssh_peer import login_server, serve_forever

    authorized = asyncssh.import_authorized_keys(client_key.read_text())

    async def session(process: asyncssh.SSHServerProcess[bytes]) -> None:
        cols, rows, _, _ = process.term_size
        shell = await PtyProcess.spawn(
            SHELL, cols=cols or 80, rows=rows or 24, env=shell_env(str(home)), cwd=str(home)
        )

        async def to_client() -> None:
            while data := await shell.read():
                process.stdout.write(data)
                await process.stdout.drain()

        async def from_client() -> None:
            while True:
                try:
                    data = await process.stdin.read(65536)
                except asyncssh.TerminalSizeChanged as change:
                    shell.resize(change.width, change.height)
                    continue
                if not data:
                    return
                await shell.write(data)

        output = asyncio.create_task(to_client())
        feeder = asyncio.create_task(from_client())
        await asyncio.wait({output, feeder}, return_when=asyncio.FIRST_COMPLETED)
        feeder.cancel()
        await shell.close()
        output.cancel()
        process.exit(shell.process.returncode or 0)

    server = login_server(USERNAME, PASSWORD, authorized)
    await serve_forever(port, host_key, server, process_factory=session, encoding=None)


def main() -> None:
    """Run the server until killed."""
    args = server_arguments(__doc__, "--home", "--host-key", "--client-key").parse_args()
    asyncio.run(_serve(args.port, args.home, args.host_key, args.client_key))


if __name__ == "__main__":
    main()
