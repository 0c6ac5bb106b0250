"""Change probes: a cheap value that moves whenever anyone commits to the database.

The read cache (``readcache.py``) keeps results while the value stays the same.
A probe must never say "unchanged" after a commit that finished before it was
asked; it may say "changed" when nothing was (that only costs a reload), and
answers None when it cannot tell (the cache is then bypassed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import struct
from collections.abc import Hashable
from typing import Any

from sqlalchemy.engine import make_url

from ..tasks import cancel_and_wait

log = logging.getLogger("hostgate.db")

PROBE_TIMEOUT = 5.0


class ChangeProbe:
    """Knows nothing: every answer is None (databases without a probe)."""

    async def version(self) -> Hashable | None:
        """The current change marker, or None when unknown."""
        return None

    async def close(self) -> None:
        """Release the probe's connection."""


# The WAL-index header at the start of a WAL database's "-shm" file
# (https://www.sqlite.org/walformat.html, section 2.1): two copies of 48 bytes,
# in the machine's byte order, that every commit rewrites (the second copy first)
# before it returns. Its first field is the format version, 3007000.
WAL_INDEX_HEADER = 48
WAL_INDEX_VERSION = 3007000


class SqliteChanges(ChangeProbe):
    """SQLite's WAL-index header, or ``PRAGMA data_version``, on a connection of the probe's own.

    The connection never writes, so both move on every commit by anyone else:
    this process's pool, the ``hostgate`` CLI, another worker or process on the
    same file. The pragma costs about 14 µs through the ``sqlite3`` module, twice
    per cached request; reading the header is one ``pread`` of 96 bytes, well
    under a microsecond. The header is what SQLite itself compares to notice a
    commit: any commit changes its frame count or, after the log restarted, its
    salts, and a read changes nothing. The answer is the header's bytes when both
    copies agree, and None (unknown: the cache is bypassed) when a writer is
    between the two.

    The header is read only while the probe's own connection has the database
    open in WAL mode (the engine's pragma): then no one can leave WAL mode or
    replace the "-shm" file under it. Otherwise the probe asks the pragma.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._connection: sqlite3.Connection | None = None
        self._index: int | None = None  # the "-shm" file, read with pread

    async def version(self) -> Hashable | None:
        """The WAL-index header's bytes, or ``PRAGMA data_version``."""
        index = self._index
        if index is not None:
            try:
                both = os.pread(index, 2 * WAL_INDEX_HEADER, 0)
            except OSError:
                await self.close()
                return None
            first = both[:WAL_INDEX_HEADER]
            if len(both) == 2 * WAL_INDEX_HEADER and first == both[WAL_INDEX_HEADER:]:
                return first
            return None
        try:
            if self._connection is None:
                self._open()
            if self._index is not None:
                return await self.version()
            assert self._connection is not None
            return int(self._connection.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:
            await self.close()
            return None

    def _open(self) -> None:
        # timeout 0: never wait for a lock on the event loop; busy means unknown
        connection = sqlite3.connect(
            self.path, timeout=0, isolation_level=None, check_same_thread=False
        )
        self._connection = connection
        # a read opens the log and its index, which this connection then keeps open
        connection.execute("PRAGMA data_version").fetchone()
        mode = str(connection.execute("PRAGMA journal_mode").fetchone()[0]).lower()
        if mode == "wal" and hasattr(os, "pread"):
            self._index = _open_wal_index(os.path.realpath(self.path) + "-shm")

    async def close(self) -> None:
        """Close the probe's connection (and its index file)."""
        if self._index is not None:
            os.close(self._index)
            self._index = None
        if self._connection is not None:
            self._connection.close()
            self._connection = None


def _open_wal_index(path: str) -> int | None:
    """The WAL-index file, opened for reading, when it holds the format this probe reads."""
    try:
        index = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        header = os.pread(index, 2 * WAL_INDEX_HEADER, 0)
    except OSError:
        header = b""
    if len(header) == 2 * WAL_INDEX_HEADER:
        (version,) = struct.unpack_from("=I", header)
        if version == WAL_INDEX_VERSION and header[12] == 1:  # isInit
            return index
    os.close(index)
    return None


class PostgresChanges(ChangeProbe):
    """PostgreSQL's ``pg_current_snapshot()`` on a connection of the probe's own.

    Every commit of a writing transaction changes the snapshot: its transaction
    id was either in progress at the last look (and has left the in-progress
    list) or assigned since (and moved ``xmax``). Read-only transactions get no
    id and change nothing. Ids are cluster-wide, so writes to other databases of
    the cluster also count as changes.

    One query answers every caller waiting for it, but only callers that
    arrived before it was sent: a caller never takes an answer older than itself.
    """

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self._connection: Any = None
        self._next: asyncio.Future[Hashable | None] | None = None
        self._runner: asyncio.Task[None] | None = None

    async def version(self) -> Hashable | None:
        """The snapshot as text."""
        if self._next is None:
            self._next = asyncio.get_running_loop().create_future()
        waiting = self._next
        if self._runner is None or self._runner.done():
            self._runner = asyncio.create_task(self._run(), name="db-change-probe")
        return await asyncio.shield(waiting)

    async def _run(self) -> None:
        while self._next is not None:
            waiting, self._next = self._next, None
            value = await self._query()
            if not waiting.done():
                waiting.set_result(value)

    async def _query(self) -> Hashable | None:
        try:
            if self._connection is None or self._connection.is_closed():
                import asyncpg

                self._connection = await asyncio.wait_for(asyncpg.connect(self.dsn), PROBE_TIMEOUT)
            text = await self._connection.fetchval(
                "SELECT pg_current_snapshot()::text", timeout=PROBE_TIMEOUT
            )
            return str(text)
        except (OSError, TimeoutError, Exception) as exc:  # noqa: BLE001
            # unknown is always safe: the cache is bypassed until the probe works again
            log.debug("change probe failed: %s", exc)
            await self._drop()
            return None

    async def _drop(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            with contextlib.suppress(Exception):
                connection.terminate()

    async def close(self) -> None:
        """Stop answering and close the probe's connection."""
        await cancel_and_wait(self._runner)
        if self._next is not None and not self._next.done():
            self._next.set_result(None)
        self._next = None
        await self._drop()


def change_probe(url: str) -> ChangeProbe:
    """The probe for a database URL (SQLite files and PostgreSQL through asyncpg)."""
    parsed = make_url(url)
    if parsed.drivername.startswith("sqlite"):
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            return ChangeProbe()
        return SqliteChanges(database)
    if parsed.drivername == "postgresql+asyncpg":
        dsn = parsed.set(drivername="postgresql").render_as_string(hide_password=False)
        return PostgresChanges(dsn)
    return ChangeProbe()
