"""File work for one request: a caller's operations on one connection's remote files.

``FileTransfers.open`` resolves the protocol and the caller's access; the
``FileWork`` it returns runs operations on a pooled session (errors translated
into the API's statuses, a broken session discarded), streams uploads and
downloads under a lease, and records each file event. ``api/files.py`` keeps
only HTTP: the request's body, query, Range and headers.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, NoReturn

from ...adapters import RemoteEntry, RemoteFiles
from ...descriptors import ProtocolSpec
from ...errors import ApiError, Conflict, InvalidInput, NotAuthenticated, NotFound
from ...rights import ActionDenied
from .file_sessions import SessionRef, human_size
from .remote_file_pool import FileLease, keeps_session, translate

if TYPE_CHECKING:
    from ...adapters import ConnectionTarget
    from ..connections.connections import Connections
    from ..identity.identity import Caller
    from .file_sessions import FileSessionLog
    from .remote_file_pool import RemoteFilePool

log = logging.getLogger("hostgate.files")

QUICK_TIMEOUT = 120.0
"""Seconds for operations that do not move file contents (list, stat, mkdir, rename, chmod)."""
CLEANUP_SECONDS = 15.0
"""How long an adapter may take to close a stream; after that its session is discarded."""


def require(adapter: RemoteFiles, spec: ProtocolSpec, operation: str) -> None:
    """Refuse an operation the protocol does not offer (404, like a route that is not there)."""
    if operation not in adapter.operations:
        raise NotFound(f"{spec.name} does not support {operation}", code="unsupported_operation")


@functools.cache
def takes_size(adapter_class: type) -> bool:
    """Whether an adapter's ``write`` takes the declared ``size`` (warns once if it does not).

    ``size`` came in after the first packs were written: their ``write(path, chunks)``
    keeps working, called without it, with a ``DeprecationWarning`` naming the class.
    """
    write = getattr(adapter_class, "write", None)
    try:
        parameters = inspect.signature(write).parameters if write is not None else {}
    except (TypeError, ValueError):
        return False
    if "size" in parameters or any(
        p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()
    ):
        return True
    warnings.warn(
        f"{adapter_class.__module__}.{adapter_class.__qualname__}.write() takes no 'size': "
        "accept 'size: int | None = None' (the declared upload length); "
        "calling it without is deprecated",
        DeprecationWarning,
        stacklevel=2,
    )
    return False


async def _give_back(lease: FileLease, exc: BaseException, protocol: str) -> NoReturn:
    """Release a lease after ``exc`` (keeping the session when the error allows) and re-raise."""
    await lease.release(healthy=isinstance(exc, Exception) and keeps_session(exc))
    if isinstance(exc, Exception):
        raise translate(exc, protocol) from None
    raise exc


class FileTransfers:
    """Opens ``FileWork`` for a caller, a file protocol and a stored connection."""

    def __init__(
        self,
        *,
        pool: RemoteFilePool,
        log: FileSessionLog,
        connections: Connections,
        protocols: Mapping[str, ProtocolSpec],
        login_alive: Callable[[str], Awaitable[bool]],
    ) -> None:
        self.pool = pool
        self.log = log
        self.connections = connections
        self.protocols = protocols
        self.login_alive = login_alive

    async def ended_error(self, caller: Caller, reason: str) -> ApiError:
        """The answer to a transfer the gateway stopped (``kernel.live`` closed its session).

        A revoked or expired login is a 401 ``session_revoked``, as the next request would
        get, so a browser returns to sign-in; anything else (access lost, the connection
        deleted, ended by an administrator) a 409 ``transfer_ended`` giving the reason.
        """
        login = caller.login_session_id
        if login is not None and not await self.login_alive(login):
            return NotAuthenticated("Session has been revoked", code="session_revoked")
        return Conflict(f"The gateway stopped this transfer: {reason}", code="transfer_ended")

    def spec(self, protocol: str) -> ProtocolSpec:
        """The loaded protocol with file access of that name, else 404."""
        spec = self.protocols.get(protocol)
        if spec is None or spec.open_files is None:
            raise NotFound(f"No file protocol named {protocol[:40]!r}", code="unknown_protocol")
        return spec

    async def open(
        self, protocol: str, connection_id: str, caller: Caller, client_key: str | None
    ) -> FileWork:
        """Protocol, connection access and the file session the events go to."""
        spec = self.spec(protocol)
        target = await self.connections.target_for(caller, connection_id, spec)
        ref = SessionRef(
            user_id=caller.user_id,
            username=caller.username,
            connection_id=target.connection_id,
            connection_name=target.name,
            protocol=spec.name,
            client_key=client_key,
        )
        return FileWork(self, spec, caller, target, ref)


class FileWork:
    """One caller's work on one connection's files.

    Usable after the request: a streamed download records its event when the
    body is done.
    """

    def __init__(
        self,
        transfers: FileTransfers,
        spec: ProtocolSpec,
        caller: Caller,
        target: ConnectionTarget,
        ref: SessionRef,
    ) -> None:
        self.transfers = transfers
        self.spec = spec
        self.caller = caller
        self.target = target
        self.ref = ref

    async def allow(self, action: str, path: str) -> None:
        """Refuse (403 ``action_denied``, audited) an action this caller may not do here."""
        if self.target.allows(action):
            return
        await self.target.refuse(action, f"file browser: {path}")
        raise ActionDenied(action)

    async def run(
        self,
        operation: str,
        action: Callable[[RemoteFiles], Awaitable[Any]],
        *,
        retry: bool = False,
        timeout: float | None = QUICK_TIMEOUT,
    ) -> Any:
        """Run an adapter operation on a pooled session."""

        async def guarded(adapter: RemoteFiles) -> Any:
            require(adapter, self.spec, operation)
            return await action(adapter)

        return await self.transfers.pool.call(
            self.caller, self.spec, self.target, guarded, retry=retry, timeout=timeout
        )

    async def log(self, action: str, path: str, detail: str = "") -> None:
        """Record a file event for this work's file session."""
        await self.transfers.log.record(self.ref, action, path, detail, actor=self.caller)

    async def upload(
        self,
        path: str,
        chunks: AsyncIterator[bytes],
        received: Callable[[], int],
        size: int | None = None,
    ) -> None:
        """Write ``chunks`` into a remote file under a lease, then record the upload.

        ``received()`` counts the bytes read so far: a transfer broken off after
        its first byte may leave protocol state behind, so its session is discarded.
        ``size`` (the declared length, None when unknown) reaches the adapter's ``write``.
        """
        lease = await self.transfers.pool.acquire(self.caller, self.spec, self.target)
        healthy = False
        try:
            require(lease.adapter, self.spec, "upload")
            adapter = lease.adapter
            if takes_size(type(adapter)):
                written = await adapter.write(path, chunks, size=size)
            else:
                written = await adapter.write(path, chunks)
            healthy = True
        except Exception as exc:
            healthy = keeps_session(exc) and received() == 0
            raise translate(exc, self.spec.name) from None
        except asyncio.CancelledError:
            reason = lease.entry.ended
            task = asyncio.current_task()
            if reason is None or task is None:
                raise  # the client went away, or the server stops
            task.uncancel()  # cancelled by the live registry: answer why instead
            raise await self.transfers.ended_error(self.caller, reason) from None
        finally:
            await lease.release(healthy=healthy)
        size = written if isinstance(written, int) else received()
        await self.log("upload", path, human_size(size))

    async def start_download(self, path: str) -> Download:
        """Lease a session and stat the file (a directory is refused)."""
        lease = await self.transfers.pool.acquire(self.caller, self.spec, self.target)
        try:
            require(lease.adapter, self.spec, "download")
            entry = await lease.adapter.stat(path)
            if entry.is_dir:
                raise InvalidInput(
                    "path is a directory; download files one at a time", code="is_directory"
                )
        except BaseException as exc:
            await _give_back(lease, exc, self.spec.name)
        return Download(self, lease, path, entry)


