"""A kill -9 at any moment of an import leaves a working instance: the old state, or the
complete new one once the database commit happened (the journal finishes it at start-up)."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys

import pytest
from hostgate.db.models.sessions import SessionCommand
from hostgate.services.backup import Backups
from hostgate.services.backup.restore import JOURNAL_NAME, prepare_restore, write_journal
from hostgate.services.backup.staging import stage_archive
from hostgate.services.database_swap import swap_database
from sqlalchemy import insert

from tests.services.backup.support import (
    CHEAP,
    KEY_A,
    KEY_B,
    PASSWORD,
    USER_PASSWORD,
    check_restored,
    export_to,
    make_config,
    populate,
    restore_from,
    running,
    user_named,
)

MIB = 1024 * 1024
PROGRESS = re.compile(r"(\w+)\s+\[[#-]+\]\s+(\d+)%")


async def old_state(kernel) -> None:
    """The state of the instance before the import."""
    await kernel.settings.update({"app.name": "Old State"})
    from hostgate.db.models.identity import Role, User
    from hostgate.security.passwords import hash_password_sync
    from sqlmodel import select

    async with kernel.db.session() as session:
        role = (await session.exec(select(Role).where(Role.name == "admin"))).one()
        session.add(
            User(
                username="old-admin",
                username_key="old-admin",
                password_hash=hash_password_sync(USER_PASSWORD),
                role_id=role.id,
            )
        )
        await session.commit()
    (kernel.config.data_dir / "recordings" / "old.cast").write_bytes(b"old recording")


async def assert_old_state(client, kernel) -> None:
    """The old state is whole and the instance works: login, settings, recordings."""
    assert kernel.settings.get("app.name") == "Old State"
    assert await user_named(kernel, "marker-alice") is None
    response = await client.post(
        "/api/v1/auth/login", json={"username": "old-admin", "password": USER_PASSWORD}
    )
    assert response.status_code == 200, await response.get_json()
    recordings = kernel.config.data_dir / "recordings"
    assert (recordings / "old.cast").read_bytes() == b"old recording"
    assert not (recordings / "marker-recording.cast").exists()
    data_dir = kernel.config.data_dir
    assert not (data_dir / JOURNAL_NAME).exists()
    assert not list((data_dir / ".backup-staging").glob("*"))


@pytest.fixture(scope="module")
def big_archive(tmp_path_factory, template_db):
    """An archive with 64 MiB of recordings and 20 000 extra rows (built once, before the loop)."""
    root = tmp_path_factory.mktemp("big-archive")
    config = make_config(root, "source", KEY_A, template=template_db)
    archive = root / "big.geb"

    async def build():
        async with running(config) as source:
            markers = await populate(source.kernel)
            from hostgate.db.models.sessions import RemoteSession
            from sqlmodel import select

            async with source.kernel.db.session() as session:
                row = (await session.exec(select(RemoteSession))).first()
            rows = [
                {"session_id": row.id, "command": f"echo {n}", "elapsed": n} for n in range(20_000)
            ]
            async with source.kernel.db.engine.begin() as conn:
                await conn.execute(insert(SessionCommand), rows)
            for number in range(2):
                (source.recordings / f"big-{number}.cast").write_bytes(os.urandom(32 * MIB))
            with pytest.MonkeyPatch.context() as patch:
                patch.setattr(Backups, "kdf_cost", CHEAP)
                await export_to(source.kernel, archive)
            return markers

    markers = asyncio.run(build())
    return archive, markers


def kill_during(phase: str, data_dir, archive, *, at_least: int) -> int:
    """Run ``hostgate backup import``; SIGKILL it once it reports ``phase`` at ``at_least``%."""
    env = {
        **os.environ,
        "HOSTGATE_ENCRYPTION_KEY": KEY_B,
        "HOSTGATE_BACKUP_PASSWORD": PASSWORD,
    }
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "hostgate",
            "--data-dir",
            str(data_dir),
            "backup",
            "import",
            str(archive),
        ],
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        env=env,
    )
    seen = ""
    try:
        while True:
            chunk = os.read(process.stderr.fileno(), 4096)
            if not chunk:
                raise AssertionError(f"the import ended before {phase} {at_least}%: {seen[-500:]}")
            seen += chunk.decode(errors="replace")
            reports = PROGRESS.findall(seen)
            if reports and reports[-1][0] == phase and int(reports[-1][1]) >= at_least:
                process.send_signal(signal.SIGKILL)
                return int(reports[-1][1])
    finally:
        process.wait(timeout=60)
        process.stderr.close()


async def test_kill_while_reading_the_archive(tmp_path, instance_config, big_archive):
    archive, _ = big_archive
    target = instance_config("target", KEY_B)
    async with running(target) as b:
        await old_state(b.kernel)
    percent = kill_during("reading", target.data_dir, archive, at_least=10)
    assert percent < 100
    async with running(target) as b:
        await assert_old_state(b.client, b.kernel)


async def test_kill_while_rows_are_copied_into_the_live_database(
    tmp_path, instance_config, big_archive
):
    archive, _ = big_archive
    target = instance_config("target", KEY_B)
    async with running(target) as b:
        await old_state(b.kernel)
    percent = kill_during("restoring", target.data_dir, archive, at_least=20)
    assert percent < 100
    async with running(target) as b:
        await assert_old_state(b.client, b.kernel)


async def test_start_up_finishes_a_restore_whose_commit_happened(
    tmp_path, instance_config, big_archive
):
    archive, markers = big_archive
    target = instance_config("target", KEY_B)
    async with running(target) as b:
        await old_state(b.kernel)
        # everything a restore does up to the commit, then "the process dies"
        slot = b.kernel.backups.staging_root / "interrupted"
        slot.mkdir(parents=True)
        staged = await asyncio.to_thread(
            stage_archive,
            archive,
            PASSWORD,
            slot,
            live=b.kernel.secrets,
            write_recordings=True,
            target_dialect="sqlite",
            prepare=prepare_restore("interrupted"),
        )
        journal = {"id": "interrupted", "directory": str(slot), "recordings": True}
        write_journal(target.data_dir / JOURNAL_NAME, journal)
        await swap_database(b.kernel.db.engine, staged.database, 0)
    assert (target.data_dir / "recordings" / "old.cast").exists()
    async with running(target) as b:
        await check_restored(b.kernel, markers)
        assert not (target.data_dir / "recordings" / "old.cast").exists()
        assert not (target.data_dir / JOURNAL_NAME).exists()
        assert not (target.data_dir / ".backup-staging").exists()


async def test_start_up_drops_a_restore_whose_commit_did_not_happen(
    tmp_path, instance_config, big_archive
):
    archive, _ = big_archive
    target = instance_config("target", KEY_B)
    async with running(target) as b:
        await old_state(b.kernel)
        slot = b.kernel.backups.staging_root / "interrupted"
        slot.mkdir(parents=True)
        await asyncio.to_thread(
            stage_archive,
            archive,
            PASSWORD,
            slot,
            live=b.kernel.secrets,
            write_recordings=True,
            prepare=prepare_restore("interrupted"),
        )
        journal = {"id": "interrupted", "directory": str(slot), "recordings": True}
        write_journal(target.data_dir / JOURNAL_NAME, journal)
    async with running(target) as b:
        await assert_old_state(b.client, b.kernel)


async def test_a_caller_that_goes_away_while_staging_changes_nothing(
    tmp_path, instance_config, big_archive
):
    archive, _ = big_archive
    target = instance_config("target", KEY_B)
    async with running(target) as b:
        await old_state(b.kernel)
        task = asyncio.create_task(restore_from(b.kernel, archive))
        staging = b.kernel.backups.staging_root
        for _ in range(3000):
            if list(staging.glob("*/recordings/big-0.cast")):
                break
            await asyncio.sleep(0.01)
        else:
            raise AssertionError("staging never started")
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert not list(staging.iterdir())
        await assert_old_state(b.client, b.kernel)
        # and the next import is not blocked
        result = await restore_from(b.kernel, archive)
        assert result.recordings_restored == 4
