"""The database refuses a write: locked past the busy timeout, or the disk is full.

The request answers 503 in the error shape (``storage_busy`` with ``Retry-After``,
or ``storage_full``), nothing of it is stored (no audit entry, no setting, the
audit chain still verifies), and the next request after the cause is gone works.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostgate.app import create_app
from hostgate.config import Config
from sqlalchemy import event

from testsupport.dblock import write_lock

BUSY_MS = 300


async def audit_count(kernel: Any) -> int:
    from hostgate.db.models.audit import AuditEntry
    from sqlalchemy import func
    from sqlmodel import select

    async with kernel.db.session() as session:
        return int((await session.exec(select(func.count()).select_from(AuditEntry))).one())


async def app_name(client: Any) -> str:
    body = await (await client.get("/api/v1/settings/public")).get_json()
    return str(body["settings"]["app.name"])


def refused(body: dict[str, Any], code: str) -> bool:
    return set(body) == {"error", "code"} and body["code"] == code


class TestLocked:
    @pytest.fixture
    def config(self, config: Config) -> Config:
        return config.with_overrides(database_busy_timeout_ms=BUSY_MS)

    async def test_a_locked_database_answers_503_storage_busy_and_stores_nothing(
        self, client: Any, admin: Any, kernel: Any, config: Config
    ) -> None:
        before = await audit_count(kernel)
        with write_lock(config.data_dir / "hostgate.db"):
            # an audit entry is the only write of an authenticated forced version check
            version = await client.get("/api/v1/version?force=true", headers=admin.headers)
            assert version.status_code == 503
            assert refused(await version.get_json(), "storage_busy")
            assert version.headers["Retry-After"] == "1"
            change = await client.put(
                "/api/v1/settings", headers=admin.headers, json={"app.name": "Locked Out"}
            )
            assert change.status_code == 503
            assert refused(await change.get_json(), "storage_busy")
            # reads are not blocked by a writer
            assert (await client.get("/api/v1/audit", headers=admin.headers)).status_code == 200
        assert await audit_count(kernel) == before
        assert await app_name(client) != "Locked Out"
        version = await client.get("/api/v1/version?force=true", headers=admin.headers)
        assert version.status_code == 200
        assert await audit_count(kernel) == before + 1
        assert (await kernel.audit.verify_chain()).ok


def _mount_tmpfs(path: Path, size: str) -> bool:
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True)  # fmt: skip
    return done.returncode == 0


def _fill(directory: Path) -> Path:
    """Write zeros until the filesystem is full; the filler file."""
    filler = directory / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
    try:
        for size in (1024 * 1024, 4096, 1):
            block = bytes(size)
            try:
                while True:
                    os.write(fd, block)
            except OSError as exc:
                assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


class DiskFiller:
    """Fills the storage under the database, and frees it again.

    On a small tmpfs (root may mount one) the disk really fills up. Where mounting
    is not permitted, SQLite's ``max_page_count`` pins the database at its current
    size: the same ``SQLITE_FULL`` a full disk gives.
    """

    def __init__(self, kernel: Any, data_dir: Path, mounted: bool) -> None:
        self.kernel = kernel
        self.data_dir = data_dir
        self.mounted = mounted
        self.filler: Path | None = None
        self._listener: Any = None

    async def fill(self) -> None:
        if self.mounted:
            self.filler = _fill(self.data_dir.parent)
            return
        with contextlib.closing(sqlite3.connect(self.data_dir / "hostgate.db")) as side:
            pages = int(side.execute("PRAGMA page_count").fetchone()[0])

        def limit(dbapi_connection: Any, _record: Any) -> None:
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA max_page_count={pages}")
            cursor.close()

        self._listener = limit
        event.listen(self.kernel.db.engine.sync_engine, "connect", limit)
        await self.kernel.db.engine.dispose()

    async def free(self) -> None:
        if self.filler is not None:
            self.filler.unlink()
        if self._listener is not None:
            event.remove(self.kernel.db.engine.sync_engine, "connect", self._listener)
            await self.kernel.db.engine.dispose()


class TestFullDisk:
    """The data directory on an 8 MiB tmpfs that the test fills up."""

    @pytest.fixture
    def mount(self, tmp_path: Path) -> Iterator[Path | None]:
        point = tmp_path / "small"
        if not _mount_tmpfs(point, "8m"):
            yield None
            return
        try:
            yield point
        finally:
            subprocess.run(["umount", "-l", str(point)], capture_output=True)

    @pytest.fixture
    def config(self, config: Config, mount: Path | None) -> Config:
        if mount is None:
            return config
        data = mount / "data"
        shutil.copytree(config.data_dir, data)
        return config.with_overrides(data_dir=data)

    async def test_a_full_disk_answers_503_storage_full_and_stores_nothing(
        self, client: Any, admin: Any, kernel: Any, config: Config, mount: Path | None
    ) -> None:
        """Regression: a settings change was committed before its audit entry, so a
        full disk could keep the change, lose the entry and still answer 503."""
        await kernel.settings.update({"recordings.min_free_disk_mb": 0})
        disk = DiskFiller(kernel, config.data_dir, mounted=mount is not None)
        await disk.fill()
        full: Any = None
        # WAL space or a half-empty page may take a few entries before a write fails
        for _ in range(500):
            response = await client.get("/api/v1/version?force=true", headers=admin.headers)
            if response.status_code != 200:
                full = response
                break
        assert full is not None, "writes never failed on a full disk"
        assert full.status_code == 503
        assert refused(await full.get_json(), "storage_full")
        change = await client.put(
            "/api/v1/settings", headers=admin.headers, json={"app.name": "Disk Full"}
        )
        assert change.status_code == 503
        assert await app_name(client) != "Disk Full"
        await disk.free()
        count = await audit_count(kernel)
        version = await client.get("/api/v1/version?force=true", headers=admin.headers)
        assert version.status_code == 200
        assert await audit_count(kernel) == count + 1
        assert (await kernel.audit.verify_chain()).ok


async def test_an_audit_entry_longer_than_its_columns_is_stored_on_postgres(
    config: Config, postgres_url: str
) -> None:
    """Regression: saving every setting at once made the ``settings.updated`` target
    longer than its column; PostgreSQL refused the audit insert after the settings
    were stored (a 500, and a change without its audit entry)."""
    from hostgate_ldap import plugin as ldap_plugin
    from hostgate_oidc import plugin as oidc_plugin
    from hostgate_passkey import plugin as passkey_plugin

    app = create_app(
        config.with_overrides(database_url=postgres_url),
        plugins=[ldap_plugin, oidc_plugin, passkey_plugin],
    )
    async with app.test_app() as test_app:
        client = test_app.test_client()
        kernel = app.extensions["hostgate"]
        setup = await client.post(
            "/api/v1/auth/setup", json={"username": "root", "password": "long-enough"}
        )
        headers = {"Authorization": "Bearer " + (await setup.get_json())["token"]}
        current = await (await client.get("/api/v1/settings", headers=headers)).get_json()
        body = {
            key: value
            for key, value in current["settings"].items()
            if not kernel.settings.specs[key].readonly
        }
        body["app.name"] = "Everything At Once"
        assert len(", ".join(body)) > 1000
        saved = await client.put("/api/v1/settings", headers=headers, json=body)
        assert saved.status_code == 200, await saved.get_data()
        audit = await client.get("/api/v1/audit?eventType=settings.updated", headers=headers)
        [entry] = (await audit.get_json())["entries"]
        assert len(entry["target"]) == 1000 and entry["target"].endswith("\u2026")
        assert entry["details"]["after"]["app.name"] == "Everything At Once"
        assert (await kernel.audit.verify_chain()).ok


async def test_a_failed_audit_write_leaves_a_chain_that_verifies_on_postgres(
    config: Config, postgres_url: str
) -> None:
    """Regression: PostgreSQL spends a sequence value on an insert that is rolled back;
    ``verify_chain`` read the gap in ``seq`` as deleted entries (a false tamper alarm
    after any failed audit write)."""
    from sqlalchemy import text

    app = create_app(config.with_overrides(database_url=postgres_url))
    async with app.test_app():
        kernel = app.extensions["hostgate"]
        await kernel.audit.record("test.before", target="a")
        with contextlib.suppress(RuntimeError):
            async with kernel.db.engine.begin() as connection:
                await connection.execute(
                    text(
                        "INSERT INTO audit_log (id, event_type, target, username, display_name,"
                        " details, ip_address, timestamp, prev_hash, hash) VALUES ('failed',"
                        " 'test.failed', '', '', '', '{}', '', now(), '', '')"
                    )
                )
                raise RuntimeError("the write fails before its commit")
        await kernel.audit.record("test.after", target="b")
        result = await kernel.audit.verify_chain()
        assert result.ok, result.problem
        assert result.checked == 2 and result.head_seq == 3
