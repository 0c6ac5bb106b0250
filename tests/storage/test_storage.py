"""Storage on both engines: migrations, schema == models, types, the app itself."""

from datetime import UTC, datetime
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from hostgate.app import create_app, kernel_of
from hostgate.config import Config
from hostgate.db.engine import Database
from hostgate.db.models import metadata
from hostgate.db.models.audit import AuditEntry
from hostgate.db.models.pack_tables import include_in_comparison
from hostgate.db.models.settings import SettingValue
from sqlalchemy.exc import IntegrityError
from sqlmodel import select


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite+aiosqlite:///{tmp_path / 'fresh.db'}"
    return request.getfixturevalue("postgres_url")


def _differences(sync_connection: Any) -> list[Any]:
    # compare_type: a column whose migrated type differs from the model's (Text
    # against String(64), Integer against BigInteger...) is a difference too;
    # UTCDateTime, JSONText and Sealed compare by their impl (DateTime, Text).
    # the full-text objects of the recording search are the migration's alone
    opts = {"compare_type": True, "include_object": include_in_comparison}
    context = MigrationContext.configure(sync_connection, opts=opts)
    return list(compare_metadata(context, metadata))


async def test_migrated_schema_equals_models(database_url: str) -> None:
    """Migrating twice leaves tables, columns, column types, indexes and keys as the models."""
    db = Database(database_url)
    try:
        await db.migrate()
        await db.migrate()  # idempotent
        async with db.engine.connect() as conn:
            diff = await conn.run_sync(_differences)
        assert diff == []
    finally:
        await db.close()


def test_the_head_revision_is_alembics():
    """A new migration moves HEAD_REVISION too: else a database at the old head is not migrated."""
    from alembic.script import ScriptDirectory
    from hostgate.db.engine import HEAD_REVISION, alembic_config

    assert ScriptDirectory.from_config(alembic_config()).get_heads() == [HEAD_REVISION]


async def test_a_database_behind_the_head_is_migrated_at_start(database_url: str) -> None:
    """The start's quick check skips Alembic only at the head: an older database is upgraded."""
    from alembic import command
    from hostgate.db.engine import HEAD_REVISION, alembic_config
    from sqlalchemy import text

    db = Database(database_url)
    try:
        async with db.engine.begin() as conn:
            await conn.run_sync(
                lambda sync: command.upgrade(alembic_config(sync), "0006_audit_user_type_index")
            )
        await db.migrate()
        async with db.engine.connect() as conn:
            version = (await conn.execute(text("SELECT version_num FROM alembic_version"))).scalar()
            diff = await conn.run_sync(_differences)
        assert (version, diff) == (HEAD_REVISION, [])
    finally:
        await db.close()


async def test_types_round_trip(database_url):
    db = Database(database_url)
    try:
        await db.migrate()
        moment = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=UTC)
        async with db.session() as session:
            session.add(
                SettingValue(key="k", value={"nested": [1, "two", None]}, updated_at=moment)
            )
            session.add(SettingValue(key="n", value=None))
            await session.commit()
        async with db.session() as session:
            row = await session.get(SettingValue, "k")
            empty = await session.get(SettingValue, "n")
        assert row.value == {"nested": [1, "two", None]}
        assert row.updated_at == moment and row.updated_at.tzinfo is not None
        assert empty.value is None
    finally:
        await db.close()


async def test_a_failed_statements_error_text_leaves_out_its_values(database_url):
    # background tasks log what they catch: a statement's values (a typed command, a
    # sealed secret) must not be in that text
    db = Database(database_url)
    try:
        await db.migrate()
        async with db.session() as session:
            session.add(SettingValue(key="dup", value="first"))
            await session.commit()
        with pytest.raises(IntegrityError) as failed:
            async with db.session() as session:
                session.add(SettingValue(key="dup", value="hg-marker-s3cret"))
                await session.commit()
        text = str(failed.value)
        assert "INSERT INTO" in text  # the statement itself is still named
        assert "hg-marker-s3cret" not in text
        assert "parameters hidden" in text
    finally:
        await db.close()


async def test_app_runs_on_the_engine(config, database_url):
    app = create_app(config.with_overrides(database_url=database_url))
    async with app.test_app():
        kernel = kernel_of(app)
        await kernel.settings.update({"app.name": "engine test"})
        for n in range(3):
            await kernel.audit.record("test.event", target=str(n), details={"n": n})
        async with kernel.db.session() as session:
            entries = (await session.exec(select(AuditEntry).order_by(AuditEntry.seq))).all()
        assert [e.target for e in entries] == ["0", "1", "2"]
        assert entries[1].prev_hash == entries[0].hash and entries[2].prev_hash == entries[1].hash
        client = app.test_client()
        public = await (await client.get("/api/v1/settings/public")).get_json()
        assert public["settings"]["app.name"] == "engine test"


async def test_sqlite_connections_use_wal_and_foreign_keys(config: Config) -> None:
    """Every connection the app's SQLite engine hands out runs in WAL mode with foreign keys on."""
    app = create_app(config)
    async with app.test_app():
        kernel = kernel_of(app)
        assert kernel.db.dialect == "sqlite"
        # two connections at once: both are fresh from the pool, each gets the pragmas
        async with kernel.db.engine.connect() as first, kernel.db.engine.connect() as second:
            for conn in (first, second):
                assert (await conn.exec_driver_sql("PRAGMA journal_mode")).scalar() == "wal"
                assert (await conn.exec_driver_sql("PRAGMA foreign_keys")).scalar() == 1
