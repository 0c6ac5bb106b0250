"""Remote file sessions reused across requests: a small pool per user and connection.

Opening an SFTP/SMB/FTP session costs a handshake, so the file routes lease an
open ``RemoteFiles`` adapter from here for each operation and hand it back
afterwards. Each adapter serves one operation at a time (FTP control
connections are not concurrent); a user may hold up to ``max_per_key`` at once
on one connection. Idle adapters close after ``idle_seconds``; every adapter is
registered in ``kernel.live`` so revoking access closes it at once, and re-checked
(``access_problem``: the user, the connection and every jump host it goes through)
when access changes and every ``ACCESS_CHECK_SECONDS``.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import Field

from ...adapters import ConnectionTarget, RemoteFiles
from ...closereasons import CloseReason
from ...descriptors import ProtocolSpec
from ...errors import (
    ApiError,
    InvalidInput,
    RateLimited,
    RemoteError,
    RemoteTimeout,
    RemoteUnreachable,
)
from ...tasks import Rerun, cancel_and_wait
from .live_sessions import LiveSession
from .session_access import Problem

if TYPE_CHECKING:
    from ...contract import KernelAPI
    from ..identity.identity import Caller
    from ..lifecycle import Lifecycle
    from .live_sessions import LiveSessions

log = logging.getLogger("hostgate.files")

T = TypeVar("T")
PoolKey = tuple[str, str, str, str]
"""(user id, connection id, file protocol, digest of the resolved target)."""

MAX_PATH_BYTES = 4096
OPEN_TIMEOUT = 60.0
"""Seconds an adapter may take to connect and authenticate."""
RETRY_AFTER_SECONDS = 5
"""``Retry-After`` of the 429 when every session of a connection stayed busy."""
ACCESS_CHECK_SECONDS = 30.0
"""How often open adapters re-check their user's access besides on every change."""
AccessProblem = Callable[["Caller", ConnectionTarget], Awaitable[Problem | None]]
"""Why a user may no longer use a target and its jump hosts (code, reason, its code), or None."""
HOLDER_CLEANUP_SECONDS = 8.0
"""How long a cancelled transfer may clean up before its adapter closes under it (the
live registry bounds a closer at 10 s)."""


RemotePath = Annotated[
    str, Field(strict=True, min_length=1, max_length=MAX_PATH_BYTES, pattern=r"^[^\x00]*$")
]
"""A remote path in a request: not empty, no NUL (``check_path`` also counts its bytes)."""


def check_path(value: str, name: str = "path", *, allow_empty: bool = False) -> str:
    """A remote path as given, after checks: no NUL, encodable, at most 4096 bytes.

    Remote paths are only ever handed to the adapter (the remote server decides
    what they mean); nothing here touches the gateway's own filesystem.
    """
    if not isinstance(value, str):
        raise InvalidInput(f"{name} must be a string")
    if not value and not allow_empty:
        raise InvalidInput(f"{name} is required")
    if "\x00" in value:
        raise InvalidInput(f"{name} must not contain NUL characters")
    try:
        # surrogateescape: names that are not UTF-8 on the server round-trip as listed
        encoded = value.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        raise InvalidInput(f"{name} is not valid UTF-8") from None
    if len(encoded) > MAX_PATH_BYTES:
        raise InvalidInput(f"{name} is longer than {MAX_PATH_BYTES} bytes")
    return value


def check_not_root(path: str) -> str:
    """Refuse a path that names the remote root (``/``, ``//``, ``/a/..``): never deleted.

    Only the lexical form is judged here, for every protocol; an adapter whose
    relative paths can climb to the root (SFTP's ``..``) resolves and refuses too.
    """
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    if path.startswith("/") and not parts:
        raise InvalidInput(
            "The root directory cannot be deleted; delete what is in it one by one",
            code="root_not_deletable",
        )
    return path


def translate(error: BaseException, protocol: str) -> ApiError:
    """Any failure of an adapter as an ApiError: Remote* errors pass, the rest is a 502/504."""
    if isinstance(error, ApiError):
        return error
    if isinstance(error, TimeoutError):
        return RemoteTimeout(f"the {protocol} server did not answer in time")
    text = str(error) or type(error).__name__
    if isinstance(error, ConnectionError | EOFError):
        return RemoteUnreachable(f"the {protocol} connection failed: {text}")
    return RemoteError(f"{protocol} operation failed: {text}")


