"""The ``sftp`` RemoteFiles adapter over asyncssh.

Transfers are pipelined: a download keeps ``READ_AHEAD`` block reads in flight
and yields them in order; an upload keeps ``WRITE_AHEAD`` block writes in
flight. Memory per transfer stays at about (ahead x block size), whatever the
file size. Uploads go to a hidden temporary name in the target directory and
are renamed over the final name only once every byte is written (the kernel's
``UploadStaging`` names and removes the temporary file), so an aborted upload
never leaves a partial file under the final name. Copies use
the server's ``copy-data`` extension when offered, else the bytes stream
through the gateway - never a shell command.
"""

from __future__ import annotations

import asyncio
import posixpath
import stat as stat_module
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Iterable
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

import asyncssh
from hostgate import (
    FILE_OPERATIONS,
    ApiError,
    Conflict,
    ConnectionTarget,
    InvalidInput,
    KernelAPI,
    RemoteEntry,
    RemoteError,
    RemoteFiles,
    RemoteNotFound,
    RemotePermissionDenied,
    RemoteUnreachable,
    UploadStaging,
    finish_anyway,
)

from .client import connect

T = TypeVar("T")

MAX_BLOCK = 256 * 1024
"""Largest read/write request; servers advertise their own limit (OpenSSH: 255 KiB)."""
READ_AHEAD = 16
WRITE_AHEAD = 16
KEEPALIVE_SECONDS = 15
CLEANUP_SECONDS = 15
WINDOW = 8 * 1024 * 1024
"""SSH channel window: enough for READ_AHEAD blocks in flight."""
PACKET_SIZE = 32 * 1024
"""Largest SSH packet the server may send on the SFTP channel (asyncssh's default)."""
TRANSFER_CIPHERS = (
    "aes128-gcm@openssh.com",
    "aes256-gcm@openssh.com",
    "chacha20-poly1305@openssh.com",
    "aes128-ctr",
    "aes192-ctr",
    "aes256-ctr",
)
"""Cipher preference: AES-GCM first (hardware AES makes it about twice as fast in
asyncssh as chacha20-poly1305, asyncssh's own first choice); the server picks
from what it also offers."""


def _mapped(exc: BaseException, path: str) -> ApiError:
    """An asyncssh failure as the kernel's error: says what happened to which path."""
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, asyncssh.SFTPNoSuchFile | asyncssh.SFTPNoSuchPath):
        return RemoteNotFound(f"No such file or directory: {path}")
    if isinstance(exc, asyncssh.SFTPPermissionDenied | asyncssh.SFTPWriteProtect):
        return RemotePermissionDenied(f"Permission denied by the SFTP server: {path}")
    if isinstance(exc, asyncssh.SFTPFileAlreadyExists):
        return Conflict(f"Already exists: {path}", code="already_exists")
    if isinstance(exc, asyncssh.SFTPDirNotEmpty):
        return Conflict(f"Directory not empty: {path}", code="directory_not_empty")
    if isinstance(exc, asyncssh.SFTPNotADirectory):
        return InvalidInput(f"Not a directory: {path}", code="not_a_directory")
    if isinstance(exc, asyncssh.SFTPFileIsADirectory):
        return InvalidInput(f"Is a directory: {path}", code="is_directory")
    if isinstance(exc, asyncssh.SFTPNoSpaceOnFilesystem | asyncssh.SFTPQuotaExceeded):
        return RemoteError(f"No space left on the SFTP server ({exc.reason})", code="remote_full")
    if isinstance(exc, asyncssh.SFTPConnectionLost | asyncssh.SFTPNoConnection):
        return RemoteUnreachable(f"SFTP connection lost: {exc.reason}")
    if isinstance(exc, asyncssh.SFTPError):
        return RemoteError(f"SFTP server error on {path}: {exc.reason or 'failure'}")
    if isinstance(exc, asyncssh.DisconnectError | asyncssh.ChannelOpenError | OSError):
        return RemoteUnreachable(f"SFTP connection lost: {exc}")
    if isinstance(exc, TimeoutError):
        return RemoteError(f"SFTP request timed out on {path}")
    return RemoteError(f"SFTP operation on {path} failed: {exc}")


async def _call(path: str, action: Awaitable[T]) -> T:
    """Await an SFTP request, mapping its failure."""
    try:
        return await action
    except (asyncssh.Error, OSError, TimeoutError) as exc:
        raise _mapped(exc, path) from None


def _when(seconds: float | int | None) -> datetime | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC)


