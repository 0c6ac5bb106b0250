"""Unpack an archive into a staging area and check all of it before anything is replaced.

Runs synchronously (in a worker thread for the server, directly for ``verify``):
the rows go into a throwaway SQLite database created at the archive's schema
revision, which is then migrated to the current revision, checked (foreign keys,
column sizes for PostgreSQL) and re-sealed to the live key; recordings go into a
staging directory. Only a fully checked staging area is ever swapped in.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from sqlalchemy import (
    Connection,
    Engine,
    MetaData,
)

from ...datadir import DIR_MODE, private_dir, private_open
from ...db.engine import alembic_config
from ...security.secretbox import SecretBox, SecretKeyError, parse_key
from .archive import FORMAT_VERSION, CorruptArchive, FrameReader, NotAnArchive, derive_key
from .archive import read_header as read_archive_header
from .files import PART_PREFIX, safe_relative
from .records import META, Begin, Chunk, End, Finished, read_parts
from .staged_db import (
    TableLoader,
    check_foreign_keys,
    check_sizes,
    create_schema,
    inconsistent,
    reseal,
    staging_engine,
    upgrade,
)
from .tables import TAGS

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``; phases ``reading`` (bytes) and ``checking``."""

MAX_META = 16 * 1024 * 1024


class Cancelled(Exception):
    """The caller went away; staging stopped."""


@dataclass
class StagedArchive:
    """A fully checked archive, unpacked."""

    directory: Path
    database: Path
    recordings: Path | None
    meta: dict[str, Any]
    manifest: dict[str, Any]
    rows: dict[str, int] = field(default_factory=dict)
    recordings_count: int = 0
    recordings_bytes: int = 0
    secrets: int = 0


class _Reader:
    """A file reader that reports progress and notices cancellation."""

    done: int

    def __init__(
        self,
        handle: IO[bytes],
        total: int,
        progress: Progress | None,
        cancel: threading.Event | None,
    ) -> None:
        self._handle = handle
        self._total = total
        self._progress = progress
        self._cancel = cancel
        self.done = 0

    def read(self, size: int = -1) -> bytes:
        if self._cancel is not None and self._cancel.is_set():
            raise Cancelled()
        data = self._handle.read(size)
        self.done += len(data)
        if self._progress is not None:
            self._progress("reading", self.done, self._total)
        return data


def _check_revision(revision: Any) -> str:
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(alembic_config())
    try:
        if not isinstance(revision, str) or script.get_revision(revision) is None:
            raise ValueError(revision)
    except Exception:
        raise NotAnArchive(
            f"The backup was made by a hostgate with a database schema this version does not "
            f"know ({revision}); restore it with that version or a newer one",
            code="backup_schema_unknown",
        ) from None
    return revision


def _parse_meta(raw: bytes) -> tuple[dict[str, Any], SecretBox]:
    try:
        meta = json.loads(raw)
        schema = meta["schema"]
        tables = schema["tables"]
        key = SecretBox(parse_key(meta["key"]["hex"]))
    except (ValueError, KeyError, TypeError, SecretKeyError):
        raise CorruptArchive("the metadata is malformed") from None
    if meta.get("app") != "hostgate" or meta.get("format") != FORMAT_VERSION:
        raise NotAnArchive("The backup's metadata names an unknown format")
    if key.key_id != meta["key"].get("id"):
        raise CorruptArchive("the key material does not match its id")
    for table in tables if isinstance(tables, list) else [None]:
        ok = (
            isinstance(table, dict)
            and isinstance(table.get("name"), str)
            and isinstance(table.get("columns"), list)
            and all(
                isinstance(c, list) and len(c) == 2 and isinstance(c[0], str) and c[1] in TAGS
                for c in table["columns"]
            )
        )
        if not ok:
            raise CorruptArchive("the schema description is malformed")
    _check_revision(schema.get("revision"))
    return meta, key


