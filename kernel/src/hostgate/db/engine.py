"""The database handle: an async engine, sessions, and migrations at start."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, async_sessionmaker, create_async_engine
from sqlmodel.ext.asyncio.session import AsyncSession

log = logging.getLogger("hostgate.db")

MIGRATIONS_DIR = Path(__file__).parent / "migrations"


DEFAULT_BUSY_TIMEOUT_MS = 10_000


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
    if url.startswith("sqlite"):
        engine = create_async_engine(url, connect_args={"timeout": busy_timeout_ms / 1000})
        event.listen(engine.sync_engine, "connect", _sqlite_pragmas(busy_timeout_ms))
        return engine
    return create_async_engine(url, pool_pre_ping=True, pool_size=10, max_overflow=20)


def alembic_config(connection: Any = None) -> Any:
    """An Alembic Config pointing at the kernel's migrations."""
    from alembic.config import Config as AlembicConfig

    cfg = AlembicConfig()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def _upgrade(sync_connection: Any) -> None:
    from alembic import command

    command.upgrade(alembic_config(sync_connection), "head")


class Database:
    """Sessions for services; one per process."""

    def __init__(self, url: str, *, busy_timeout_ms: int = DEFAULT_BUSY_TIMEOUT_MS) -> None:
        self.url = url
        self.engine = make_engine(url, busy_timeout_ms=busy_timeout_ms)
        self.sessions = async_sessionmaker(self.engine, class_=AsyncSession, expire_on_commit=False)
        self._probe: sqlite3.Connection | None = None
        self._probe_path = _sqlite_file(url)

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``."""
        return self.engine.dialect.name

    async def migrate(self) -> None:
        """Apply every Alembic migration (idempotent)."""
        async with self.engine.begin() as conn:
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

    def data_version(self) -> int | None:
        """A number that changes whenever any connection commits a change; None if unknown.

        SQLite's ``PRAGMA data_version`` on a connection of our own that never
        writes: it moves on every commit by anyone else — this process's pool,
        the ``hostgate`` CLI, another process — and costs a couple of
        microseconds, so it can run on the event loop. Other databases have no
        such counter: always None.
        """
        if self._probe_path is None:
            return None
        try:
            if self._probe is None:
                # timeout 0: never wait for a lock on the event loop; busy means unknown
                self._probe = sqlite3.connect(
                    self._probe_path, timeout=0, isolation_level=None, check_same_thread=False
                )
            return int(self._probe.execute("PRAGMA data_version").fetchone()[0])
        except sqlite3.Error:
            self._close_probe()
            return None

    def _close_probe(self) -> None:
        if self._probe is not None:
            self._probe.close()
            self._probe = None

    async def close(self) -> None:
        """Dispose of the engine's pool."""
        self._close_probe()
        await self.engine.dispose()


def _sqlite_file(url: str) -> str | None:
    """The file of a SQLite URL; None for other databases and in-memory SQLite."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite"):
        return None
    database = parsed.database or ""
    if database in ("", ":memory:") or database.startswith("file:"):
        return None
    return database
