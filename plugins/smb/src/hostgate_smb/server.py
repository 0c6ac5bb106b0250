"""A file session on a whole SMB server, for connections that name no share.

``/`` lists the server's browsable disk shares as directories; below it the
first path segment names the share (``/public/reports/q1.pdf``), and each
share is opened on first use with its own ``SmbFiles`` session.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from hostgate import ConnectionTarget, InvalidInput, KernelAPI, RemoteEntry, UploadStaging

from .files import OPERATIONS, SmbFiles, Unoffered, open_share
from .share import list_shares, share_path

MAX_OPEN_SHARES = 8
"""Shares kept open at once; the least recently used one closes past this."""


def split_share(path: str) -> tuple[str, str]:
    """``/share/a/b`` -> (``share``, ``a/b`` in SMB form); ``/`` -> (``""``, ``""``)."""
    inner = share_path(path)
    share, _, rest = inner.partition("\\")
    return share, rest


class SmbServerFiles(Unoffered):
    """Every share of one server; the first path segment picks the share."""

    operations = OPERATIONS

    def __init__(self, target: ConnectionTarget, kernel: KernelAPI | None = None) -> None:
        self.target = target
        self.kernel = kernel
        self._shares: dict[str, SmbFiles] = {}
        self._lock = asyncio.Lock()

    async def _share(self, name: str) -> SmbFiles:
        async with self._lock:
            files = self._shares.pop(name, None)
            if files is None:
                staging = UploadStaging.for_target(self.kernel, self.target, scope=name)
                files = await open_share(self.target, name, staging)
                while len(self._shares) >= MAX_OPEN_SHARES:
                    oldest = next(iter(self._shares))
                    await self._shares.pop(oldest).close()
            self._shares[name] = files  # most recently used last
            return files

    async def _inside(self, path: str) -> tuple[SmbFiles, str]:
        """The share session and the path inside it; a share is required."""
        share, rest = split_share(path)
        if not share:
            raise InvalidInput("Name a share first: paths start with /<share>/")
        return await self._share(share), rest

    async def list(self, path: str) -> list[RemoteEntry]:
        """``/``: the server's shares; anything else: a directory inside a share."""
        share, rest = split_share(path)
        if not share:
            shares = await asyncio.to_thread(list_shares, self.target)
            return [RemoteEntry(name=s.name, is_dir=True, size=0) for s in shares if s.browsable]
        return await (await self._share(share)).list(rest)

    async def stat(self, path: str) -> RemoteEntry:
        """Size, type and modification time; ``/`` is a directory."""
        share, rest = split_share(path)
        if not share:
            return RemoteEntry(name="", is_dir=True, size=0)
        entry = await (await self._share(share)).stat(rest)
        return entry if rest else RemoteEntry(name=share, is_dir=True, size=0, mtime=entry.mtime)

    async def mkdir(self, path: str) -> None:
        """Create a directory inside a share (shares themselves cannot be created)."""
        if not split_share(path)[1]:
            raise InvalidInput("Shares cannot be created through the gateway")
        files, rest = await self._inside(path)
        await files.mkdir(rest)

    async def remove(self, path: str) -> None:
        """Delete inside a share; a share's root is never deleted."""
        if not split_share(path)[1]:
            raise InvalidInput(
                "The share root cannot be deleted; delete what is in it one by one",
                code="root_not_deletable",
            )
        files, rest = await self._inside(path)
        await files.remove(rest)

    async def rename(self, old_path: str, new_path: str) -> None:
        """Rename or move within one share."""
        old_share, old = split_share(old_path)
        new_share, new = split_share(new_path)
        if not old or not new:
            raise InvalidInput("The share root cannot be renamed or replaced")
        if old_share.lower() != new_share.lower():
            raise InvalidInput("Files cannot be moved between shares; download and upload instead")
        await (await self._share(old_share)).rename(old, new)

    async def read(
        self, path: str, offset: int = 0, length: int | None = None
    ) -> AsyncIterator[bytes]:
        """Stream a file inside a share."""
        files, rest = await self._inside(path)
        async for chunk in files.read(rest, offset, length):
            yield chunk

    async def write(self, path: str, chunks: AsyncIterator[bytes], size: int | None = None) -> int:
        """Upload a file inside a share."""
        files, rest = await self._inside(path)
        if not rest:
            raise InvalidInput("An upload needs a file name")
        return await files.write(rest, chunks, size)

    async def close(self) -> None:
        """Close every open share."""
        async with self._lock:
            shares, self._shares = list(self._shares.values()), {}
        for files in shares:
            await files.close()