def stage_archive(
    archive: Path,
    password: str,
    directory: Path,
    *,
    live: SecretBox | None,
    write_recordings: bool,
    target_dialect: str | None = None,
    prepare: Callable[[Connection], None] | None = None,
    progress: Progress | None = None,
    cancel: threading.Event | None = None,
) -> StagedArchive:
    """Unpack and check ``archive`` under ``directory``; raise an ApiError on any problem.

    ``live`` is the key restored secrets are re-sealed to (None only checks that
    every secret opens). ``prepare`` runs last on the staging database.
    """
    database = directory / "staging.db"
    engine = staging_engine(database)
    try:
        with archive.open("rb") as handle:
            reader = _Reader(handle, archive.stat().st_size, progress, cancel)
            header = read_archive_header(reader)
            key = derive_key(password, header)
            staged, box = _unpack(
                FrameReader(reader, header, key), directory, engine, database, write_recordings
            )
        if progress is not None:
            progress("checking", 0, 0)
        upgrade(engine)
        with engine.begin() as conn:
            check_foreign_keys(conn)
            if target_dialect == "postgresql":
                check_sizes(conn)
            staged.secrets = reseal(conn, box, live)
            if prepare is not None:
                prepare(conn)
        return staged
    finally:
        engine.dispose()


def _unpack(
    frames: FrameReader,
    directory: Path,
    engine: Engine,
    database: Path,
    write_recordings: bool,
) -> tuple[StagedArchive, SecretBox]:
    meta_raw = bytearray()
    meta: dict[str, Any] | None = None
    box: SecretBox | None = None
    conn: Connection | None = None
    schema: dict[str, list[list[str]]] = {}
    reflected = MetaData()
    loader: TableLoader | None = None
    out: IO[bytes] | None = None
    current: Begin | None = None
    staged_recordings: Path | None = None
    rows: dict[str, int] = {}
    count = size = 0
    try:
        for item in read_parts(frames):
            if isinstance(item, Begin):
                current = item
                if item.name == META:
                    continue
                if meta is None:
                    raise CorruptArchive("the archive does not start with its metadata")
                if item.kind == "table" and item.name.startswith("db/"):
                    name = item.name[3:].removesuffix(".jsonl")
                    if name not in schema or name in rows:
                        raise CorruptArchive(f"unexpected table part {item.name}")
                    if name not in reflected.tables or name == "alembic_version":
                        raise NotAnArchive(
                            f"The backup holds a table this hostgate does not know ({name})",
                            code="backup_schema_unknown",
                        )
                    assert conn is not None
                    loader = TableLoader(conn, reflected.tables[name], schema[name])
                elif item.kind == "recording" and item.name.startswith(PART_PREFIX):
                    relative = item.name[len(PART_PREFIX) :]
                    if not safe_relative(relative) or not meta.get("includeRecordings"):
                        raise CorruptArchive(f"unexpected recording {relative!r}")
                    if write_recordings and staged_recordings is not None:
                        target = staged_recordings / relative
                        try:
                            private_dir(target.parent)
                            out = private_open(target, "xb")
                        except OSError as exc:
                            raise inconsistent(
                                f"Recording {relative!r} cannot be staged: {exc}"
                            ) from None
                else:
                    raise NotAnArchive(f"The backup holds an unknown part ({item.name})")
            elif isinstance(item, Chunk):
                if current is not None and current.name == META:
                    if len(meta_raw) + len(item.data) > MAX_META:
                        raise CorruptArchive("the metadata is too large")
                    meta_raw += item.data
                elif loader is not None:
                    loader.feed(item.data)
                elif out is not None:
                    out.write(item.data)
            elif isinstance(item, End):
                if item.info.name == META:
                    meta, box = _parse_meta(bytes(meta_raw))
                    schema = {t["name"]: t["columns"] for t in meta["schema"]["tables"]}
                    create_schema(engine, meta["schema"]["revision"])
                    conn = engine.connect()
                    conn.begin()
                    reflected.reflect(conn)
                    if meta.get("includeRecordings") and write_recordings:
                        staged_recordings = directory / "recordings"
                        staged_recordings.mkdir(mode=DIR_MODE)
                elif loader is not None:
                    rows[loader.target.name] = loader.close()
                    loader = None
                else:
                    if out is not None:
                        out.close()
                        out = None
                    count += 1
                    size += item.info.size
                current = None
            elif isinstance(item, Finished):
                if meta is None or box is None or conn is None:
                    raise CorruptArchive("the archive has no metadata")
                missing = sorted(set(schema) - set(rows))
                if missing:
                    raise CorruptArchive(f"table {missing[0]} is missing")
                conn.commit()
                staged = StagedArchive(
                    directory=directory,
                    database=database,
                    recordings=staged_recordings,
                    meta={k: v for k, v in meta.items() if k != "key"},
                    manifest=item.manifest,
                    rows=rows,
                    recordings_count=count,
                    recordings_bytes=size,
                )
                return staged, box
        raise CorruptArchive("the file is truncated")
    finally:
        if out is not None:
            out.close()
        if conn is not None:
            conn.close()