def _is_dir(attrs: asyncssh.SFTPAttrs) -> bool:
    if attrs.type == asyncssh.FILEXFER_TYPE_DIRECTORY:
        return True
    return attrs.permissions is not None and stat_module.S_ISDIR(attrs.permissions)


def _is_link(attrs: asyncssh.SFTPAttrs) -> bool:
    if attrs.type == asyncssh.FILEXFER_TYPE_SYMLINK:
        return True
    return attrs.permissions is not None and stat_module.S_ISLNK(attrs.permissions)


def _entry(name: str, attrs: asyncssh.SFTPAttrs, is_dir: bool | None = None) -> RemoteEntry:
    mode = attrs.permissions
    if mode is not None and stat_module.S_IFMT(mode) == 0:
        kind = attrs.type
        if kind == asyncssh.FILEXFER_TYPE_DIRECTORY:
            mode |= stat_module.S_IFDIR
        elif kind == asyncssh.FILEXFER_TYPE_SYMLINK:
            mode |= stat_module.S_IFLNK
        elif kind == asyncssh.FILEXFER_TYPE_REGULAR:
            mode |= stat_module.S_IFREG
    return RemoteEntry(
        name=name,
        is_dir=_is_dir(attrs) if is_dir is None else is_dir,
        size=attrs.size or 0,
        mode=mode,
        uid=attrs.uid,
        gid=attrs.gid,
        atime=_when(attrs.atime),
        mtime=_when(attrs.mtime),
    )


def _split(path: str) -> tuple[str, str]:
    trimmed = path.rstrip("/") or path
    return posixpath.dirname(trimmed), posixpath.basename(trimmed)


