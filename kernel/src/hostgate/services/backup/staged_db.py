"""The staging database, a throw-away SQLite file.

The archive's rows are loaded into it, migrated, checked and re-sealed there
before anything live is touched.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Connection,
    Engine,
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

from ...datadir import private_open
from ...db.engine import alembic_config
from ...db.models import metadata
from ...db.models.settings import SettingValue, SystemValue
from ...errors import InvalidInput
from ...security.secretbox import SecretBox, SecretKeyError, envelope_key_id
from ..keyrotation import sealed_columns
from .archive import NotAnArchive
from .tables import TEXT, BadValue, decode, python_default, to_storage, type_tag

ROW_BATCH = 1000


def inconsistent(message: str) -> InvalidInput:
    """The error for archive content that does not hold together (400)."""
    return InvalidInput(message, code="backup_inconsistent")


class TableLoader:
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
        """The next bytes of the table part; complete rows are stored in batches."""
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
            raise inconsistent(f"The backup's data is malformed ({where})") from None
        if not isinstance(values, list) or len(values) != len(self.names):
            raise inconsistent(f"The backup's data is malformed ({where})")
        row: dict[str, Any] = {}
        try:
            for name, tag, value in zip(self.names, self.tags, values, strict=True):
                row[name] = to_storage(tag, decode(tag, value))
        except BadValue as exc:
            raise inconsistent(f"The backup's data is malformed ({where}: {exc})") from None
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
                raise inconsistent(
                    f"The backup's data is inconsistent ({self.target.name}: {message})"
                ) from None
            self.batch = []

    def close(self) -> int:
        """The part ended: store what is pending; return how many rows there were."""
        if self.pending.strip():
            raise inconsistent(f"The backup's data is malformed ({self.target.name}: cut-off row)")
        self._flush()
        return self.rows


def staging_engine(path: Path) -> Engine:
    """A synchronous engine on the staging file (no journal, no fsync: it is thrown away)."""
    private_open(path, "a").close()
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


def create_schema(engine: Engine, revision: str) -> None:
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


def upgrade(engine: Engine) -> None:
    """Migrate the staging database to the current schema."""
    from alembic import command

    with engine.begin() as conn:
        command.upgrade(alembic_config(conn), "head")


def check_foreign_keys(conn: Connection) -> None:
    """Every reference between the staged rows must hold."""
    problems = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
    if problems:
        table, _, parent, _ = problems[0]
        raise inconsistent(
            f"The backup's data is inconsistent: {len(problems)} row(s), e.g. in {table}, "
            f"refer to missing {parent} rows"
        )


def check_sizes(conn: Connection) -> None:
    """PostgreSQL enforces VARCHAR lengths that SQLite ignores: refuse before the swap."""
    for table in metadata.sorted_tables:
        for column in table.columns:
            if type_tag(column.type) != TEXT:
                continue
            kind = getattr(column.type, "impl_instance", column.type)
            length = getattr(kind, "length", None) if isinstance(kind, String) else None
            if not length:
                continue
            query = select(func.count()).select_from(table).where(func.length(column) > length)
            if conn.execute(query).scalar_one():
                raise inconsistent(
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
                except SecretKeyError as exc:
                    raise inconsistent(
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
            except SecretKeyError as exc:
                raise inconsistent(f"The secret {name!r} cannot be opened ({exc})") from None
            count += 1
            if change:
                assert live is not None
                statement = update(table).where(key_column == name)
                conn.execute(statement.values(value=live.seal(plain)))
    return count
