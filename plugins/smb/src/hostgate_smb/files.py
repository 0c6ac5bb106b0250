"""The ``smb`` RemoteFiles adapter: smbprotocol in the adapter's own threads.

smbprotocol blocks, so every call runs in a small thread pool owned by the
adapter (never the event loop's shared default pool). Transfers are streamed
in 1 MiB requests with several in flight at once; uploads go to a temporary
name in the destination directory (named, and removed on failure, by the
kernel's ``UploadStaging``) and are renamed over the final name only once
every byte was acknowledged.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from hostgate import (
    ConnectionTarget,
    InvalidInput,
    KernelAPI,
    RemoteEntry,
    UploadStaging,
    finish_anyway,
)
from smbprotocol.open import (
    CreateDisposition,
    CreateOptions,
    FilePipePrinterAccessMask,
    Open,
)

from .errors import mapped
from .share import (
    PIPELINE_DEPTH,
    Buffer,
    Pending,
    SmbShare,
    parent_and_name,
    quietly,
    share_path,
)

if TYPE_CHECKING:
    from .server import SmbServerFiles

T = TypeVar("T")
THREADS = 4
CLEANUP_SECONDS = 30.0
"""How long a cancelled transfer waits for its clean-up (collect the writes in flight,
delete the temporary file) before its session may be closed."""
OPERATIONS = frozenset({"list", "download", "upload", "mkdir", "delete", "rename"})


async def open_files(kernel: KernelAPI, target: ConnectionTarget) -> SmbFiles | SmbServerFiles:
    """The target's share, or (no share named) the whole server; Remote* errors say what failed.

    Without a share nothing is opened yet: ``/`` lists the server's shares and the
    first path segment names the share (``SmbServerFiles``).
    """
    share = str(target.extra.get("share") or "").strip().strip("\\/")
    if not share:
        from .server import SmbServerFiles

        return SmbServerFiles(target, kernel)
    if "\\" in share or "/" in share:
        raise InvalidInput("The share name must be one name, without slashes")
    return await open_share(target, share, UploadStaging.for_target(kernel, target))


async def open_share(
    target: ConnectionTarget, share: str, staging: UploadStaging | None = None
) -> SmbFiles:
    """Connect and authenticate to one share of the target's server."""
    files = SmbFiles(SmbShare(target, share), staging)
    try:
        await files.call(files.share.connect)
    except BaseException:
        await files.close()
        raise
    return files


class Unoffered:
    """The RemoteFiles operations no SMB adapter offers, refused in one place."""

    async def chmod(self, path: str, mode: int) -> None:
        """SMB has no Unix permissions: refused."""
        raise InvalidInput("chmod is not available on SMB connections")

    async def copy(self, src_path: str, dest_path: str) -> None:
        """SMB server-side copy is not offered by this adapter: refused."""
        raise InvalidInput("copy is not available on SMB connections")


