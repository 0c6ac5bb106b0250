"""Round trips on SQLite and PostgreSQL and across them, into instances with another key."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hostgate.db.models import metadata
from hostgate.db.types import Sealed
from hostgate.services.backup.tables import type_tag
from sqlalchemy import insert, select

from tests.services.backup.support import (
    KEY_A,
    KEY_B,
    check_restored,
    export_to,
    populate,
    restore_from,
    running,
    user_named,
)

PAIRS = [
    ("sqlite", "sqlite"),
    ("postgresql", "postgresql"),
    ("sqlite", "postgresql"),
    ("postgresql", "sqlite"),
]


@pytest.fixture(params=PAIRS, ids=["-".join(p) for p in PAIRS])
def urls(request, new_database):
    source, target = request.param
    return new_database(source), new_database(target)


@pytest.fixture(params=["sqlite", "postgresql"])
def url(request, new_database):
    return new_database(request.param)


async def test_round_trip_into_an_instance_with_another_key(tmp_path, urls, instance_config):
    archive = tmp_path / "backup.geb"
    async with running(instance_config("a", KEY_A, urls[0])) as a:
        markers = await populate(a.kernel)
        await export_to(a.kernel, archive)
    config_b = instance_config("b", KEY_B, urls[1])
    async with running(config_b) as b:
        await b.kernel.audit.record("only.in.b")
        (b.recordings / "only-in-b.cast").write_bytes(b"old")
        result = await restore_from(b.kernel, archive)
        assert result.recordings_restored == 2
        assert result.rows["users"] == 2 and result.rows["connections"] == 1
        await check_restored(b.kernel, markers)
        assert not (b.recordings / "only-in-b.cast").exists()
        assert not list((config_b.data_dir / ".backup-staging").glob("*"))
    # A restart with B's key works: the key check and every secret were re-sealed.
    async with running(config_b) as b:
        assert await user_named(b.kernel, "marker-alice") is not None
        assert b.kernel.settings.get("backup_test.token") == "tok-secret-7"


async def test_export_wipe_import_on_the_same_instance(tmp_path, url, instance_config):
    archive = tmp_path / "backup.geb"
    config = instance_config("a", KEY_A, url)
    async with running(config) as a:
        markers = await populate(a.kernel)
        assert (await a.kernel.backups.size())["dbSize"] > 0
        await export_to(a.kernel, archive)
        # wipe: users, connections, settings and recordings go
        alice = await user_named(a.kernel, "marker-alice")
        async with a.kernel.db.session() as session:
            await session.delete(alice)
            await session.commit()
        await a.kernel.settings.update({"app.name": "Changed", "backup_test.token": "other"})
        for path in a.recordings.rglob("*"):
            if path.is_file():
                path.unlink()
        assert await user_named(a.kernel, "marker-alice") is None
        await restore_from(a.kernel, archive)
        await check_restored(a.kernel, markers)


async def test_archive_without_recordings_leaves_the_recordings_alone(tmp_path, instance_config):
    archive = tmp_path / "backup.geb"
    async with running(instance_config("a", KEY_A)) as a:
        markers = await populate(a.kernel)
        await export_to(a.kernel, archive, include_recordings=False)
        (a.recordings / "made-later.cast").write_bytes(b"later")
        result = await restore_from(a.kernel, archive)
        assert result.recordings_restored == 0
        assert (a.recordings / "made-later.cast").read_bytes() == b"later"
        await check_restored(a.kernel, markers)


def generated_rows(box):
    """One row for every table of the installed version, every column filled by its type."""
    moment = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    rows = {}
    for table in metadata.sorted_tables:
        row = {}
        for column in table.columns:
            if column.foreign_keys:
                target = next(iter(column.foreign_keys)).column
                if target.table is table:
                    continue  # linked to itself below
                row[column.name] = rows[target.table.name][target.name]
                continue
            if isinstance(column.type, Sealed):
                row[column.name] = box.seal(f"secret {table.name}.{column.name}")
                continue
            tag = type_tag(column.type)
            length = getattr(getattr(column.type, "impl_instance", column.type), "length", None)
            value = {
                "text": f"ü {table.name}.{column.name}"[: length or 1000],
                "int": 424242,
                "float": 1.25,
                "bool": True,
                "json": {"k": [1, "ü", None]},
                "datetime": moment,
            }[tag]
            row[column.name] = value
        for column in table.columns:
            for key in column.foreign_keys:
                if key.column.table is table:
                    row[column.name] = row[key.column.name]
        rows[table.name] = row
    return rows


CROSS = [("sqlite", "postgresql"), ("postgresql", "sqlite")]


@pytest.fixture(params=CROSS, ids=["-".join(p) for p in CROSS])
def cross_urls(request, new_database):
    return new_database(request.param[0]), new_database(request.param[1])


async def test_every_table_and_type_round_trips(tmp_path, instance_config, cross_urls):
    source_url, target_url = cross_urls
    archive = tmp_path / "all.geb"
    async with running(instance_config("a", KEY_A, source_url)) as a:
        rows = generated_rows(a.kernel.secrets)
        async with a.kernel.db.engine.begin() as conn:
            for table in metadata.sorted_tables:
                await conn.execute(insert(table).values(**rows[table.name]))
        await export_to(a.kernel, archive)
        box_a = a.kernel.secrets
    async with running(instance_config("b", KEY_B, target_url)) as b:
        await restore_from(b.kernel, archive)
        async with b.kernel.db.engine.connect() as conn:
            for table in metadata.sorted_tables:
                if table.name == "audit_count":
                    # counted by the restore, not carried: the one generated entry
                    found_counts = (await conn.execute(select(table))).all()
                    assert found_counts == [(1, 1)]
                    continue
                expected = rows[table.name]
                where = [column == expected[column.name] for column in table.primary_key]
                found = (await conn.execute(select(table).where(*where))).mappings().one()
                for column in table.columns:
                    want, got = expected[column.name], found[column.name]
                    if isinstance(column.type, Sealed):
                        want, got = box_a.open(want), b.kernel.secrets.open(got)
                    assert got == want, f"{table.name}.{column.name}"
        # sequences moved past restored ids: a new audit entry gets a fresh one
        await b.kernel.audit.record("after.restore")


async def test_export_reads_one_consistent_snapshot(tmp_path, instance_config, url):
    from hostgate.db.models.identity import Role, User
    from sqlmodel import select as select_models

    archive = tmp_path / "snapshot.geb"
    async with running(instance_config("a", KEY_A, url)) as a:
        await populate(a.kernel)
        stream = a.kernel.backups.export("backup password 1", include_recordings=False)
        with archive.open("wb") as handle:
            for _ in range(6):  # header, meta.json (begin, data, end), the first table begins
                handle.write(await anext(stream))
            async with a.kernel.db.session() as session:
                by_name = select_models(Role).where(Role.name == "user")
                role = (await session.exec(by_name)).one()
                session.add(User(username="mid-export", username_key="mid-export", role_id=role.id))
                await session.commit()
            async for chunk in stream:
                handle.write(chunk)
    async with running(instance_config("b", KEY_B)) as b:
        await restore_from(b.kernel, archive)
        assert await user_named(b.kernel, "marker-alice") is not None
        assert await user_named(b.kernel, "mid-export") is None
