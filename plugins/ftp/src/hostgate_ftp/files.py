"""The ``ftp`` RemoteFiles adapter over aioftp (FTP, or explicit FTPS with ``ftps``).

Paths are absolute from the FTP root; ``..`` never climbs above it and line
breaks are refused (they would smuggle commands). Listings change into the
directory and list it without an argument, so names with spaces or glob
characters are never parsed by the server as ``ls`` patterns. Uploads go to a
temporary name in the destination directory and are renamed when complete.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from functools import partial
from typing import Any, cast

import aioftp
from aioftp.client import DataConnectionThrottleStreamIO
from hostgate import (
    ApiError,
    Conflict,
    ConnectionTarget,
    InvalidInput,
    KernelAPI,
    OutboundAPI,
    RemoteEntry,
    RemoteError,
    RemoteNotFound,
    RemotePermissionDenied,
    Unprocessable,
    UploadStaging,
)

from .client import SOCKET_TIMEOUT, FtpClient
from .errors import is_code, mapped, refusal
from .pool import Pool

OPERATIONS = frozenset({"list", "download", "upload", "mkdir", "delete", "rename", "stat"})
READ_CHUNK = 4 * 1024 * 1024
MAX_LISTING_BYTES = 32 * 1024 * 1024
"""The most bytes of one directory listing read from the server (docs/files.md, "Limits")."""
MAX_ENTRIES = 100_000
"""The most entries one listing may hold (502 past it), and one recursive delete (422)."""
MAX_TREE_DEPTH = 128
"""The deepest a directory tree a recursive delete walks (422 past it)."""
"""Most bytes one read of a data connection returns (``filling.CAPACITY``: its pieces whole)."""
_SEPARATORS = re.compile(r"/+")


def ftp_path(path: str, home: str = "/") -> str:
    """An absolute, normalised server path; ``..`` stops at the root.

    A relative path (``.``, ``docs/a.txt``) starts at ``home``, the directory
    the login lands in.
    """
    if any(character in path for character in "\r\n\x00"):
        raise InvalidInput("Paths must not contain line breaks or NUL characters")
    path = path.replace("\\", "/")
    if not path.startswith("/"):
        path = f"{home}/{path}"
    parts: list[str] = []
    for part in _SEPARATORS.split(path):
        if part in ("", "."):
            continue
        if part == "..":
            if parts:
                parts.pop()
            continue
        parts.append(part)
    return "/" + "/".join(parts)


def _split(path: str) -> tuple[str, str]:
    parent, _, name = path.rpartition("/")
    return parent or "/", name


def _timestamp(value: str | None) -> datetime | None:
    """``YYYYMMDDHHMMSS[.fff]`` (MLSD, MDTM) as an aware UTC datetime."""
    if not value:
        return None
    digits, _, fraction = value.strip().partition(".")
    digits = digits[:14]
    try:
        if len(digits) == 14 and digits.isascii() and digits.isdigit():
            # the usual spelling, read directly: strptime costs seconds over a big listing
            year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:8])
            hour, minute, second = int(digits[8:10]), int(digits[10:12]), int(digits[12:14])
            moment = datetime(year, month, day, hour, minute, second, tzinfo=UTC)
        else:
            moment = datetime.strptime(digits, "%Y%m%d%H%M%S").replace(tzinfo=UTC)
    except ValueError:
        return None
    if fraction.isdigit():
        moment = moment.replace(microsecond=int(fraction[:6].ljust(6, "0")))
    return moment


def _facts(line: str) -> tuple[dict[str, str], str]:
    """An MLSD/MLST line ``type=file;size=3;modify=...; name`` as (facts, name)."""
    facts, _, name = line.rstrip("\r\n").partition(" ")
    info: dict[str, str] = {}
    for fact in facts.rstrip(";").split(";"):
        key, _, value = fact.partition("=")
        info[key.lower()] = value
    return info, name


def _entry(name: str, info: dict[str, Any]) -> RemoteEntry | None:
    kind = str(info.get("type", "")).lower()
    # a name no path can address ("/" or NUL inside) is skipped, never passed on
    if kind in ("cdir", "pdir") or name in ("", ".", "..") or "/" in name or "\0" in name:
        return None
    is_dir = kind == "dir"
    size = str(info.get("size", "0") or "0")
    return RemoteEntry(
        name=name,
        is_dir=is_dir,
        size=0 if is_dir or not size.isdigit() else int(size),
        mtime=_timestamp(info.get("modify")),
    )


def _delete_refused(exc: aioftp.StatusCodeError, path: str) -> ApiError:
    """The error for a server's refusal met while deleting ``path``."""
    error = refusal(exc, path)
    if type(error) is RemotePermissionDenied or not is_code(exc, "55"):
        return error
    return RemotePermissionDenied(
        f"The FTP server refused to delete {path}: {' '.join(exc.info).strip()}"
    )