class SmbFiles(Unoffered):
    """A file session on one SMB share."""

    operations = OPERATIONS

    def __init__(self, share: SmbShare, staging: UploadStaging | None = None) -> None:
        self.share = share
        self.staging = UploadStaging() if staging is None else staging
        self._pool = ThreadPoolExecutor(THREADS, thread_name_prefix="hostgate-smb")
        self._closed = False

    async def call(self, function: Callable[..., T], *args: Any) -> T:
        """Run a blocking smbprotocol call in the adapter's threads."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, function, *args)

    async def _cleanup(self, function: Callable[..., Any], *args: Any) -> None:
        """Run cleanup to completion even when the awaiting task is being cancelled.

        Waited for, not only shielded: an upload that failed because its client left is
        cancelled while it discards; going on at once, it gave its session back and the
        session was logged off under the discard, leaving the ``.part`` file behind.
        """
        await finish_anyway(self.call(quietly, function, *args), CLEANUP_SECONDS)

    async def _open(
        self, undo: Callable[[Open], Any], function: Callable[..., Open], *args: Any
    ) -> Open:
        """Open a handle in the adapter's threads.

        Cancelled meanwhile (the client went away), the open still completes in its
        thread: ``undo`` then runs on the handle it made (close it, delete the file).
        """
        opening = asyncio.ensure_future(self.call(function, *args))
        try:
            return await asyncio.shield(opening)
        except asyncio.CancelledError:
            await asyncio.shield(self._undo(opening, undo))
            raise

    async def _undo(self, opening: asyncio.Future[Open], undo: Callable[[Open], Any]) -> None:
        try:
            handle = await opening
        except Exception:
            return  # nothing was opened
        await self.call(quietly, undo, handle)

    async def list(self, path: str) -> list[RemoteEntry]:
        """Entries of a directory (without ``.`` and ``..``)."""
        return await self.call(self.share.list, path)

    async def stat(self, path: str) -> RemoteEntry:
        """Size, type and modification time of one path."""
        return await self.call(self.share.stat, path)

    async def mkdir(self, path: str) -> None:
        """Create a directory."""
        await self.call(self.share.mkdir, path)

    async def remove(self, path: str) -> None:
        """Delete a file, or a directory recursively."""
        await self.call(self.share.remove, path)

    async def rename(self, old_path: str, new_path: str) -> None:
        """Rename or move within the share."""
        await self.call(self.share.rename, old_path, new_path)

    async def read(
        self, path: str, offset: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream a file's bytes from ``offset`` (``length`` bytes, or to the end)."""
        smb = share_path(path)
        if offset < 0 or (length is not None and length < 0):
            raise InvalidInput("Invalid byte range")
        handle = await self._open(_close, self._open_for_read, smb, path)
        reader = _PipelinedReader(self.share, handle, path, offset, length)
        try:
            while True:
                chunk = await self.call(reader.next_chunk)
                if not chunk:
                    return
                yield chunk
        finally:
            await self._cleanup(reader.close)

    def _open_for_read(self, smb: str, path: str) -> Open:
        with mapped(path):
            return self.share.open(
                smb,
                FilePipePrinterAccessMask.FILE_READ_DATA
                | FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES,
                options=CreateOptions.FILE_NON_DIRECTORY_FILE,
            )

    async def write(self, path: str, chunks: AsyncIterator[bytes], size: int | None = None) -> int:
        """Write a file from chunks under a temporary name, then rename; return bytes."""
        final = share_path(path)
        if not parent_and_name(final)[1]:
            raise InvalidInput("An upload needs a file name")
        async with self.staging.upload(self, "/" + final.replace("\\", "/")) as temporary:
            handle = await self._open(_close, self._create_temporary, share_path(temporary), path)
            writer = _PipelinedWriter(self.share, handle, path)
            done = False
            parts: list[bytes] = []
            pending = 0
            try:
                async for chunk in chunks:
                    parts.append(chunk)
                    pending += len(chunk)
                    if pending >= writer.chunk:  # one thread hop per write, not per piece
                        await self.call(writer.send, parts)
                        parts = []
                        pending = 0
                await self.call(writer.finish, parts, final)
                done = True
            finally:
                if not done:  # the handle closes before the kernel removes the file
                    await self._cleanup(writer.abandon)
        return writer.written

    def _create_temporary(self, smb: str, path: str) -> Open:
        with mapped(path):
            return self.share.open(
                smb,
                FilePipePrinterAccessMask.FILE_WRITE_DATA
                | FilePipePrinterAccessMask.FILE_READ_ATTRIBUTES
                | FilePipePrinterAccessMask.DELETE,
                disposition=CreateDisposition.FILE_CREATE,
                options=CreateOptions.FILE_NON_DIRECTORY_FILE,
            )

    async def close(self) -> None:
        """Log off and stop the adapter's threads."""
        if self._closed:
            return
        self._closed = True
        try:
            await self._cleanup(self.share.close)
        finally:
            self._pool.shutdown(wait=False)


def _close(handle: Open) -> None:
    handle.close()


