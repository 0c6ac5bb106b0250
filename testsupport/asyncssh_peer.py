"""The server side the asyncssh test servers share (``asyncssh_server``, ``asyncssh_shell``).

Each of them runs in its own subprocess and calls :func:`serve_forever` there with what
it serves (an SFTP factory, a process factory...).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import asyncssh


def host_key(path: Path) -> asyncssh.SSHKey:
    """The ed25519 host key kept at ``path``, generated and written there the first time
    (a server started again on the same files presents the same key)."""
    if path.exists():
        return asyncssh.read_private_key(str(path))
    key = asyncssh.generate_private_key("ssh-ed25519")
    key.write_private_key(str(path))
    return key


def login_server(
    username: str, password: str, authorized: asyncssh.SSHAuthorizedKeys | None = None
) -> type[asyncssh.SSHServer]:
    """An ``SSHServer`` class that lets ``username`` in with ``password`` and, when
    ``authorized`` is given, with one of those public keys."""

    class Server(asyncssh.SSHServer):
        def begin_auth(self, user: str) -> bool:
            return True

        def password_auth_supported(self) -> bool:
            return True

        def validate_password(self, user: str, given: str) -> bool:
            return user == username and given == password

        def public_key_auth_supported(self) -> bool:
            return authorized is not None

        def validate_public_key(self, user: str, key: asyncssh.SSHKey) -> bool:
            if authorized is None or user != username:
                return False
            return authorized.validate(key, "127.0.0.1", "127.0.0.1") is not None

    return Server


async def serve_forever(
    port: int,
    host_key_path: Path,
    server_factory: type[asyncssh.SSHServer],
    **options: Any,
) -> None:
    """Listen on 127.0.0.1:``port`` with the host key at ``host_key_path`` until killed;
    ``options`` go to ``asyncssh.listen`` (``sftp_factory``, ``process_factory``...)."""
    await asyncssh.listen(
        "127.0.0.1",
        port,
        server_host_keys=[host_key(host_key_path)],
        server_factory=server_factory,
        **options,
    )
    await asyncio.Event().wait()