async def receive(stream: DataConnectionThrottleStreamIO, size: int) -> bytes:
    """Up to ``size`` bytes from a data connection.

    ``asyncio.timeout`` rather than aioftp's ``wait_for`` wrapper: on Python
    3.11 ``wait_for`` can swallow a cancellation (a client that went away),
    and a transfer must stop when its request is cancelled.
    """
    async with asyncio.timeout(SOCKET_TIMEOUT):
        return await stream.reader.read(size)


def queue(stream: DataConnectionThrottleStreamIO, data: bytes) -> bool:
    """Hand ``data`` to a data connection; whether it went without a wait being needed.

    A piece that leaves the transport's buffer under its high-water mark needs
    none: ``drain()`` would return at once, but awaiting it (with a timeout armed
    and errors mapped) cost about as much as the rest of
    the piece's way through the gateway. A closing transport always waits, so a
    lost connection is noticed at the next piece.
    """
    writer = stream.writer
    writer.write(data)
    transport = cast(asyncio.WriteTransport, writer.transport)
    high = transport.get_write_buffer_limits()[1]
    return not transport.is_closing() and transport.get_write_buffer_size() < high


async def drained(stream: DataConnectionThrottleStreamIO) -> None:
    """Wait until the data connection's buffer is under its limit (see ``receive``)."""
    async with asyncio.timeout(SOCKET_TIMEOUT):
        await stream.writer.drain()


async def _policy_check(outbound: OutboundAPI, address: str, port: int) -> str:
    return await outbound.check(address, port, purpose="ftp data connection")


async def open_files(kernel: KernelAPI | None, target: ConnectionTarget) -> FtpFiles:
    """Log in to the target now (errors surface here) and return the adapter.

    Every data connection is checked by the network policy first (``kernel`` is
    None only in adapter-level tests).
    """
    check_data = None
    if kernel is not None:
        check_data = partial(_policy_check, kernel.outbound)
    pool = Pool(target, check_data)
    home = await pool.start()
    return FtpFiles(pool, home, UploadStaging.for_target(kernel, target))


