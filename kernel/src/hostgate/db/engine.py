"""The database handle: an async engine, sessions, and migrations at start."""

from __future__ import annotations

import asyncio
import logging
import threading
import weakref
from collections.abc import AsyncIterator, Hashable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel.ext.asyncio.session import AsyncSession

from .._compat.aiosqlite import still_working, worker_thread
from .changes import change_probe

log = logging.getLogger("hostgate.db")

MIGRATIONS_DIR = Path(__file__).parent / "migrations"
HEAD_REVISION = "0016_session_invitations"
"""The newest migration; a test holds it to Alembic's head. A database already at it
is not handed to Alembic at start-up: importing Alembic and loading its scripts cost
more than the rest of a start's database work."""


DEFAULT_BUSY_TIMEOUT_MS = 10_000
SETTLE_MARGIN_S = 5.0
"""Beyond the busy timeout, how long closing waits for a SQLite worker thread to end."""


def _sqlite_pragmas(busy_timeout_ms: int) -> Any:
    def apply(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    return apply


def make_engine(url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> AsyncEngine:
    """An async engine with SQLite pragmas (WAL, foreign keys) where it applies.

    ``busy_timeout_ms``: how long a SQLite write waits for another writer's lock
    before it fails (the request then answers 503 ``storage_busy``).
    """
    # a failed statement's error text leaves out its values (secrets, typed commands):
    # it reaches logs wherever a background task logs what it caught
    if url.startswith("sqlite"):
        engine = create_async_engine(
            url, connect_args={"timeout": busy_timeout_ms / 1000}, hide_parameters=True
        )
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas(busy_timeout_ms))
        return engine
    return create_async_engine(
        url, pool_pre_ping=True, pool_size=10, max_overflow=20, hide_parameters=True
    )


def alembic_config(connection: Any = None) -> Any:
    """An Alembic Config pointing at the kernel's migrations."""
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _at_head(sync_connection: Any) -> bool:
    """True when the database's Alembic revision is :data:`HEAD_REVISION`."""
    from sqlalchemy import inspect, text

    if not inspect(sync_connection).has_table("alembic_version"):
        return False
    found = sync_connection.execute(text("SELECT version_num FROM alembic_version"))
    return list(found.scalars()) == [HEAD_REVISION]


def _upgrade(sync_connection: Any) -> None:
    from alembic import command

    command.upgrade(alembic_config(sync_connection), "head")


class _SqliteWorkers:
    """The aiosqlite connections an engine opened: each runs its queries in a thread.

    A query whose task is cancelled (a request or background task ended at
    shut-down) goes on in that thread, and so does the stop of a connection that
    SQLAlchemy terminated. When the thread is done it hands the result to the event
    loop; were the loop closed by then, the thread dies with "Event loop is closed".
    ``settle`` waits for them all while the loop still runs.
    """

    def __init__(self, engine: AsyncEngine, busy_timeout_ms: int) -> None:
        # the connection may be gone (garbage-collected: its stop is queued) while its
        # thread still works, so the threads are kept apart
        self._connections: weakref.WeakSet[Any] = weakref.WeakSet()
        self._threads: set[threading.Thread] = set()
        self._timeout = busy_timeout_ms / 1000 + SETTLE_MARGIN_S
        event.listen(engine.sync_engine, "connect", self._opened)

    def _opened(self, _dbapi_connection: Any, record: Any) -> None:
        connection = record.driver_connection  # the aiosqlite Connection
        thread = worker_thread(connection)
        if thread is None:
            return  # an aiosqlite _compat does not know: nothing to wait for
        self._connections.add(connection)
        self._threads = {t for t in self._threads if t.is_alive()}
        self._threads.add(thread)

    async def settle(self) -> None:
        """Stop the connections no pool closed, and wait until every worker thread ended."""
        for connection in list(self._connections):
            if still_working(connection):
                connection.stop()  # checked out by a task that was cancelled: nobody uses it now
        for thread in list(self._threads):
            await asyncio.to_thread(thread.join, self._timeout)
            if thread.is_alive():
                log.warning("a SQLite worker thread still runs after %.0f s", self._timeout)
        self._threads = {t for t in self._threads if t.is_alive()}


class Database:
    """Sessions for services; one per process."""

    def __init__(self, url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self.url = url
        self.engine = make_engine(url, busy_timeout_ms=busy_timeout_ms)
        self.sessions = async_sessionmaker(self.engine, class_=AsyncSession, expire_on_commit=False)
        self.changes = change_probe(url)
        self._workers = (
            _SqliteWorkers(self.engine, busy_timeout_ms) if url.startswith("sqlite") else None
        )

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    async def migrate(self) -> None:
        """Apply every Alembic migration (idempotent)."""
        async with self.engine.begin() as conn:
            if not await conn.run_sync(_at_head):
                await conn.run_sync(_upgrade)

    @asynccontextmanager
    async def session(self) -> AsyncIterator[AsyncSession]:
        """A session; commit explicitly, rolled back if the block raises."""
        async with self.sessions() as session:
            try:
                yield session
            except BaseException:
                await session.rollback()
                raise

    async def data_version(self) -> Hashable | None:
        """A value that changes whenever anyone commits a change; None when unknown.

        See ``changes.py``: SQLite answers from its WAL-index header in well
        under a microsecond, PostgreSQL from ``pg_current_snapshot()`` in one round
        trip shared by every request waiting at that moment.
        """
        return await self.changes.version()

    async def close(self) -> None:
        """Dispose of the engine's pool; with SQLite, wait for its worker threads to end."""
        await self.changes.close()
        await self.engine.dispose()
        if self._workers is not None:
            await self._workers.settle()
