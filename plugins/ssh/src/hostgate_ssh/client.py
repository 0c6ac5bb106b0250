"""Opening an asyncssh connection to a stored connection's target, host key pinned.

The host key is fetched first and checked by the kernel (trust on first use,
refuse a changed key); the real connection then accepts only that exact key,
so credentials are never sent to a server the kernel has not approved.

A target behind jump hosts (``ConnectionTarget.via``) is reached through a chain of
connections, each made the same way through the previous one (asyncssh's
``tunnel``); the hops close when the target's connection closes.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import asyncssh
from hostgate import (
    ApiError,
    ConnectionTarget,
    RemoteAuthFailed,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
)

CONNECT_TIMEOUT = 15.0
_closers: set[asyncio.Task[None]] = set()


def _client_keys(target: ConnectionTarget) -> list[asyncssh.SSHKey] | None:
    if not target.private_key:
        return None
    passphrase = target.extra.get("passphrase") or None
    try:
        return [asyncssh.import_private_key(target.private_key, passphrase)]
    except (asyncssh.KeyImportError, ValueError) as exc:
        raise RemoteAuthFailed(f"the stored private key cannot be used: {exc}") from None


async def _server_key(
    target: ConnectionTarget, tunnel: asyncssh.SSHClientConnection | None = None
) -> asyncssh.SSHKey:
    server_key = await asyncio.wait_for(
        asyncssh.get_server_host_key(target.address, target.port, tunnel=tunnel, config=None),
        CONNECT_TIMEOUT,
    )
    if server_key is None:
        raise RemoteError("the SSH server presented no host key")
    return server_key


def _unreachable(target: ConnectionTarget, exc: Exception) -> RemoteUnreachable:
    return RemoteUnreachable(f"cannot reach SSH server {target.host}:{target.port}: {exc}")


async def fetch_host_key(target: ConnectionTarget) -> tuple[str, bytes]:
    """The server's host key ``(algorithm, public-key blob)``: a key exchange, no login."""
    hops = await connect_chain(target.via)
    try:
        server_key = await _server_key(target, hops[-1] if hops else None)
    except TimeoutError:
        raise RemoteTimeout(f"SSH server {target.host}:{target.port} did not answer") from None
    except (OSError, asyncssh.Error) as exc:
        raise _unreachable(target, exc) from None
    finally:
        close_all(hops)
    return server_key.get_algorithm(), server_key.public_data


def close_all(connections: Sequence[asyncssh.SSHClientConnection]) -> None:
    """Close connections, innermost first."""
    for connection in reversed(connections):
        connection.close()


async def connect_chain(hops: Sequence[ConnectionTarget]) -> list[asyncssh.SSHClientConnection]:
    """Connections to jump hosts, outermost first, each through the previous one."""
    made: list[asyncssh.SSHClientConnection] = []
    try:
        for hop in hops:
            try:
                made.append(await _connect_one(hop, made[-1] if made else None))
            except ApiError as exc:
                # say which hop failed: the target's own errors would be read as the target's
                raise type(exc)(f"jump host {hop.name!r}: {exc.message}", code=exc.code) from None
    except BaseException:
        close_all(made)
        raise
    return made


def _close_with(
    connection: asyncssh.SSHClientConnection, hops: Sequence[asyncssh.SSHClientConnection]
) -> None:
    """Close the jump hosts' connections once the connection through them is closed."""

    async def follow() -> None:
        try:
            await connection.wait_closed()
        finally:
            close_all(hops)

    task = asyncio.get_running_loop().create_task(follow())
    _closers.add(task)
    task.add_done_callback(_closers.discard)


async def connect(target: ConnectionTarget, **options: object) -> asyncssh.SSHClientConnection:
    """An authenticated SSH connection, through its jump hosts; Remote* errors say what failed."""
    hops = await connect_chain(target.via)
    try:
        connection = await _connect_one(target, hops[-1] if hops else None, **options)
    except BaseException:
        close_all(hops)
        raise
    if hops:
        _close_with(connection, hops)
    return connection


async def _connect_one(
    target: ConnectionTarget,
    tunnel: asyncssh.SSHClientConnection | None,
    **options: object,
) -> asyncssh.SSHClientConnection:
    keys = _client_keys(target)
    try:
        server_key = await _server_key(target, tunnel)
        if target.check_host_key is not None:
            await target.check_host_key(server_key.get_algorithm(), server_key.public_data)
        return await asyncssh.connect(
            target.address,
            target.port,
            tunnel=tunnel,
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
        raise RemoteError(
            f"SSH host key changed during connect: {exc.reason}", code="host_key_changed"
        ) from None
    except TimeoutError:
        raise RemoteTimeout(f"SSH server {target.host}:{target.port} did not answer") from None
    except (OSError, asyncssh.Error) as exc:
        raise _unreachable(target, exc) from None
