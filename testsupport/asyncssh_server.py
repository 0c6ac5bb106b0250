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
(copies streamed through the client, plain rename). ``asyncssh_sftp_full`` is a
server whose disk is "full" past ``FULL_QUOTA`` bytes per file: a write beyond that
answers ``SSH_FX_NO_SPACE_ON_FILESYSTEM``, as a real full disk or quota does.

The server runs in a subprocess (``python -m testsupport.asyncssh_server``) so
its work never competes with the test's event loop.
"""

from __future__ import annotations

import asyncio
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from .peers import free_port, launch_module, server_arguments, serving

USERNAME = "hgsftp"
PASSWORD = "sftp-Only-passw0rd"
FULL_QUOTA = 64 * 1024
"""Bytes a file may hold on ``asyncssh_sftp_full`` before writes fail with no space."""


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
    *,
    copy_data: bool = True,
    base: Path | None = None,
    port: int | None = None,
    quota: int | None = None,
) -> tuple[AsyncsshServer, Path]:
    """Start the server subprocess in a fresh temporary directory.

    ``base`` and ``port`` of an earlier server start it again on the same files,
    host key and port (a server that "comes back" after dying).
    """
    base = base or Path(tempfile.mkdtemp(prefix="hostgate-asyncssh-"))
    root = base / "root"
    root.mkdir(exist_ok=True)
    port = port or free_port()
    args = ["--root", str(root), "--host-key", str(base / "host_key")]
    if not copy_data:
        args.append("--plain")
    if quota is not None:
        args += ["--quota", str(quota)]
    process = launch_module(
        "asyncssh sftp server", "testsupport.asyncssh_server", base, port, *args
    )
    return AsyncsshServer(root=root, port=port, copy_data=copy_data, process=process), base


@pytest.fixture(scope="session")
def asyncssh_sftp() -> Iterator[AsyncsshServer]:
    """asyncssh's SFTP server with every extension (copy-data included)."""
    yield from serving(*start_server(copy_data=True))


@pytest.fixture(scope="session")
def asyncssh_sftp_plain() -> Iterator[AsyncsshServer]:
    """asyncssh's SFTP server without copy-data and posix-rename."""
    yield from serving(*start_server(copy_data=False))


@pytest.fixture(scope="session")
def asyncssh_sftp_full() -> Iterator[AsyncsshServer]:
    """asyncssh's SFTP server with no space for more than ``FULL_QUOTA`` bytes per file."""
    yield from serving(*start_server(quota=FULL_QUOTA))


async def _serve(port: int, root: Path, host_key: Path, plain: bool, quota: int | None) -> None:
    import asyncssh
    from asyncssh import sftp as sftp_module

    from .asyncssh_peer import login_server, serve_forever

    if plain:
        dropped = {b"copy-data", b"posix-rename@openssh.com"}
        handler = sftp_module.SFTPServerHandler
        handler._extensions = [e for e in handler._extensions if e[0] not in dropped]

    class Jail(asyncssh.SFTPServer):
        def __init__(self, chan: asyncssh.SSHServerChannel) -> None:
            super().__init__(chan, chroot=str(root).encode())

        def write(self, file_obj: object, offset: int, data: bytes) -> Any:
            if quota is not None and offset + len(data) > quota:
                raise asyncssh.SFTPNoSpaceOnFilesystem("No space left on device")
            return super().write(file_obj, offset, data)

    server = login_server(USERNAME, PASSWORD)
    await serve_forever(port, host_key, server, sftp_factory=Jail, allow_scp=False)


def main() -> None:
    """Run the server until killed."""
    parser = server_arguments(__doc__, "--root", "--host-key")
    parser.add_argument("--plain", action="store_true", help="no copy-data, no posix-rename")
    parser.add_argument("--quota", type=int, help="bytes per file before writes fail: no space")
    args = parser.parse_args()
    asyncio.run(_serve(args.port, args.root, args.host_key, args.plain, args.quota))


if __name__ == "__main__":
    main()