def keeps_session(error: BaseException) -> bool:
    """True when the remote answered a clean refusal (4xx), so the session is still good."""
    return isinstance(error, ApiError) and error.status < 500


def target_digest(target: ConnectionTarget) -> str:
    """Changes whenever anything that shapes the remote session changes (credentials too)."""
    material = json.dumps(
        [
            target.protocol,
            target.host,
            target.address,
            target.port,
            target.username,
            target.password,
            target.private_key,
            sorted((str(k), repr(v)) for k, v in target.extra.items()),
            target.skip_cert_validation,
        ]
    )
    return hashlib.sha256(material.encode()).hexdigest()


@dataclass(eq=False)
class PooledFiles:
    """One open adapter."""

    id: str
    key: PoolKey
    adapter: RemoteFiles
    last_used: float = field(default_factory=time.monotonic)
    closed: bool = False
    holder: asyncio.Task[Any] | None = None
    """The task that leases it now (a request streaming a transfer), if any."""
    ended: str | None = None
    """Why ``kernel.live`` closed it (a revoked login, lost access...), once it did."""
    caller: Caller | None = None
    """Who opened it (its access is re-checked as theirs)."""
    target: ConnectionTarget | None = None
    let_go: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when the current lease is given back (its holder has cleaned up)."""


@dataclass(eq=False)
class _Slot:
    """The adapters of one pool key."""

    semaphore: asyncio.Semaphore
    idle: list[PooledFiles] = field(default_factory=list)
    leased: int = 0
    waiting: int = 0


class FileLease:
    """An adapter leased for one operation (or one streamed transfer).

    A lease lives no longer than the task that took it (the request): a task that
    ends without giving it back (a response never sent, a path that forgot) gives
    it back then, its session discarded, after ``on_abandon`` ran. So the pool
    never stays full of leases nobody holds.
    """

    def __init__(self, pool: RemoteFilePool, slot: _Slot, entry: PooledFiles, reused: bool):
        self._pool = pool
        self._slot = slot
        self.entry = entry
        self.reused = reused
        self.released = False
        self.on_abandon: Callable[[], Awaitable[None]] | None = None
        """Clean-up run before an abandoned lease is given back (a download's stream
        closes its remote file); it may give the lease back itself."""
        self._holder = asyncio.current_task()
        entry.holder = self._holder
        entry.let_go = asyncio.Event()
        if self._holder is not None:
            self._holder.add_done_callback(self._holder_ended)

    @property
    def adapter(self) -> RemoteFiles:
        """The leased adapter."""
        return self.entry.adapter

    def _holder_ended(self, _task: asyncio.Task[Any]) -> None:
        if not self.released:
            self._pool._reclaim(self)

    def hand_over(self, task: asyncio.Task[Any]) -> None:
        """From now on ``task`` holds the lease (a transfer finishing in a task of its own)."""
        if self.released:
            return
        if self._holder is not None:
            self._holder.remove_done_callback(self._holder_ended)
        self._holder = task
        self.entry.holder = task
        task.add_done_callback(self._holder_ended)

    async def release(self, *, healthy: bool) -> None:
        """Hand the adapter back (kept for reuse when healthy, else closed). Idempotent."""
        if self.released:
            return
        self.released = True
        if self._holder is not None:
            self._holder.remove_done_callback(self._holder_ended)
        self.entry.holder = None
        try:
            await self._pool._give_back(self._slot, self.entry, healthy)
        finally:
            self.entry.let_go.set()


class RemoteFilePool:
    """Leases open ``RemoteFiles`` adapters per user, connection and file protocol."""

    def __init__(
        self,
        *,
        live: LiveSessions,
        api: KernelAPI,
        lifecycle: Lifecycle,
        idle_seconds: float = 60.0,
        max_per_key: int = 4,
        wait_seconds: float = 30.0,
    ) -> None:
        self.live = live
        # handed to the protocol pack that opens the remote files
        self.api = api
        self.idle_seconds = idle_seconds
        self.max_per_key = max_per_key
        self.wait_seconds = wait_seconds
        self._slots: dict[PoolKey, _Slot] = {}
        self._entries: dict[str, PooledFiles] = {}
        self._sweeper: asyncio.Task[None] | None = None
        self._reclaiming: set[asyncio.Task[None]] = set()
        self._stopping = False
        self.access_problem: AccessProblem | None = None
        """Set by the kernel: the sessions' access check (``session_access``)."""
        self._checks: set[asyncio.Task[Any]] = set()
        self._access_changes = Rerun(self.recheck, self._checks)
        lifecycle.on_start(self.start)
        lifecycle.on_stop(self.stop)

    async def start(self) -> None:
        """Start closing idle adapters in the background."""
        self._stopping = False
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="hostgate-files-sweeper")

    async def stop(self) -> None:
        """Close every adapter (shutdown)."""
        self._stopping = True
        await cancel_and_wait(self._sweeper)
        self._sweeper = None
        if self._reclaiming:
            await asyncio.wait(set(self._reclaiming), timeout=HOLDER_CLEANUP_SECONDS)
        for entry in list(self._entries.values()):
            await self._close(entry, "server shutting down")
        self._slots.clear()

    def open_count(self) -> int:
        """How many adapters are open (idle or leased)."""
        return len(self._entries)

    def leased_count(self) -> int:
        """How many adapters are leased now, over every user and connection."""
        return sum(slot.leased for slot in self._slots.values())

    async def acquire(
        self, caller: Caller, spec: ProtocolSpec, target: ConnectionTarget, *, fresh: bool = False
    ) -> FileLease:
        """Lease an adapter for this caller and target: a pooled one, or a new one."""
        if spec.open_files is None:
            raise InvalidInput(f"{spec.name} offers no file access")
        key: PoolKey = (caller.user_id, target.connection_id, spec.name, target_digest(target))
        slot = self._slots.get(key)
        if slot is None:
            slot = self._slots[key] = _Slot(asyncio.Semaphore(self.max_per_key))
        slot.waiting += 1
        try:
            await asyncio.wait_for(slot.semaphore.acquire(), self.wait_seconds)
        except TimeoutError:
            raise RateLimited(
                f"Too many file transfers at once on this connection: each user may run "
                f"{self.max_per_key} in parallel, and none of yours finished within "
                f"{self.wait_seconds:g} s; try again when one has finished",
                retry_after=RETRY_AFTER_SECONDS,
                code="too_many_transfers",
                extra={"limit": self.max_per_key},
            ) from None
        finally:
            slot.waiting -= 1
        slot.leased += 1
        try:
            while slot.idle:
                entry = slot.idle.pop()
                if fresh or entry.closed:
                    await self._close(entry, "replaced")
                    continue
                return FileLease(self, slot, entry, reused=True)
            adapter = await self._open(spec, target)
            entry = PooledFiles(
                id=str(uuid.uuid4()), key=key, adapter=adapter, caller=caller, target=target
            )
            self._entries[entry.id] = entry
            self.live.add(
                LiveSession(
                    id=entry.id,
                    kind="files",
                    protocol=spec.name,
                    user_id=caller.user_id,
                    login_session_id=caller.login_session_id,
                    connection_id=target.connection_id,
                    close=functools.partial(self._end, entry),
                    info={"connectionName": target.name},
                )
            )
            return FileLease(self, slot, entry, reused=False)
        except BaseException:
            slot.leased -= 1
            slot.semaphore.release()
            raise

    async def _open(self, spec: ProtocolSpec, target: ConnectionTarget) -> RemoteFiles:
        assert spec.open_files is not None
        try:
            return await asyncio.wait_for(spec.open_files(self.api, target), OPEN_TIMEOUT)
        except Exception as exc:
            raise translate(exc, spec.name) from None

    def _reclaim(self, lease: FileLease) -> None:
        """A lease whose task ended without giving it back: clean up and give it back now."""
        log.warning("a %s file session outlived its request; reclaimed", lease.entry.key[2])
        task = asyncio.get_running_loop().create_task(self._give_back_abandoned(lease))
        self._reclaiming.add(task)
        task.add_done_callback(self._reclaiming.discard)

    async def _give_back_abandoned(self, lease: FileLease) -> None:
        try:
            if lease.on_abandon is not None:
                await asyncio.wait_for(lease.on_abandon(), HOLDER_CLEANUP_SECONDS)
        except Exception as exc:
            log.debug("cleaning up after an abandoned file lease failed: %s", exc)
        finally:
            await lease.release(healthy=False)

    async def _give_back(self, slot: _Slot, entry: PooledFiles, healthy: bool) -> None:
        slot.leased -= 1
        slot.semaphore.release()
        if healthy and not entry.closed and not self._stopping:
            entry.last_used = time.monotonic()
            slot.idle.append(entry)
        else:
            await self._close(entry, "discarded")

    async def _end(self, entry: PooledFiles, reason: str, reason_code: CloseReason | None) -> None:
        """The ``kernel.live`` closer: a leased adapter's holder is cancelled first.

        An operation in flight (an upload waiting for its body when the server shuts
        down, a transfer of a revoked login) then cleans up while its connection is
        still open (an upload removes its temporary file) before the adapter closes.
        """
        entry.ended = reason
        holder = entry.holder
        if holder is not None and holder is not asyncio.current_task() and not holder.done():
            holder.cancel()
            # until it gave the lease back (the request itself may go on answering why)
            released = asyncio.ensure_future(entry.let_go.wait())
            await asyncio.wait(
                {holder, released}, timeout=HOLDER_CLEANUP_SECONDS, return_when="FIRST_COMPLETED"
            )
            released.cancel()
        await self._close(entry, reason)

    async def _close(self, entry: PooledFiles, reason: str) -> None:
        """Close one adapter (idempotent); also the ``kernel.live`` closer."""
        self.live.remove(entry.id)
        self._entries.pop(entry.id, None)
        slot = self._slots.get(entry.key)
        if slot is not None and entry in slot.idle:
            slot.idle.remove(entry)
        if entry.closed:
            return
        entry.closed = True
        try:
            await asyncio.wait_for(entry.adapter.close(), 10)
        except Exception as exc:
            log.debug("closing file session %s (%s) failed: %s", entry.id, reason, exc)

    async def sweep(self) -> int:
        """Close adapters idle longer than ``idle_seconds``; returns how many."""
        now = time.monotonic()
        closed = 0
        for key, slot in list(self._slots.items()):
            for entry in list(slot.idle):
                if now - entry.last_used >= self.idle_seconds:
                    await self._close(entry, "idle")
                    closed += 1
            if not slot.idle and slot.leased == 0 and slot.waiting == 0:
                self._slots.pop(key, None)
        return closed

    async def _sweep_forever(self) -> None:
        interval = max(0.5, min(10.0, self.idle_seconds / 4))
        checked = time.monotonic()
        while True:
            await asyncio.sleep(interval)
            try:
                await self.sweep()
                if time.monotonic() - checked >= ACCESS_CHECK_SECONDS:
                    checked = time.monotonic()
                    await self.recheck()
            except Exception:
                log.exception("closing idle file sessions failed")

    async def recheck(self) -> int:
        """Close the adapters whose user lost access; return how many.

        Access to the connection and to every jump host it goes through; a transfer
        in flight is cancelled first.
        """
        check = self.access_problem
        if check is None:
            return 0
        ended = 0
        for entry in list(self._entries.values()):
            if entry.closed or entry.ended or entry.caller is None or entry.target is None:
                continue
            try:
                problem = await check(entry.caller, entry.target)
                if problem is not None and not entry.closed:
                    await self._end(entry, problem[1], problem[2])
                    ended += 1
            except Exception:
                log.exception("re-checking file session %s failed", entry.id)
        return ended

    def access_changed(self) -> None:
        """Users, roles, connections or access requests changed (any node): re-check soon."""
        if self._entries:
            self._access_changes.request()

    async def call(
        self,
        caller: Caller,
        spec: ProtocolSpec,
        target: ConnectionTarget,
        operation: Callable[[RemoteFiles], Awaitable[T]],
        *,
        retry: bool = False,
        timeout: float | None = None,
    ) -> T:
        """Run one operation on a leased adapter, errors translated.

        With ``retry`` (idempotent operations), a pooled adapter whose connection
        died while idle is replaced by a fresh one and the operation runs again.
        """
        lease = await self.acquire(caller, spec, target)
        while True:
            try:
                if timeout is None:
                    result = await operation(lease.adapter)
                else:
                    result = await asyncio.wait_for(operation(lease.adapter), timeout)
            except BaseException as exc:
                healthy = isinstance(exc, Exception) and keeps_session(exc)
                await lease.release(healthy=healthy)
                if not isinstance(exc, Exception):
                    raise
                if retry and lease.reused and not healthy:
                    lease = await self.acquire(caller, spec, target, fresh=True)
                    retry = False
                    continue
                raise translate(exc, spec.name) from None
            await lease.release(healthy=True)
            return result
