"""Build an archive as a stream: a consistent database snapshot, the key, recordings."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import inspect, select, text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from ...db.models import metadata
from ...security.secretbox import SecretBox
from ...timefmt import utcnow
from ..database_swap import primary_key
from ..version import current_version
from .archive import DEFAULT_COST, FORMAT_VERSION, FrameWriter, Header, KdfCost, derive_key
from .files import PART_PREFIX, recording_files, safe_relative
from .records import META, PartSealer
from .tables import describe, encode_row

if TYPE_CHECKING:
    from ..sessions.recording_store import RecordingStore

ROW_BATCH = 500


@asynccontextmanager
async def snapshot(engine: AsyncEngine) -> AsyncIterator[AsyncConnection]:
    """A connection inside one read transaction: every query sees the same state.

    SQLite: an explicit ``BEGIN`` (the driver would otherwise run each SELECT in its
    own transaction); the first read fixes the WAL snapshot. PostgreSQL: a
    read-only REPEATABLE READ transaction.
    """
    async with engine.connect() as raw:
        if engine.dialect.name == "sqlite":
            conn = await raw.execution_options(isolation_level="AUTOCOMMIT")
            await conn.exec_driver_sql("BEGIN")
            try:
                yield conn
            finally:
                await conn.exec_driver_sql("ROLLBACK")
        else:
            conn = await raw.execution_options(
                isolation_level="REPEATABLE READ", postgresql_readonly=True
            )
            async with conn.begin():
                yield conn


async def schema_revision(conn: AsyncConnection) -> str:
    """The Alembic revision the database is at."""
    result = await conn.execute(text("SELECT version_num FROM alembic_version"))
    return str(result.scalar_one())


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


async def _file_chunks(path: Path, size: int) -> AsyncIterator[bytes]:
    """A file's bytes in frame-sized reads off the event loop."""
    try:
        handle = await asyncio.to_thread(path.open, "rb")
    except FileNotFoundError:
        return
    try:
        while True:
            chunk = await asyncio.to_thread(handle.read, size)
            if not chunk:
                return
            yield chunk
    finally:
        handle.close()


async def export_archive(
    engine: AsyncEngine,
    secrets: SecretBox,
    recordings_dir: Path,
    password: str,
    *,
    include_recordings: bool,
    cost: KdfCost = DEFAULT_COST,
    bucket: RecordingStore | None = None,
) -> AsyncIterator[bytes]:
    """Yield the archive's bytes while reading the data: memory stays flat whatever the size.

    With ``bucket`` the recordings come from there (ranged GETs) instead of the directory.
    """
    header = Header.new(cost)
    key = await asyncio.to_thread(derive_key, password, header)
    sealer = PartSealer(FrameWriter(header, key))
    step = header.frame_plaintext - 1
    yield sealer.frames.start()
    exported_at = utcnow().isoformat()
    tables: dict[str, int] = {}
    async with snapshot(engine) as conn:
        revision = await schema_revision(conn)
        present = set(await conn.run_sync(lambda c: inspect(c).get_table_names()))
        schema = [entry for entry in describe(metadata) if entry["name"] in present]
        meta = {
            "format": FORMAT_VERSION,
            "app": "hostgate",
            "version": current_version(),
            "exportedAt": exported_at,
            "dialect": engine.dialect.name,
            "schema": {"revision": revision, "tables": schema},
            "key": {"id": secrets.key_id, "hex": secrets.raw_key.hex()},
            "includeRecordings": include_recordings,
        }
        for frame in sealer.whole(META, "meta", _json(meta)):
            yield frame
        for entry in schema:
            table = metadata.tables[entry["name"]]
            tags = [tag for _, tag in entry["columns"]]
            yield sealer.begin(f"db/{table.name}.jsonl", "table")
            buffer = bytearray()
            rows = 0
            result = await conn.stream(select(table).order_by(*primary_key(table)))
            async for batch in result.partitions(ROW_BATCH):
                for row in batch:
                    buffer += encode_row(tags, row)
                rows += len(batch)
                if len(buffer) >= step:
                    for frame in sealer.data(bytes(buffer)):
                        yield frame
                    buffer.clear()
            if buffer:
                for frame in sealer.data(bytes(buffer)):
                    yield frame
            yield sealer.end()
            tables[table.name] = rows
    recordings = 0
    recordings_bytes = 0
    if include_recordings and bucket is not None:
        for name, size in sorted((await bucket.sizes()).items()):
            if not safe_relative(name):
                continue
            yield sealer.begin(PART_PREFIX + name, "recording")
            async for chunk in bucket.chunks(name, size):
                for frame in sealer.data(chunk):
                    yield frame
            yield sealer.end()
            recordings += 1
            recordings_bytes += sealer.parts[-1].size
    elif include_recordings:
        found = await asyncio.to_thread(lambda: list(recording_files(recordings_dir)))
        for item in found:
            yield sealer.begin(PART_PREFIX + item.relative, "recording")
            async for chunk in _file_chunks(item.path, step):
                for frame in sealer.data(chunk):
                    yield frame
            yield sealer.end()
            recordings += 1
            recordings_bytes += sealer.parts[-1].size
    summary = {
        "format": FORMAT_VERSION,
        "exportedAt": exported_at,
        "schemaRevision": revision,
        "tables": tables,
        "recordings": recordings,
        "recordingsBytes": recordings_bytes,
    }
    for frame in sealer.finish(summary):
        yield frame
