"""Replace every row of the live database with another database's, in one transaction.

A mechanism of the kernel's storage: a backup restore swaps in the database it
staged from an archive, and a test gateway's reset (``testreset``) swaps in its
snapshot. Tables are copied in dependency order; rows that point at rows of their
own table are linked once every row exists; the audit log's counter is recounted,
not carried; PostgreSQL sequences move past the copied ids.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Table, delete, insert, inspect, or_, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from ..db.models import metadata
from .audit.audit import recount_statements

ROW_BATCH = 500

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: rows copied so far (stage ``"restoring"``)."""

KEEP_PREFIX = "."
"""Entries of the recordings directory a swap or reset leaves alone: the several-nodes marker
(``.hostgate-recordings``) and the swap's own ``.previous-<id>`` directory."""


def primary_key(table: Table) -> list[Column[Any]]:
    """The primary key columns, or every column when a table has none."""
    columns = list(table.primary_key.columns)
    return columns or list(table.columns)


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
