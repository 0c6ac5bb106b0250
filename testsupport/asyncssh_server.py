"""An SFTP-only asyncssh server on 127.0.0.1 for tests (no shell, no exec, no scp).

Import the fixtures into a test package's ``conftest.py``::

    from testsupport.asyncssh_server import asyncssh_sftp, asyncssh_sftp_plain  # noqa: F401

Both are session-scoped and yield an :class:`AsyncsshServer`:

- ``host``, ``port``, ``username`` (``hgsftp``), ``password``
- ``root``: the directory the server is jailed to (its ``/``); tests may create
  files there, each under its own sub-directory
- ``copy_data``: whether the server offers the ``copy-data`` extension

``asyncssh_sftp`` offers every extension asyncssh implements (``copy-data``,
``posix-rename@openssh.com``, ``limits@openssh.com``...); ``asyncssh_sftp_plain``
offers none of ``copy-data`` and ``posix-rename``, so clients must fall back
(copies streamed through the client, plain rename).

The server runs in a subprocess (``python -m testsupport.asyncssh_server``) so
its work never competes with the test's event loop.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from .peers import free_port, peer_unavailable, stop, wait_for_port

USERNAME = "hgsftp"
PASSWORD = "sftp-Only-passw0rd"
ROOT_DIR = Path(__file__).resolve().parent.parent


@dataclass
class AsyncsshServer:
    """A running SFTP-only asyncssh server."""

    root: Path
    port: int
    copy_data: bool
    process: subprocess.Popen[bytes]
    host: str = "127.0.0.1"
    username: str = USERNAME
    password: str = PASSWORD


def start_server(
    *, copy_data: bool = True, base: Path | None = None, port: int | None = None
) -> tuple[AsyncsshServer, Path]:
    """Start the server subprocess in a fresh temporary directory.

    ``base`` and ``port`` of an earlier server start it again on the same files,
    host key and port (a server that "comes back" after dying).
    """
    base = base or Path(tempfile.mkdtemp(prefix="hostgate-asyncssh-"))
    root = base / "root"
    root.mkdir(exist_ok=True)
    port = port or free_port()
    command = [
        sys.executable,
        "-m",
        "testsupport.asyncssh_server",
        "--port",
        str(port),
        "--root",
        str(root),
        "--host-key",
        str(base / "host_key"),
    ]
    if not copy_data:
        command.append("--plain")
    log = open(base / "server.log", "ab")  # noqa: SIM115 - handed to the process
    try:
        process = subprocess.Popen(command, cwd=ROOT_DIR, stdout=log, stderr=log)
    finally:
        log.close()
    if not wait_for_port(port, 30):
        stop(process)
        text = (base / "server.log").read_text(errors="replace")
        shutil.rmtree(base, ignore_errors=True)
        peer_unavailable("asyncssh sftp server", f"did not start: {text[-600:]}")
    return AsyncsshServer(root=root, port=port, copy_data=copy_data, process=process), base


def _fixture(copy_data: bool) -> Iterator[AsyncsshServer]:
    server, base = start_server(copy_data=copy_data)
    try:
        yield server
    finally:
        stop(server.process)
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="session")
def asyncssh_sftp() -> Iterator[AsyncsshServer]:
    """asyncssh's SFTP server with every extension (copy-data included)."""
    yield from _fixture(True)


@pytest.fixture(scope="session")
def asyncssh_sftp_plain() -> Iterator[AsyncsshServer]:
    """asyncssh's SFTP server without copy-data and posix-rename."""
    yield from _fixture(False)


async def _serve(port: int, root: Path, host_key: Path, plain: bool) -> None:
    import asyncssh
    from asyncssh import sftp as sftp_module

    if plain:
        dropped = {b"copy-data", b"posix-rename@openssh.com"}
        handler = sftp_module.SFTPServerHandler
        handler._extensions = [e for e in handler._extensions if e[0] not in dropped]

    if host_key.exists():
        key = asyncssh.read_private_key(str(host_key))
    else:
        key = asyncssh.generate_private_key("ssh-ed25519")
        key.write_private_key(str(host_key))

    class Server(asyncssh.SSHServer):
        def begin_auth(self, username: str) -> bool:
            return True

        def password_auth_supported(self) -> bool:
            return True

        def validate_password(self, username: str, password: str) -> bool:
            return username == USERNAME and password == PASSWORD

    class Jail(asyncssh.SFTPServer):
        def __init__(self, chan: asyncssh.SSHServerChannel) -> None:
            super().__init__(chan, chroot=str(root).encode())

    await asyncssh.listen(
        "127.0.0.1",
        port,
        server_host_keys=[key],
        server_factory=Server,
        sftp_factory=Jail,
        allow_scp=False,
    )
    await asyncio.Event().wait()


def main() -> None:
    """Run the server until killed."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--host-key", type=Path, required=True)
    parser.add_argument("--plain", action="store_true", help="no copy-data, no posix-rename")
    args = parser.parse_args()
    asyncio.run(_serve(args.port, args.root, args.host_key, args.plain))


if __name__ == "__main__":
    main()
