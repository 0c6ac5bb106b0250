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
    String,
    Table,
    create_engine,
    event,
    func,
    insert,
    literal_column,
    select,
    update,
)
from sqlalchemy.pool import NullPool

from ...db.engine import alembic_config
from ...db.models import metadata
from ...db.models.settings import SettingValue, SystemValue
from ...errors import InvalidInput
from ...security.secretbox import KeyError_, SecretBox, envelope_key_id, parse_key
from ..keyrotation import sealed_columns
from .archive import FORMAT_VERSION, CorruptArchive, FrameReader, NotAnArchive, derive_key
from .archive import read_header as read_archive_header
from .files import PART_PREFIX, safe_relative
from .records import META, Begin, Chunk, End, Finished, read_parts
from .tables import TAGS, BadValue, decode, python_default, to_storage, type_tag

Progress = Callable[[str, int, int], None]
"""``progress(phase, done, total)``; phases ``reading`` (bytes) and ``checking``."""

ROW_BATCH = 1000
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


def _invalid(message: str) -> InvalidInput:
    return InvalidInput(message, code="backup_inconsistent")


class _TableLoader:
    """Decodes one table part line by line into the staging database."""

    def __init__(self, conn: Connection, target: Table, columns: list[list[str]]) -> None:
        self.conn = conn
        self.target = target
        self.names = [name for name, _ in columns]
        self.tags = [tag for _, tag in columns]
        unknown = [n for n in self.names if n not in target.c]
        if unknown:
            raise NotAnArchive(
                f"The backup holds columns this hostgate does not know "
                f"({target.name}.{', '.join(unknown)}); restore it with a newer version",
                code="backup_schema_unknown",
            )
        current = metadata.tables.get(target.name)
        self.fill: list[tuple[str, Any, str]] = []
        for column in target.columns:
            if column.name in self.names or column.nullable or column.server_default:
                continue
            model = current.c.get(column.name) if current is not None else None
            if model is None or not python_default(model)[0]:
                raise NotAnArchive(
                    f"The backup lacks the required column {target.name}.{column.name}",
                    code="backup_schema_unknown",
                )
            self.fill.append((column.name, model, type_tag(model.type)))
        self.pending = bytearray()
        self.batch: list[dict[str, Any]] = []
        self.rows = 0

    def feed(self, data: bytes) -> None:
        self.pending += data
        end = self.pending.rfind(b"\n")
        if end < 0:
            return
        lines = bytes(self.pending[:end]).split(b"\n")
        del self.pending[: end + 1]
        for line in lines:
            self._row(line)
        if len(self.batch) >= ROW_BATCH:
            self._flush()

    def _row(self, line: bytes) -> None:
        where = f"{self.target.name} row {self.rows + 1}"
        try:
            values = json.loads(line)
        except ValueError:
            raise _invalid(f"The backup's data is malformed ({where})") from None
        if not isinstance(values, list) or len(values) != len(self.names):
            raise _invalid(f"The backup's data is malformed ({where})")
        row: dict[str, Any] = {}
        try:
            for name, tag, value in zip(self.names, self.tags, values, strict=True):
                row[name] = to_storage(tag, decode(tag, value))
        except BadValue as exc:
            raise _invalid(f"The backup's data is malformed ({where}: {exc})") from None
        for name, model, tag in self.fill:
            row[name] = to_storage(tag, python_default(model)[1])
        self.batch.append(row)
        self.rows += 1

    def _flush(self) -> None:
        if self.batch:
            try:
                self.conn.execute(insert(self.target), self.batch)
            except Exception as exc:  # constraint violations in the archive's own data
                message = str(getattr(exc, "orig", exc)).splitlines()[0][:200]
                raise _invalid(
                    f"The backup's data is inconsistent ({self.target.name}: {message})"
                ) from None
            self.batch = []

    def close(self) -> int:
        if self.pending.strip():
            raise _invalid(f"The backup's data is malformed ({self.target.name}: cut-off row)")
        self._flush()
        return self.rows


def _staging_engine(path: Path) -> Engine:
    engine = create_engine(f"sqlite:///{path}", poolclass=NullPool)

    def pragmas(dbapi_connection: Any, _record: Any) -> None:
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=OFF")
        cursor.execute("PRAGMA synchronous=OFF")
        cursor.close()

    event.listen(engine, "connect", pragmas)
    return engine


def _head() -> str:
    from alembic.script import ScriptDirectory

    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    return str(head)