class SftpFiles:
    """One SSH connection with an SFTP channel, as the kernel's ``RemoteFiles``."""

    operations = FILE_OPERATIONS

    def __init__(
        self,
        connection: asyncssh.SSHClientConnection,
        sftp: asyncssh.SFTPClient,
        staging: UploadStaging | None = None,
    ):
        self._connection = connection
        self._sftp = sftp
        self.staging = UploadStaging() if staging is None else staging
        limits = sftp.limits
        self.read_block = min(MAX_BLOCK, limits.max_read_len or MAX_BLOCK)
        self.write_block = min(MAX_BLOCK, limits.max_write_len or MAX_BLOCK)

    @property
    def server_copies(self) -> bool:
        """True when the server offers the ``copy-data`` extension."""
        return bool(self._sftp.supports_remote_copy)

    async def list(self, path: str) -> list[RemoteEntry]:
        """Directory entries; symbolic links report whether their target is a directory."""
        names = await _call(path, self._sftp.readdir(path))
        entries: list[RemoteEntry] = []
        links: list[tuple[int, str, asyncssh.SFTPAttrs]] = []
        for item in names:
            name = str(item.filename)
            if name in (".", ".."):
                continue
            if _is_link(item.attrs):
                links.append((len(entries), name, item.attrs))
            entries.append(_entry(name, item.attrs))
        if links:
            targets = await asyncio.gather(
                *(self._sftp.stat(posixpath.join(path, name)) for _, name, _ in links),
                return_exceptions=True,
            )
            for (index, name, attrs), target in zip(links, targets, strict=True):
                if isinstance(target, asyncssh.SFTPAttrs):
                    entries[index] = _entry(name, attrs, is_dir=_is_dir(target))
        return entries

    async def stat(self, path: str) -> RemoteEntry:
        """Attributes of a path (symbolic links followed)."""
        attrs = await _call(path, self._sftp.stat(path))
        return _entry(_split(path)[1] or path, attrs)

    async def _lexists(self, path: str) -> bool:
        try:
            await self._sftp.lstat(path)
        except asyncssh.SFTPNoSuchFile:
            return False
        except (asyncssh.Error, OSError) as exc:
            raise _mapped(exc, path) from None
        return True

    def read(self, path: str, offset: int = 0, length: int | None = None) -> AsyncIterator[bytes]:
        """Stream ``length`` bytes (or to the end) from ``offset``, reads pipelined."""
        return self._read(path, offset, length)

    async def _read(self, path: str, offset: int, length: int | None) -> AsyncIterator[bytes]:
        block = self.read_block
        handle: asyncssh.SFTPClientFile | None = None
        pending: deque[tuple[int, int, asyncio.Task[bytes]]] = deque()
        try:
            handle = await _call(path, self._sftp.open(path, "rb", block_size=block))
            if length is None:
                end = (await _call(path, handle.stat())).size or 0
            else:
                end = offset + length
            position = offset
            while position < end or pending:
                while position < end and len(pending) < READ_AHEAD:
                    size = min(block, end - position)
                    task = asyncio.ensure_future(_read_block(handle, size, position))
                    pending.append((position, size, task))
                    position += size
                start, wanted, task = pending.popleft()
                data = await _call(path, task)
                while 0 < len(data) < wanted:
                    more = await _call(
                        path, _read_block(handle, wanted - len(data), start + len(data))
                    )
                    if not more:
                        break
                    data += more
                if not data:
                    return
                yield data
                if len(data) < wanted:
                    return
        finally:
            await finish_anyway(
                _close_transfer(handle, [t for _, _, t in pending]), CLEANUP_SECONDS
            )

    async def write(self, path: str, chunks: AsyncIterator[bytes], size: int | None = None) -> int:
        """Write ``chunks`` to a temporary name beside ``path``, then rename it over ``path``."""
        name = _split(path)[1]
        if not name or name in (".", ".."):
            raise InvalidInput(f"not a file name: {path}")
        existing_mode: int | None = None
        try:
            current = await self._sftp.stat(path)
        except asyncssh.SFTPNoSuchFile:
            current = None
        except (asyncssh.Error, OSError) as exc:
            raise _mapped(exc, path) from None
        if current is not None:
            if _is_dir(current):
                raise InvalidInput(f"Is a directory: {path}", code="is_directory")
            if current.permissions is not None:
                existing_mode = current.permissions & 0o7777
        async with self.staging.upload(self, path) as temp:
            written = await self._store(temp, path, chunks)
            if existing_mode is not None:
                await _quietly(self._sftp.chmod(temp, existing_mode))
            await self._replace(temp, path)
        return written

    async def _store(self, temp: str, path: str, chunks: AsyncIterator[bytes]) -> int:
        """Write ``chunks`` into the new file ``temp``, writes pipelined; return bytes."""
        handle: asyncssh.SFTPClientFile | None = None
        pending: set[asyncio.Task[None]] = set()
        written = 0
        try:
            handle = await _call(path, self._sftp.open(temp, "wb", block_size=self.write_block))
            parts: list[bytes | memoryview] = []
            buffered = 0
            async for chunk in chunks:
                parts.append(chunk)
                buffered += len(chunk)
                if buffered >= self.write_block:
                    # one join; the blocks are views of it (asyncssh copies each once
                    # into its packet), so the bytes are not copied again to be cut
                    data = memoryview(b"".join(parts))
                    parts.clear()
                    for start in range(0, len(data) - self.write_block + 1, self.write_block):
                        piece = data[start : start + self.write_block]
                        await self._queue_write(handle, piece, written, pending, path)
                        written += len(piece)
                    rest = len(data) % self.write_block
                    if rest:
                        parts.append(data[len(data) - rest :])
                    buffered = rest
            if buffered:
                tail = b"".join(parts)
                await self._queue_write(handle, tail, written, pending, path)
                written += len(tail)
            await _drain(pending, path)
            await _call(path, handle.close())
            handle = None
        except BaseException:
            # the writes in flight stop and the handle closes before the kernel removes ``temp``
            await finish_anyway(_close_transfer(handle, pending), CLEANUP_SECONDS)
            raise
        return written

    async def _queue_write(
        self,
        handle: asyncssh.SFTPClientFile,
        data: bytes | memoryview,
        offset: int,
        pending: set[asyncio.Task[None]],
        path: str,
    ) -> None:
        while len(pending) >= WRITE_AHEAD:
            done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            pending.difference_update(done)
            # Read every finished task's outcome before raising: several writes can
            # fail together when the server dies, and each exception must be retrieved.
            errors = [error for task in done if (error := task.exception()) is not None]
            if errors:
                raise _mapped(errors[0], path)

        async def write() -> None:
            # asyncssh takes any bytes-like object here (it builds the packet with +)
            await handle.write(cast(bytes, data), offset)

        pending.add(asyncio.ensure_future(write()))

    async def _replace(self, source: str, target: str) -> None:
        """Rename over an existing file: atomically with posix-rename when offered."""
        try:
            await self._sftp.posix_rename(source, target)
            return
        except asyncssh.SFTPOpUnsupported:
            pass
        except (asyncssh.Error, OSError) as exc:
            raise _mapped(exc, target) from None
        if await self._lexists(target):
            await _call(target, self._sftp.remove(target))
        await _call(target, self._sftp.rename(source, target))

    async def mkdir(self, path: str) -> None:
        """Create one directory."""
        try:
            await self._sftp.mkdir(path)
        except (asyncssh.Error, OSError) as exc:
            if isinstance(exc, asyncssh.SFTPFailure) and await self._lexists(path):
                raise Conflict(f"Already exists: {path}", code="already_exists") from None
            raise _mapped(exc, path) from None

    async def remove(self, path: str) -> None:
        """Delete a file or link, or a directory with everything below it (never ``/``).

        The kernel refuses ``/`` as written; a relative path such as ``../..`` is
        resolved here, so it cannot reach the root either.
        """
        attrs = await _call(path, self._sftp.lstat(path))
        if _is_dir(attrs) and not _is_link(attrs):
            if await _call(path, self._sftp.realpath(path)) == "/":
                raise InvalidInput(
                    "The root directory cannot be deleted; delete what is in it one by one",
                    code="root_not_deletable",
                )
            await _call(path, self._sftp.rmtree(path))
        else:
            await _call(path, self._sftp.remove(path))

    async def rename(self, old_path: str, new_path: str) -> None:
        """Rename or move; an existing target is refused (409), never overwritten."""
        await _call(old_path, self._sftp.lstat(old_path))
        if await self._lexists(new_path):
            raise Conflict(f"Already exists: {new_path}", code="already_exists")
        await _call(old_path, self._sftp.rename(old_path, new_path))

    async def chmod(self, path: str, mode: int) -> None:
        """Set the permission bits."""
        await _call(path, self._sftp.chmod(path, mode & 0o7777))

    async def copy(self, src_path: str, dest_path: str) -> None:
        """Copy a file or tree: ``copy-data`` on the server when offered, else streamed."""
        source = await _call(src_path, self._sftp.lstat(src_path))
        if await self._lexists(dest_path):
            raise Conflict(f"Already exists: {dest_path}", code="already_exists")
        if _is_dir(source):
            real_source = await _call(src_path, self._sftp.realpath(src_path))
            parent, name = _split(dest_path)
            real_parent = await _call(dest_path, self._sftp.realpath(parent or "."))
            real_dest = posixpath.join(real_parent, name)
            if real_dest == real_source or real_dest.startswith(real_source.rstrip("/") + "/"):
                raise InvalidInput("cannot copy a directory into itself", code="copy_into_self")
        await _call(
            src_path,
            self._sftp.copy(
                src_path,
                dest_path,
                recurse=True,
                preserve=True,
                follow_symlinks=False,
                block_size=self.read_block,
                max_requests=READ_AHEAD,
            ),
        )

    async def close(self) -> None:
        """Close the SFTP channel and the SSH connection."""
        self._sftp.exit()
        self._connection.close()
        await _quietly(self._connection.wait_closed())


