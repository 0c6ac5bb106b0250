"""Opening an asyncssh connection to a stored connection's target, host key pinned.

The host key is fetched first and checked by the kernel (trust on first use,
refuse a changed key); the real connection then accepts only that exact key,
so credentials are never sent to a server the kernel has not approved.
"""

from __future__ import annotations

import asyncio

import asyncssh
from hostgate import (
    ConnectionTarget,
    RemoteAuthFailed,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
)

CONNECT_TIMEOUT = 15.0


def _client_keys(target: ConnectionTarget) -> list[asyncssh.SSHKey] | None:
    if not target.private_key:
        return None
    passphrase = target.extra.get("passphrase") or None
    try:
        return [asyncssh.import_private_key(target.private_key, passphrase)]
    except (asyncssh.KeyImportError, ValueError) as exc:
        raise RemoteAuthFailed(f"the stored private key cannot be used: {exc}") from None


async def _server_key(target: ConnectionTarget) -> asyncssh.SSHKey:
    server_key = await asyncio.wait_for(
        asyncssh.get_server_host_key(target.address, target.port, config=None),
        CONNECT_TIMEOUT,
    )
    if server_key is None:
        raise RemoteError("the SSH server presented no host key")
    return server_key


def _unreachable(target: ConnectionTarget, exc: Exception) -> RemoteUnreachable:
    return RemoteUnreachable(f"cannot reach SSH server {target.host}:{target.port}: {exc}")


async def fetch_host_key(target: ConnectionTarget) -> tuple[str, bytes]:
    """The server's host key ``(algorithm, public-key blob)``: a key exchange, no login."""
    try:
        server_key = await _server_key(target)
    except TimeoutError:
        raise RemoteTimeout(f"SSH server {target.host}:{target.port} did not answer") from None
    except (OSError, asyncssh.Error) as exc:
        raise _unreachable(target, exc) from None
    return server_key.get_algorithm(), server_key.public_data


async def connect(target: ConnectionTarget, **options: object) -> asyncssh.SSHClientConnection:
    """An authenticated SSH connection; Remote* errors say what failed."""
    keys = _client_keys(target)
    try:
        server_key = await _server_key(target)
        if target.check_host_key is not None:
            await target.check_host_key(server_key.get_algorithm(), server_key.public_data)
        return await asyncssh.connect(
            target.address,
            target.port,
            username=target.username or "root",
            password=target.password if not keys else None,
            client_keys=keys or (),
            known_hosts=([server_key], [], []),
            connect_timeout=CONNECT_TIMEOUT,
            login_timeout=CONNECT_TIMEOUT,
            agent_path=None,
            **options,  # type: ignore[arg-type]
        )
    except asyncssh.PermissionDenied as exc:
        raise RemoteAuthFailed(f"SSH authentication failed: {exc.reason}") from None
    except asyncssh.HostKeyNotVerifiable as exc:
        raise RemoteError(f"SSH host key changed during connect: {exc.reason}") from None
    except TimeoutError:
        raise RemoteTimeout(f"SSH server {target.host}:{target.port} did not answer") from None
    except (OSError, asyncssh.Error) as exc:
        raise _unreachable(target, exc) from None