def _create_schema(engine: Engine, revision: str) -> None:
    """Create the staging schema at ``revision``.

    At the head it is built from the models (the same schema, much faster than
    replaying migrations); an older revision is built by the migrations.
    """
    from alembic import command

    with engine.begin() as conn:
        if revision == _head():
            metadata.create_all(conn)
            command.stamp(alembic_config(conn), revision)
        else:
            command.upgrade(alembic_config(conn), revision)


def _upgrade(engine: Engine) -> None:
    """Migrate the staging database to the current schema."""
    from alembic import command

    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")


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
    except (ValueError, KeyError, TypeError, KeyError_):
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
    engine = _staging_engine(database)
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
        _upgrade(engine)
        with engine.begin() as conn:
            _check_foreign_keys(conn)
            if target_dialect == "postgresql":
                _check_sizes(conn)
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
    loader: _TableLoader | None = None
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
                    if name not in reflected.tables:
                        raise NotAnArchive(
                            f"The backup holds a table this hostgate does not know ({name})",
                            code="backup_schema_unknown",
                        )
                    assert conn is not None
                    loader = _TableLoader(conn, reflected.tables[name], schema[name])
                elif item.kind == "recording" and item.name.startswith(PART_PREFIX):
                    relative = item.name[len(PART_PREFIX) :]
                    if not safe_relative(relative) or not meta.get("includeRecordings"):
                        raise CorruptArchive(f"unexpected recording {relative!r}")
                    if write_recordings and staged_recordings is not None:
                        target = staged_recordings / relative
                        try:
                            target.parent.mkdir(parents=True, exist_ok=True)
                            out = target.open("xb")
                        except OSError as exc:
                            raise _invalid(
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
                    _create_schema(engine, meta["schema"]["revision"])
                    conn = engine.connect()
                    conn.begin()
                    reflected.reflect(conn)
                    if meta.get("includeRecordings") and write_recordings:
                        staged_recordings = directory / "recordings"
                        staged_recordings.mkdir()
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


def _check_foreign_keys(conn: Connection) -> None:
    problems = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
    if problems:
        table, _, parent, _ = problems[0]
        raise _invalid(
            f"The backup's data is inconsistent: {len(problems)} row(s), e.g. in {table}, "
            f"refer to missing {parent} rows"
        )


def _check_sizes(conn: Connection) -> None:
    """PostgreSQL enforces VARCHAR lengths that SQLite ignores: refuse before the swap."""
    for table in metadata.sorted_tables:
        for column in table.columns:
            length = getattr(column.type, "length", None)
            if not isinstance(column.type, String) or not length:
                continue
            query = select(func.count()).select_from(table).where(func.length(column) > length)
            if conn.execute(query).scalar_one():
                raise _invalid(
                    f"The backup holds values longer than {length} characters in "
                    f"{table.name}.{column.name}, which PostgreSQL refuses"
                )


def reseal(conn: Connection, backup: SecretBox, live: SecretBox | None) -> int:
    """Open every envelope with the backup's key and seal it with the live key.

    Sealed columns must all open; settings and system values are re-sealed where they
    hold an envelope of the backup's key. With ``live`` None this only checks.
    Returns how many secrets there were.
    """
    rowid: Any = literal_column("rowid")
    change = live is not None and live.key_id != backup.key_id
    count = 0
    for table_name, column_name, _ in sealed_columns():
        table = metadata.tables[table_name]
        column = table.c[column_name]
        last = 0
        while True:
            query = (
                select(rowid, column)
                .where(rowid > last, column.is_not(None))
                .order_by(rowid)
                .limit(ROW_BATCH)
            )
            batch = conn.execute(query).all()
            if not batch:
                break
            for row_id, value in batch:
                last = row_id
                if not value:
                    continue
                try:
                    plain = backup.open_bytes(value)
                except KeyError_ as exc:
                    raise _invalid(
                        f"A secret in {table_name}.{column_name} cannot be opened with the "
                        f"backup's key ({exc})"
                    ) from None
                count += 1
                if change:
                    assert live is not None
                    sealed = live.seal(plain)
                    conn.execute(update(table).where(rowid == row_id).values({column_name: sealed}))
    state_tables: list[Any] = [SettingValue.__table__, SystemValue.__table__]  # type: ignore[attr-defined]
    for table in state_tables:
        key_column = table.primary_key.columns[0]
        for name, value in conn.execute(select(key_column, table.c.value)).all():
            if not isinstance(value, str) or envelope_key_id(value) != backup.key_id:
                continue
            try:
                plain = backup.open_bytes(value)
            except KeyError_ as exc:
                raise _invalid(f"The secret {name!r} cannot be opened ({exc})") from None
            count += 1
            if change:
                assert live is not None
                statement = update(table).where(key_column == name)
                conn.execute(statement.values(value=live.seal(plain)))
    return count
