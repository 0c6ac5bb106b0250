"""Atomic uploads for file packs: the temporary name, its removal, and what a killed gateway left.

Every file pack writes an upload under a temporary name beside the target and moves
it over the target once every byte is written, so an upload that fails or is
cancelled never leaves a partial file under the final name. What is the same for
every protocol lives here; the pack writes only the protocol::

    async def open_files(kernel: KernelAPI, target: ConnectionTarget) -> MyFiles:
        return MyFiles(..., staging=UploadStaging.for_target(kernel, target))

    async def write(self, path, chunks, size=None):
        async with self.staging.upload(self, path) as temporary:
            written = await self._store(temporary, chunks)  # a new file at ``temporary``
            await self._move_over(temporary, path)  # replacing a file at ``path``
        return written

``upload`` names the temporary file (``.hgpart-`` and 16 hex digits in the
target's directory), removes it with the adapter's own ``remove`` when the block
fails or is cancelled (waited for, also under a cancellation), and remembers one it
could not remove (the server was gone) to retry at the next upload on the same
connection. Before the first upload into a directory it sweeps that directory
once per process: temporary files of this pattern untouched for an hour are what a
killed gateway left, and go (found with the adapter's ``list``, which must fill
``mtime``).
"""

from __future__ import annotations

import asyncio
import logging
import posixpath
import re
import secrets
from collections.abc import AsyncIterator, MutableMapping
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from .adapters import ConnectionTarget, RemoteFiles
from .errors import RemoteNotFound
from .tasks import finish_anyway
from .timefmt import as_utc

if TYPE_CHECKING:
    from collections.abc import Awaitable

    from .contract import KernelAPI

log = logging.getLogger("hostgate.files")

TEMP_PREFIX = ".hgpart-"
"""How every temporary upload name starts (then 16 lower-case hex digits)."""
TEMP_NAME = re.compile(re.escape(TEMP_PREFIX) + r"[0-9a-f]{16}")
STALE_AFTER = timedelta(hours=1)
"""A temporary file untouched this long is a leftover: an upload stalls for at most the
request body timeout (10 minutes) before it is aborted."""
REMOVE_SECONDS = 15.0
"""How long removing one temporary file may take (also while cancelled)."""
SWEEP_SECONDS = 30.0
MAX_LEFTOVERS = 100
MAX_SWEPT = 10_000
STATE_KEY = "hostgate.upload_staging"


class UploadStaging:
    """The temporary files of one stored connection's uploads (shared by its sessions)."""

    def __init__(self) -> None:
        self.leftovers: set[str] = set()
        """Temporary files failed uploads could not remove, retried at the next upload."""
        self.swept: set[str] = set()
        """Directories already swept for stale temporary files by this process."""

    @classmethod
    def for_target(
        cls, kernel: KernelAPI | None, target: ConnectionTarget, scope: str = ""
    ) -> UploadStaging:
        """The staging of ``target``'s connection, kept in ``kernel.state`` for this process.

        ``scope`` separates path spaces of one connection (an SMB server's shares).
        Without a kernel (``None``, an adapter built in a unit test) it is a new one.
        """
        state: MutableMapping[str, Any] | None = getattr(kernel, "state", None)
        if state is None:
            return cls()
        stagings: dict[tuple[str, str], UploadStaging] = state.setdefault(STATE_KEY, {})
        return stagings.setdefault((target.connection_id, scope), cls())

    @staticmethod
    def temporary_name(path: str) -> str:
        """A fresh temporary path beside ``path`` (``/``-separated, as the API gives it)."""
        directory = posixpath.dirname(path.rstrip("/") or path)
        return posixpath.join(directory, f"{TEMP_PREFIX}{secrets.token_hex(8)}")

    @asynccontextmanager
    async def upload(self, files: RemoteFiles, path: str) -> AsyncIterator[str]:
        """The temporary path for ``path``'s new contents; removed unless the block ends well.

        The block writes the temporary file and moves it over ``path``. When it raises
        or is cancelled, the temporary file is removed through ``files.remove`` before
        the error goes on (a failed removal is remembered and retried).
        """
        await self.retry(files)
        await self.sweep(files, posixpath.dirname(path.rstrip("/") or path))
        temporary = self.temporary_name(path)
        try:
            yield temporary
        except BaseException:
            await finish_anyway(self._discard(files, temporary), REMOVE_SECONDS)
            raise

    async def retry(self, files: RemoteFiles) -> None:
        """Remove the temporary files earlier uploads had to leave behind."""
        for temporary in list(self.leftovers):
            if await self._removed(files, temporary):
                self.leftovers.discard(temporary)

    async def sweep(self, files: RemoteFiles, directory: str) -> None:
        """Once per directory and process: remove stale temporary files (best effort).

        Only regular files named by :data:`TEMP_NAME` whose modification time is older
        than :data:`STALE_AFTER`; a failure here never fails the upload.
        """
        key = directory or "."
        if key in self.swept or len(self.swept) >= MAX_SWEPT:
            return
        self.swept.add(key)
        try:
            entries = await _within(files.list(key), SWEEP_SECONDS)
        except Exception:  # noqa: BLE001 - an unreadable directory fails the upload itself
            return
        cutoff = datetime.now(UTC) - STALE_AFTER
        for entry in entries:
            if entry.is_dir or not TEMP_NAME.fullmatch(entry.name) or entry.mtime is None:
                continue
            if as_utc(entry.mtime) < cutoff:
                await self._removed(files, posixpath.join(key, entry.name))

    async def _discard(self, files: RemoteFiles, temporary: str) -> None:
        if not await self._removed(files, temporary) and len(self.leftovers) < MAX_LEFTOVERS:
            self.leftovers.add(temporary)

    @staticmethod
    async def _removed(files: RemoteFiles, path: str) -> bool:
        """Remove a temporary file; True once it is gone (also when it already was)."""
        try:
            await _within(files.remove(path), REMOVE_SECONDS)
        except RemoteNotFound:
            return True
        except Exception as exc:  # noqa: BLE001 - remembered and retried
            log.debug("removing the temporary upload %s failed: %s", path, exc)
            return False
        return True


async def _within(action: Awaitable[Any], seconds: float) -> Any:
    return await asyncio.wait_for(action, seconds)
