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
MAX_BANNER_CHARS = 64 * 1024
"""The most characters of authentication banners a server may send before login."""
MAX_KBDINT_ROUNDS = 8
"""The most keyboard-interactive challenges a server may send in one login."""
PASSWORD_PROMPTS = ("password", "passcode")
_closers: set[asyncio.Task[None]] = set()


class GuardedClient(asyncssh.SSHClient):
    """Bounds what a server may send before login (docs/terminals.md, "Hostile servers").

    Banners past ``MAX_BANNER_CHARS`` end the connection; keyboard-interactive is
    answered as asyncssh would with the stored password (a single password prompt,
    once; empty challenges with nothing), for at most ``MAX_KBDINT_ROUNDS`` rounds.
    ``refusal`` says why the guard ended the login, if it did.
    """

    def __init__(self, password: str | None) -> None:
        self._password = password
        self._guarded_conn: asyncssh.SSHClientConnection | None = None
        self._banner_chars = 0
        self._rounds = 0
        self.refusal: str | None = None

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        """Remember the connection, to end it when the server goes too far."""
        self._guarded_conn = conn

    def _refuse(self, reason: str) -> None:
        self.refusal = reason
        if self._guarded_conn is not None:
            self._guarded_conn.disconnect(asyncssh.DISC_PROTOCOL_ERROR, reason)

    def auth_banner_received(self, msg: str, lang: str) -> None:
        """Count the banner; end the connection past the bound."""
        self._banner_chars += len(msg)
        if self._banner_chars > MAX_BANNER_CHARS and self.refusal is None:
            self._refuse(
                f"the SSH server sent more than {MAX_BANNER_CHARS // 1024} KiB of login banners"
            )

    def kbdint_auth_requested(self) -> str | None:
        """Keyboard-interactive only with a stored password (as asyncssh would)."""
        return "" if self._password is not None else None

    def kbdint_challenge_received(
        self, name: str, instructions: str, lang: str, prompts: Sequence[tuple[str, bool]]
    ) -> Sequence[str] | None:
        """Answer a password prompt once and empty challenges, for a bounded number of rounds."""
        self._rounds += 1
        if self._rounds > MAX_KBDINT_ROUNDS:
            self._refuse(
                f"the SSH server sent more than {MAX_KBDINT_ROUNDS} keyboard-interactive "
                "challenges without finishing the login"
            )
            return None
        if not prompts:
            return []
        if len(prompts) == 1 and self._password is not None:
            prompt = prompts[0][0].lower()
            if any(word in prompt for word in PASSWORD_PROMPTS):
                password, self._password = self._password, None
                return [password]
        return None


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
    guard = GuardedClient(target.password if not keys else None)
    try:
        connection = await _login(target, tunnel, keys, guard, options)
    except ApiError:
        if guard.refusal is None:
            raise
        connection = None
    if connection is None or guard.refusal is not None:
        # the guard ended the login: its reason, not the lost connection's
        if connection is not None:
            connection.close()
        refusal = guard.refusal or "the SSH login was ended"
        raise RemoteError(refusal[:1].upper() + refusal[1:])
    return connection


async def _login(
    target: ConnectionTarget,
    tunnel: asyncssh.SSHClientConnection | None,
    keys: list[asyncssh.SSHKey] | None,
    guard: GuardedClient,
    options: dict[str, object],
) -> asyncssh.SSHClientConnection:
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
            client_factory=lambda: guard,
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
