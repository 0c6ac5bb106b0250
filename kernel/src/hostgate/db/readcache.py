"""Results of hot reads, kept in memory until the database changes.

Every authenticated request reads its login session, user and role, and the
busiest views read the same rows again and again. Through the async driver each
of those reads costs far more than the request's own work, so the kernel keeps
the results here and serves them while nothing has been committed since.

Freshness comes from the database itself, not from the code that writes:
before every lookup the cache asks :meth:`Database.data_version`, which moves
on any commit by anyone (this process, the CLI, another process sharing the
file). Any change empties the cache, so a revocation, a role change or a
restore is seen by the very next request, and a write path cannot "forget" to
invalidate. SQLite answers in well under a microsecond (the WAL-index header
every commit rewrites, read from the shared "-shm" file; ``PRAGMA data_version``
outside WAL mode); PostgreSQL in one small round trip shared by the requests waiting at that
moment (``pg_current_snapshot()``), still far cheaper than the reads it saves.
Where no probe exists the cache stays empty and every read goes to the
database.

Cached values are shared between requests: callers must treat them as read-only.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Hashable
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from .engine import Database

T = TypeVar("T")

MAX_ENTRIES = 20_000


class ReadCache:
    """Read-through cache emptied whenever the database's data version moves."""

    def __init__(self, db: Database, *, max_entries: int = MAX_ENTRIES) -> None:
        self.db = db
        self.max_entries = max_entries
        self._entries: dict[Hashable, Any] = {}
        self._version: Hashable | None = None
        self.hits = 0
        self.misses = 0

    async def _current(self) -> Hashable | None:
        """The data version now, emptying the cache if it moved (None: do not cache)."""
        version = await self.db.data_version()
        if version is None or version != self._version:
            self._entries.clear()
            self._version = version
        return version

    async def get(self, key: Hashable, load: Callable[[], Awaitable[T]]) -> T:
        """The cached value of ``key``, or ``await load()`` (kept if nothing changed meanwhile)."""
        version = await self._current()
        if version is not None and key in self._entries:
            self.hits += 1
            return self._entries[key]  # type: ignore[no-any-return]
        self.misses += 1
        value = await load()
        # a commit during the load may have landed before or after the rows were
        # read; keep the value only when the version is provably unchanged
        if version is not None and await self._current() == version:
            if len(self._entries) >= self.max_entries:
                self._entries.clear()
            self._entries[key] = value
        return value

    def clear(self) -> None:
        """Forget everything (the next lookups read the database)."""
        self._entries.clear()
        self._version = None