class _PipelinedReader:
    """Keeps up to PIPELINE_DEPTH read requests in flight; hands out bytes in order."""

    def __init__(
        self, share: SmbShare, handle: Open, path: str, offset: int, length: int | None
    ) -> None:
        self.share = share
        self.handle = handle
        self.path = path
        self.next_offset = offset
        size = int(handle.end_of_file or 0)
        self.end = size if length is None else min(size, offset + length)
        self.chunk = share.chunk_size(handle, "read")
        self.inflight: deque[Any] = deque()
        # A cancelled request leaves its thread running: cleanup waits for it.
        self.lock = threading.Lock()

    def _top_up(self) -> None:
        while len(self.inflight) < PIPELINE_DEPTH and self.next_offset < self.end:
            size = min(self.chunk, self.end - self.next_offset)
            prepared = self.handle.read(self.next_offset, size, send=False)
            pending = self.share.send_bulk(self.handle, prepared, len(self.inflight))
            if pending is None:
                return  # out of credits for now: collect a response first
            self.inflight.append((pending, size))
            self.next_offset += size

    def next_chunk(self) -> bytes:
        """The next chunk of the file, ``b""`` at the end of the range."""
        with self.lock, mapped(self.path):
            self._top_up()
            if not self.inflight:
                return b""
            pending, size = self.inflight.popleft()
            data: bytes = self.share.receive_bulk(pending)
            if len(data) < size:
                # The file shrank while being read: stop after what was there.
                self.end = 0
                self._drain()
            return data

    def _drain(self) -> None:
        while self.inflight:
            pending, _ = self.inflight.popleft()
            quietly(self.share.receive_bulk, pending)

    def close(self) -> None:
        """Collect outstanding responses and close the handle."""
        with self.lock:
            self._drain()
            self.handle.close()


class _PipelinedWriter:
    """Sends writes made of the upload's pieces, several in flight at once.

    A write is a list of pieces (a piece that spans two writes is split into views),
    joined once into the request smbprotocol packs and signs (``SmbShare.send_write``).
    """

    def __init__(self, share: SmbShare, handle: Open, path: str) -> None:
        self.share = share
        self.handle = handle
        self.path = path
        self.chunk = share.write_size(handle)
        self.offset = 0
        self.written = 0
        self.inflight: deque[Pending] = deque()
        self.lock = threading.Lock()
        self._held: list[Buffer] = []
        self._held_size = 0

    def _send(self, pieces: list[Buffer], size: int) -> None:
        while len(self.inflight) >= PIPELINE_DEPTH:
            self._collect_one()
        while (
            pending := self.share.send_write(self.handle, pieces, self.offset, len(self.inflight))
        ) is None:
            self._collect_one()  # out of credits for now: wait for an acknowledgement
        self.inflight.append(pending)
        self.offset += size

    def _collect_one(self) -> None:
        self.written += int(self.share.receive_bulk(self.inflight.popleft()))

    def _add(self, pieces: list[bytes]) -> None:
        """Send every full write the held pieces and ``pieces`` make; hold the rest."""
        held, size, chunk = self._held, self._held_size, self.chunk
        for piece in pieces:
            start, end = 0, len(piece)
            while end - start >= chunk - size:
                take = chunk - size
                whole = start == 0 and take == end
                held.append(piece if whole else memoryview(piece)[start : start + take])
                self._send(held, chunk)
                held, size = [], 0
                start += take
                chunk = self.chunk = self.share.write_size(self.handle)
            if start < end:
                held.append(piece if start == 0 else memoryview(piece)[start:])
                size += end - start
        self._held, self._held_size = held, size

    def send(self, pieces: list[bytes]) -> None:
        """Send ``pieces`` in writes of exactly ``chunk`` bytes; a shorter rest waits.

        Never one larger write, even when the server would take it: a request's
        credit charge grows with its size, and one the window cannot cover while
        nothing else is in flight would wait for credits that never come (a 6 MiB
        piece of an upload needs 96; the window grows only as requests are
        answered). ``chunk`` is 1 MiB until the window holds WRITE_CHUNK writes.
        """
        with self.lock, mapped(self.path):
            self._add(pieces)

    def finish(self, pieces: list[bytes], final: str) -> None:
        """Send the last pieces, wait for every acknowledgement, rename over the final name."""
        with self.lock, mapped(self.path):
            self._add(pieces)
            if self._held_size:
                self._send(self._held, self._held_size)
                self._held, self._held_size = [], 0
        with self.lock, mapped(self.path, target=self.path):
            while self.inflight:
                self._collect_one()
            self.share.rename_handle(self.handle, final, replace=True)
            self.handle.close()

    def abandon(self) -> None:
        """Collect what is in flight, then close the temporary file."""
        with self.lock:
            while self.inflight:
                quietly(self.share.receive_bulk, self.inflight.popleft())
            self.handle.close()
