"""Round trips on SQLite and PostgreSQL and across them, into instances with another key."""

from __future__ import annotations

import pytest

from tests.backup.support import (
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
