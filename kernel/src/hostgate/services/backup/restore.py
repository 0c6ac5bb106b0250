"""Swap a checked staging area in: every row in one transaction, recordings by rename.

Crash safety: before the database transaction a journal file names the restore;
the transaction itself writes the same id into ``system_values``. Recordings are
swapped only after the commit (entry by entry: the recordings directory may be
a mount point of its own, see ``swap_recordings``). At start-up ``recover``
reads the journal: if the database holds the id the commit happened and the
recordings swap is finished, otherwise the restore never happened and its
staging area is dropped. A kill at any moment therefore leaves either the old
state or the complete new one.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, delete, insert, inspect, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from ...datadir import private_open
from ...db.models import metadata
from ...db.models.identity import LoginSession
from ...db.models.settings import SystemValue
from ...timefmt import utcnow
from ..audit.audit import recount_statements
from .tables import primary_key

log = logging.getLogger("hostgate.backup")

MARKER_NAME = "backup_restore_id"
JOURNAL_NAME = "backup-restore.json"
ROW_BATCH = 500

Progress = Callable[[str, int, int], None]


def prepare_restore(restore_id: str) -> Callable[[Connection], None]:
    """Staging step: sign everybody out and stamp the restore id (see the module docstring)."""

    def prepare(conn: Connection) -> None:
        now = utcnow()
        sessions = LoginSession.__table__  # type: ignore[attr-defined]
        conn.execute(
            update(sessions)
            .where(sessions.c.revoked_at.is_(None))
            .values(revoked_at=now, revoke_reason="backup_restored")
        )
        values = SystemValue.__table__  # type: ignore[attr-defined]
        conn.execute(delete(values).where(values.c.name == MARKER_NAME))
        conn.execute(insert(values).values(name=MARKER_NAME, value=restore_id, created_at=now))

    return prepare


async def read_marker(engine: AsyncEngine) -> str | None:
    """The id of the last restore committed to the live database."""
    values = SystemValue.__table__  # type: ignore[attr-defined]
    async with engine.connect() as conn:
        result = await conn.execute(select(values.c.value).where(values.c.name == MARKER_NAME))
        value = result.scalar_one_or_none()
    return None if value is None else str(value)


async def _copy_table(
    source: AsyncConnection,
    target: AsyncConnection,
    table: Any,
    done: list[int],
    progress: Progress | None,
    total: int,
) -> None:
    pk = primary_key(table)
    self_refs = [fk.parent for fk in table.foreign_keys if fk.column.table is table]
    result = await source.stream(select(table).order_by(*pk))
    async for batch in result.partitions(ROW_BATCH):
        rows = [dict(row._mapping) for row in batch]
        for row in rows:
            for column in self_refs:
                row[column.name] = None
        await target.execute(insert(table), rows)
        done[0] += len(rows)
        if progress is not None:
            progress("restoring", done[0], total)
    if not self_refs:
        return
    # Rows that point at rows of the same table: linked once every row exists.
    linked = select(*pk, *self_refs).where(or_(*(c.is_not(None) for c in self_refs)))
    result = await source.stream(linked)
    async for links in result.partitions(ROW_BATCH):
        for link in links:
            where = [column == link[i] for i, column in enumerate(pk)]
            values = {c.name: link[len(pk) + i] for i, c in enumerate(self_refs)}
            await target.execute(update(table).where(*where).values(values))


async def _reset_sequences(target: AsyncConnection) -> None:
    """PostgreSQL sequences do not follow explicit ids; move them past the restored rows."""
    quote = target.dialect.identifier_preparer.quote
    for table in metadata.sorted_tables:
        column = table.autoincrement_column
        if column is None:
            continue
        statement = text(
            f"SELECT setval(pg_get_serial_sequence(:table, :column), "
            f"COALESCE((SELECT MAX({quote(column.name)}) FROM {quote(table.name)}), 0) + 1, "
            f"false)"
        )
        await target.execute(statement, {"table": quote(table.name), "column": column.name})


async def swap_database(
    engine: AsyncEngine, staging_db: Path, total_rows: int, progress: Progress | None = None
) -> None:
    """Replace every row of the live database with the staging database's, in one transaction."""
    source_engine = create_async_engine(
        f"sqlite+aiosqlite:///{staging_db}", poolclass=NullPool, hide_parameters=True
    )
    try:
        async with source_engine.connect() as source, engine.begin() as target:
            staged = set(await source.run_sync(lambda c: inspect(c).get_table_names()))
            live = set(await target.run_sync(lambda c: inspect(c).get_table_names()))
            tables = [t for t in metadata.sorted_tables if t.name in staged & live]
            for table in reversed(tables):
                await target.execute(delete(table))
            done = [0]
            for table in tables:
                await _copy_table(source, target, table, done, progress, total_rows)
            # counted, not carried: right whatever the archive's counter row says
            for statement in recount_statements():
                await target.execute(statement)
            if target.dialect.name == "postgresql":
                await _reset_sequences(target)
    finally:
        await source_engine.dispose()


def write_journal(path: Path, record: dict[str, Any]) -> None:
    """Write the journal durably (temp file, fsync, rename)."""
    tmp = path.with_suffix(".tmp")
    with private_open(tmp, "w") as handle:
        json.dump(record, handle)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    _sync_dir(path.parent)


def _sync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


KEEP_PREFIX = "."
"""Entries of the recordings directory a swap leaves alone: the several-nodes marker
(``.hostgate-recordings``) and the swap's own ``.previous-<id>`` directory."""


def _replace(source: Path, target: Path) -> None:
    """Move ``source`` to ``target`` (a rename, or a copy when they are on two file systems)."""
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)  # a half-copied directory of an interrupted swap
    try:
        os.replace(source, target)
    except OSError as exc:
        if exc.errno != errno.EXDEV:
            raise
        shutil.move(source, target)


def swap_recordings(live: Path, staged: Path, previous: Path, moving: Path) -> None:
    """Put the files of ``staged`` in place of those of ``live`` (idempotent, resumable).

    The directory ``live`` itself stays (it may be a mount point of shared storage,
    ``HOSTGATE_RECORDINGS_DIR``), and so do its hidden entries (the marker). First
    every other entry moves into ``previous`` (inside ``live``: one file system),
    then the flag file ``moving`` is written, then every staged entry moves in (a
    rename, or a copy when the staging area is on another file system). A crash at
    any point is finished by running this again with the same paths.
    """
    if not staged.exists():
        return
    live.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not moving.exists():
        previous.mkdir(mode=0o700, exist_ok=True)
        for entry in os.scandir(live):
            if not entry.name.startswith(KEEP_PREFIX):
                os.replace(entry.path, previous / entry.name)
        _sync_dir(live)
        private_open(moving, "wb").close()
    for entry in os.scandir(staged):
        _replace(Path(entry.path), live / entry.name)
    _sync_dir(live)
    shutil.rmtree(previous, ignore_errors=True)
    shutil.rmtree(staged, ignore_errors=True)


def finish_journal(data_dir: Path, journal: dict[str, Any], committed: bool) -> None:
    """Complete (or drop) the restore a journal describes, then remove it."""
    directory = Path(journal["directory"])
    if committed and journal.get("recordings") and not journal.get("recordingsBucket"):
        live = Path(journal.get("recordingsDir") or data_dir / "recordings")
        swap_recordings(
            live,
            directory / "recordings",
            live / f".previous-{journal['id']}",
            directory / "recordings-moving",
        )
    (data_dir / JOURNAL_NAME).unlink(missing_ok=True)
    shutil.rmtree(directory, ignore_errors=True)