async def _read_block(handle: asyncssh.SFTPClientFile, size: int, offset: int) -> bytes:
    return cast(bytes, await handle.read(size, offset))


async def _drain(pending: set[asyncio.Task[None]], path: str) -> None:
    while pending:
        done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        pending.difference_update(done)
        for task in done:
            error = task.exception()
            if error is not None:
                raise _mapped(error, path)


async def _close_transfer(
    handle: asyncssh.SFTPClientFile | None, pending: Iterable[asyncio.Task[Any]]
) -> None:
    """Cancel a transfer's requests in flight, then close its file (quietly)."""
    pending = list(pending)
    for task in pending:
        task.cancel()
    await asyncio.gather(*pending, return_exceptions=True)
    if handle is not None:
        await _quietly(handle.close())


async def _quietly(action: Awaitable[Any]) -> None:
    """Best-effort clean-up: errors ignored (it also runs inside a cancelled task)."""
    try:
        await asyncio.wait_for(action, 10)
    except Exception:
        return


async def open_files(kernel: KernelAPI, target: ConnectionTarget) -> RemoteFiles:
    """An SFTP session on the connection's server (host key checked by the kernel)."""
    connection = await connect(
        target,
        keepalive_interval=KEEPALIVE_SECONDS,
        keepalive_count_max=4,
        encryption_algs=TRANSFER_CIPHERS,
        window=WINDOW,
        max_pktsize=PACKET_SIZE,
    )
    try:
        try:
            sftp = await connection.start_sftp_client(path_errors="surrogateescape")
        except (asyncssh.Error, OSError) as exc:
            raise RemoteError(f"the SSH server does not offer SFTP: {exc}") from None
        files = SftpFiles(connection, sftp, UploadStaging.for_target(kernel, target))
        await files.staging.retry(files)
    except BaseException:
        # also when cancelled (the client went away while the session opened): nobody
        # else holds the connection, which would stay open until the process ends
        connection.close()
        raise
    return files