class Download:
    """A leased session and the file's attributes, before any byte is sent."""

    def __init__(self, work: FileWork, lease: FileLease, path: str, entry: RemoteEntry) -> None:
        self.work = work
        self.lease = lease
        self.path = path
        self.entry = entry

    async def abandon(self, exc: BaseException) -> NoReturn:
        """Give the lease back after ``exc`` (e.g. a 416) and raise it, translated for the API."""
        await _give_back(self.lease, exc, self.work.spec.name)

    async def release(self) -> None:
        """Give the lease back unused (a HEAD request)."""
        await self.lease.release(healthy=True)

    async def stream(self, offset: int, length: int, detail: str) -> DownloadStream:
        """The response body, primed: a file that cannot be read fails here, translated."""
        stream = DownloadStream(self.work, self.lease, self.path, offset, length, detail)
        try:
            await stream.prime()
        except Exception as exc:
            raise translate(exc, self.work.spec.name) from None
        return stream


class DownloadStream:
    """The body of a download: remote chunks, lease released however it ends.

    ``prime`` opens the remote file and reads the first chunk before the
    response starts, so a file that cannot be read still gets a proper status.
    """

    def __init__(
        self,
        work: FileWork,
        lease: FileLease,
        path: str,
        offset: int,
        length: int,
        detail: str,
    ) -> None:
        self._work = work
        self._lease = lease
        self._path = path
        self._offset = offset
        self._length = length
        self._detail = detail
        self._sent = 0
        self._chunks: AsyncIterator[bytes] | None = None
        self._first: bytes | None = None
        self._exhausted = False
        self._settling: asyncio.Task[None] | None = None
        lease.on_abandon = self.aclose

    async def prime(self) -> None:
        """Open the remote file and fetch the first chunk (errors raise here, untranslated)."""
        try:
            self._chunks = aiter(self._lease.adapter.read(self._path, self._offset, self._length))
            self._first = await anext(self._chunks)
        except StopAsyncIteration:
            self._exhausted = True
        except BaseException as exc:
            await self._finish(False, exc)
            raise

    def __aiter__(self) -> DownloadStream:
        return self

    async def __anext__(self) -> bytes:
        if self._settling is not None:
            raise StopAsyncIteration
        try:
            while True:
                remaining = self._length - self._sent
                if self._first is not None:
                    chunk, self._first = self._first, None
                elif self._exhausted or remaining <= 0 or self._chunks is None:
                    raise StopAsyncIteration
                else:
                    chunk = await anext(self._chunks)
                if len(chunk) > remaining:
                    chunk = chunk[:remaining]
                if chunk:
                    self._sent += len(chunk)
                    return chunk
        except StopAsyncIteration:
            await self._finish(self._sent == self._length)
            if self._sent != self._length:
                raise translate(
                    EOFError(f"file ended after {self._sent} of {self._length} bytes"),
                    self._work.spec.name,
                ) from None
            raise
        except BaseException as exc:
            await self._finish(False, exc)
            raise

    async def aclose(self) -> None:
        """Called when the response ends, also when it was never iterated."""
        await self._finish(False)

    async def _finish(self, ok: bool, error: BaseException | None = None) -> None:
        """Close the remote file and give the lease back, once, whoever asks first.

        The settling runs in a task of its own that a cancellation of the request does
        not interrupt: a client closes its connection as soon as it has the last byte,
        which cancels the request while the remote file is still being closed (an SMB
        or SFTP round trip). Interrupted there, the lease was never given back and
        after four downloads the connection's pool was full (a 429 for the next
        transfer); now the lease goes back, the session is kept, the event recorded.
        """
        if self._settling is None:
            self._settling = asyncio.create_task(self._settle(ok, error))
            self._lease.hand_over(self._settling)
        await asyncio.shield(self._settling)

    async def _settle(self, ok: bool, error: BaseException | None) -> None:
        healthy = ok or (isinstance(error, Exception) and keeps_session(error))
        try:
            if self._chunks is not None and hasattr(self._chunks, "aclose"):
                try:
                    await asyncio.wait_for(self._chunks.aclose(), CLEANUP_SECONDS)
                except Exception as exc:
                    log.debug("closing a download stream failed: %s", exc)
                    healthy = False
        except BaseException:
            healthy = False  # cancelled by the gateway itself (a revoked login)
            raise
        finally:
            await self._lease.release(healthy=healthy)
        if ok:
            try:
                await self._work.log("download", self._path, self._detail)
            except Exception:
                log.exception("recording a download event failed")