class FtpFiles:
    """A file session on one FTP server."""

    operations = OPERATIONS

    def __init__(self, pool: Pool, home: str = "/", staging: UploadStaging | None = None) -> None:
        self.pool = pool
        self.home = home
        self.staging = UploadStaging() if staging is None else staging

    def _path(self, path: str) -> str:
        return ftp_path(path, self.home)

    # -- listings -----------------------------------------------------------

    async def _lines(self, client: FtpClient) -> tuple[list[bytes], bool]:
        """Raw lines of the current directory's listing and whether they are MLSD."""
        commands = ["MLSD"] if "MLST" in client.features else []
        commands += ["LIST -a", "LIST"]
        for index, command in enumerate(commands):
            try:
                stream = await client.get_stream(command, "1xx")
            except aioftp.StatusCodeError as exc:
                if index + 1 < len(commands) and is_code(exc, "50"):
                    continue
                raise
            data = bytearray()
            try:
                while chunk := await receive(stream, READ_CHUNK):
                    data += chunk
                    if len(data) > MAX_LISTING_BYTES:
                        raise RemoteError(
                            "The FTP server's directory listing is larger than "
                            f"{MAX_LISTING_BYTES // (1024 * 1024)} MiB; hostgate stopped reading it"
                        )
            except BaseException:
                # the server's reply to an abandoned listing is never read: the pool drops it
                client.broken = True
                raise
            finally:
                stream.close()
            await client.command(None, "2xx", "1xx")
            return bytes(data).splitlines(), command == "MLSD"
        raise InvalidInput("The FTP server offers no directory listing")

    def _parse(self, client: FtpClient, lines: list[bytes], mlsd: bool) -> list[RemoteEntry]:
        entries: list[RemoteEntry] = []
        for line in lines:
            if not line.strip() or line.lower().startswith(b"total "):
                continue
            try:
                if mlsd:
                    info, name = _facts(line.decode(client.encoding))
                else:
                    path, info = client.parse_list_line(line)  # type: ignore[assignment]
                    name = str(path)
            except (ValueError, UnicodeDecodeError):
                continue
            entry = _entry(name, info)
            if entry is None:
                continue
            if len(entries) >= MAX_ENTRIES:
                raise RemoteError(
                    f"The FTP server's directory listing has more than {MAX_ENTRIES:,} "
                    "entries; hostgate lists at most that many"
                )
            entries.append(entry)
        return entries

    async def _listing(self, client: FtpClient, path: str) -> list[RemoteEntry]:
        """Entries of ``path``; RemoteNotFound / InvalidInput when it is not a directory."""
        try:
            await client.command("CWD " + path, "2xx")
        except aioftp.StatusCodeError as exc:
            if not is_code(exc, "5"):
                raise
            found = await self._probe(client, path)
            if found is None:
                raise RemoteNotFound(f"No such file or directory: {path}") from None
            if not found.is_dir:
                raise InvalidInput(f"Not a directory: {path}") from None
            raise RemotePermissionDenied(f"Permission denied by the FTP server: {path}") from None
        lines, mlsd = await self._lines(client)
        # a big listing takes a while to parse: off the event loop, so others are served
        return await asyncio.to_thread(self._parse, client, lines, mlsd)

    async def _probe(self, client: FtpClient, path: str) -> RemoteEntry | None:
        """What is at ``path``, or None when nothing is (or it cannot be seen)."""
        if path == "/":
            return RemoteEntry(name="/", is_dir=True)
        if "MLST" in client.features:
            try:
                _, info = await client.command("MLST " + path, "2xx")
            except aioftp.StatusCodeError:
                return None
            for line in info[1:]:
                facts, _ = _facts(line.strip())
                if "type" in facts:
                    return _entry(_split(path)[1], facts)
            return None
        parent, name = _split(path)
        try:
            await client.command("CWD " + parent, "2xx")
            lines, mlsd = await self._lines(client)
        except aioftp.StatusCodeError:
            return None
        for entry in self._parse(client, lines, mlsd):
            if entry.name == name:
                if not entry.is_dir and "MDTM" in client.features:
                    try:
                        _, info = await client.command("MDTM " + path, "213")
                        precise = _timestamp(info[0])
                        if precise is not None:
                            return RemoteEntry(name, False, entry.size, mtime=precise)
                    except aioftp.StatusCodeError:
                        pass
                return entry
        return None

    async def list(self, path: str) -> list[RemoteEntry]:
        """Entries of a directory (without ``.`` and ``..``)."""
        target = self._path(path)
        async with self.pool.client() as client, mapped(target):
            return await self._listing(client, target)

    async def stat(self, path: str) -> RemoteEntry:
        """Size, modification time and type of one path."""
        target = self._path(path)
        async with self.pool.client() as client, mapped(target):
            found = await self._probe(client, target)
        if found is None:
            raise RemoteNotFound(f"No such file or directory: {target}")
        return found

    # -- transfers ----------------------------------------------------------

    async def read(
        self, path: str, offset: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream a file's bytes from ``offset`` (``length`` bytes, or to the end)."""
        target = self._path(path)
        if offset < 0 or (length is not None and length < 0):
            raise InvalidInput("Invalid byte range")
        async with self.pool.client() as client:
            async with mapped(target):
                try:
                    stream = await client.get_stream("RETR " + target, "1xx", offset=offset)
                except aioftp.StatusCodeError as exc:
                    raise await self._explain(client, exc, target, reading=True) from None
            client.broken = True  # until the transfer is confirmed complete
            remaining = length
            last = b""
            try:
                while remaining is None or remaining > 0:
                    want = READ_CHUNK if remaining is None else min(READ_CHUNK, remaining)
                    async with mapped(target):
                        data = await receive(stream, want)
                    if not data:
                        break
                    if remaining is not None:
                        remaining -= len(data)
                        if remaining <= 0:
                            last = data  # handed out once the transfer is settled
                            break
                    yield data
                at_end = True
                if last:
                    async with mapped(target):
                        at_end = not await receive(stream, 1)
            finally:
                stream.close()
            if at_end:
                # Settle the transfer before the final chunk: a consumer that stops
                # after the bytes it asked for leaves a reusable control connection.
                async with mapped(target):
                    await client.command(None, "2xx", "1xx")
                client.broken = False
            # else: a range that stopped before the end of the file; the transfer is
            # aborted and this control connection is dropped, not resynchronised.
            if last:
                yield last

    async def write(self, path: str, chunks: AsyncIterator[bytes], size: int | None = None) -> int:
        """Write a file from chunks under a temporary name, then rename; return bytes."""
        target = self._path(path)
        if not _split(target)[1]:
            raise InvalidInput("An upload needs a file name")
        written = 0
        async with self.staging.upload(self, target) as temporary, self.pool.client() as client:
            async with mapped(target):
                try:
                    stream = await client.get_stream("STOR " + temporary, "1xx")
                except aioftp.StatusCodeError as exc:
                    raise await self._explain(client, exc, target, writing=True) from None
            client.broken = True  # until the server confirmed the whole file
            try:
                # Each piece goes out as it comes (pieces that waited were joined
                # upstream): holding one back until more arrive leaves the server
                # idle while the client sends the next.
                async for chunk in chunks:
                    if not queue(stream, chunk):
                        async with mapped(target):
                            await drained(stream)
                    written += len(chunk)
            finally:
                stream.close()
            async with mapped(target):
                await client.command(None, "2xx", "1xx")
                client.broken = False
                try:
                    await client.command("RNFR " + temporary, "350")
                    await client.command("RNTO " + target, "2xx")
                except aioftp.StatusCodeError as exc:
                    raise await self._explain(client, exc, target, writing=True) from None
        return written

    # -- changes ------------------------------------------------------------

    async def mkdir(self, path: str) -> None:
        """Create one directory (its parent must exist)."""
        target = self._path(path)
        if target == "/":
            raise Conflict("Already exists: /")
        async with self.pool.client() as client, mapped(target):
            try:
                await client.command("MKD " + target, "257")
            except aioftp.StatusCodeError as exc:
                if await self._probe(client, target) is not None:
                    raise Conflict(f"Already exists: {target}") from None
                raise await self._explain(client, exc, target, writing=True) from None

    async def remove(self, path: str) -> None:
        """Delete a file, or a directory with everything in it."""
        target = self._path(path)
        if target == "/":
            raise InvalidInput("The root directory cannot be deleted")
        async with self.pool.client() as client, mapped(target):
            found = await self._probe(client, target)
            if found is None:
                raise RemoteNotFound(f"No such file or directory: {target}")
            await self._remove(client, target, found.is_dir)

    async def _remove(self, client: FtpClient, path: str, is_dir: bool) -> None:
        """Delete ``path`` and what is under it, deepest first; refuse a tree past the bounds.

        The whole tree is listed before anything is deleted (iteratively), so a tree
        deeper than ``MAX_TREE_DEPTH`` (a server may even list a directory inside itself)
        or larger than ``MAX_ENTRIES`` is refused with nothing changed.
        """
        doomed = [(path, is_dir)]
        pending = [(path, 1)] if is_dir else []
        while pending:
            directory, depth = pending.pop()
            try:
                entries = await self._listing(client, directory)
            except aioftp.StatusCodeError as exc:
                raise _delete_refused(exc, directory) from None
            for entry in entries:
                child = f"{directory.rstrip('/')}/{entry.name}"
                doomed.append((child, entry.is_dir))
                if len(doomed) > MAX_ENTRIES:
                    raise Unprocessable(
                        f"{path} holds more than {MAX_ENTRIES:,} entries; hostgate deletes "
                        "at most that many at once (delete its parts one by one)",
                        code="tree_too_large",
                    )
                if entry.is_dir:
                    if depth >= MAX_TREE_DEPTH:
                        raise Unprocessable(
                            f"{path} is more than {MAX_TREE_DEPTH} directories deep; hostgate "
                            "deletes at most that deep (delete its deepest parts first)",
                            code="tree_too_deep",
                        )
                    pending.append((child, depth + 1))
        if is_dir:
            await client.command("CWD /", "2xx")  # a server will not remove its current directory
        # every child was listed after its parent: the reverse deletes the deepest first
        for doomed_path, doomed_dir in reversed(doomed):
            try:
                if doomed_dir:
                    await client.command("RMD " + doomed_path, "2xx")
                else:
                    await client.command("DELE " + doomed_path, "2xx")
            except aioftp.StatusCodeError as exc:
                raise _delete_refused(exc, doomed_path) from None

    async def rename(self, old_path: str, new_path: str) -> None:
        """Rename or move; an existing target is refused."""
        old, new = self._path(old_path), self._path(new_path)
        if old == "/" or new == "/":
            raise InvalidInput("The root directory cannot be renamed or replaced")
        async with self.pool.client() as client, mapped(old):
            if await self._probe(client, old) is None:
                raise RemoteNotFound(f"No such file or directory: {old}")
            if await self._probe(client, new) is not None:
                raise Conflict(f"Already exists: {new}")
            try:
                await client.command("RNFR " + old, "350")
                await client.command("RNTO " + new, "2xx")
            except aioftp.StatusCodeError as exc:
                raise await self._explain(client, exc, new, writing=True) from None

    async def chmod(self, path: str, mode: int) -> None:
        """Not offered for FTP: refused."""
        raise InvalidInput("chmod is not available on FTP connections")

    async def copy(self, src_path: str, dest_path: str) -> None:
        """FTP has no server-side copy: refused."""
        raise InvalidInput("copy is not available on FTP connections")

    async def close(self) -> None:
        """QUIT and close every control connection."""
        await self.pool.close()

    # -- diagnosis ----------------------------------------------------------

    async def _explain(
        self,
        client: FtpClient,
        error: aioftp.StatusCodeError,
        path: str,
        *,
        reading: bool = False,
        writing: bool = False,
    ) -> ApiError:
        """Tell "not there" from "not allowed" after a 55x refusal, by looking."""
        generic = refusal(error, path)
        if not is_code(error, "55"):
            return generic
        try:
            if reading:
                found = await self._probe(client, path)
                if found is None:
                    return RemoteNotFound(f"No such file or directory: {path}")
                if found.is_dir:
                    return InvalidInput(f"Is a directory: {path}")
            if writing:
                parent = _split(path)[0]
                found = await self._probe(client, parent)
                if found is None:
                    return RemoteNotFound(f"No such directory: {parent}")
                if not found.is_dir:
                    return InvalidInput(f"Not a directory: {parent}")
        except (aioftp.StatusCodeError, OSError, TimeoutError):
            return generic
        if isinstance(generic, RemoteNotFound | RemotePermissionDenied):
            return generic
        return RemotePermissionDenied(
            f"The FTP server refused {path}: {' '.join(error.info).strip()}"
        )
