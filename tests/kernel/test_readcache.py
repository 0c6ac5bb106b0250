"""The read cache serves hot reads from memory and forgets everything on any commit —
including commits by another process (the CLI, a second gateway on the same file)."""

from __future__ import annotations

import asyncio
import sqlite3
import subprocess
import sys
import time

import jwt
import pytest
from hostgate.db import changes
from hostgate.db.changes import SqliteChanges
from hostgate.db.engine import Database
from hostgate.db.readcache import ReadCache
from hostgate.testing import TEST_KEY


def counting_loader(values: list[str]):
    calls = []

    async def load() -> str:
        calls.append(1)
        return values[len(calls) - 1]

    return load, calls


def commit_elsewhere(kernel, name: str = "elsewhere") -> None:
    """A commit by a plain sqlite3 connection: another process sharing the file."""
    with sqlite3.connect(kernel.config.data_dir / "hostgate.db") as other:
        other.execute(
            "INSERT OR REPLACE INTO system_values (name, value, created_at) "
            "VALUES (?, ?, '2026-01-01 00:00:00')",
            (name, str(time.monotonic())),
        )


async def test_hits_until_another_connection_commits(kernel):
    cache = kernel.readcache
    load, calls = counting_loader(["first", "second"])
    assert await cache.get("key", load) == "first"
    assert await cache.get("key", load) == "first"
    assert len(calls) == 1
    # a plain sqlite3 connection stands for another process sharing the file
    commit_elsewhere(kernel)
    assert await cache.get("key", load) == "second"
    assert len(calls) == 2


async def test_a_value_read_across_a_commit_is_not_kept(kernel):
    cache = kernel.readcache
    calls = []

    async def load_while_someone_commits() -> str:
        calls.append(1)
        commit_elsewhere(kernel)
        return "maybe stale"

    await cache.get("key", load_while_someone_commits)
    await cache.get("key", load_while_someone_commits)
    assert len(calls) == 2


async def test_a_read_only_transaction_keeps_the_cache(kernel):
    load, calls = counting_loader(["only"])
    await kernel.readcache.get("key", load)
    with sqlite3.connect(kernel.config.data_dir / "hostgate.db") as other:
        other.execute("SELECT count(*) FROM users").fetchone()
    await kernel.readcache.get("key", load)
    assert len(calls) == 1


def commit_in_another_process(path) -> None:
    """A commit by a separate Python process (another worker, the CLI)."""
    code = (
        "import sqlite3, sys\n"
        "with sqlite3.connect(sys.argv[1]) as db:\n"
        '    db.execute("INSERT OR REPLACE INTO system_values (name, value, created_at) '
        "VALUES ('other process', 'x', '2026-01-01 00:00:00')\")\n"
    )
    subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)


def traced(probe: SqliteChanges) -> list[str]:
    """The statements the probe's own connection runs from now on."""
    statements: list[str] = []
    assert probe._connection is not None
    probe._connection.set_trace_callback(statements.append)
    return statements


async def test_the_sqlite_probe_reads_the_wal_index_instead_of_querying(kernel):
    probe = kernel.db.changes
    assert isinstance(probe, SqliteChanges)
    first = await probe.version()
    statements = traced(probe)
    # nothing committed: the same answer, and no statement ran for it
    assert [await probe.version() for _ in range(5)] == [first] * 5
    commit_elsewhere(kernel)  # another connection of this process
    second = await probe.version()
    commit_in_another_process(kernel.config.data_dir / "hostgate.db")
    third = await probe.version()
    assert len({first, second, third}) == 3
    assert None not in (first, second, third)
    assert statements == []


async def test_another_process_revoking_a_session_is_seen_without_the_pragma(
    client, kernel, make_user
):
    user = await make_user("hana")
    for _ in range(3):
        assert (await client.get("/api/v1/auth/me", headers=user.headers)).status_code == 200
    statements = traced(kernel.db.changes)
    code = (
        "import sqlite3, sys\n"
        "with sqlite3.connect(sys.argv[1]) as db:\n"
        "    db.execute(\"UPDATE login_sessions SET revoked_at = '2026-01-01 00:00:00' "
        'WHERE user_id = ?", (sys.argv[2],))\n'
    )
    db_path = str(kernel.config.data_dir / "hostgate.db")
    subprocess.run([sys.executable, "-c", code, db_path, user.id], check=True, timeout=60)
    response = await client.get("/api/v1/auth/me", headers=user.headers)
    assert response.status_code == 401
    assert (await response.get_json())["code"] == "session_revoked"
    assert statements == []


async def test_a_database_not_in_wal_mode_is_probed_with_the_pragma(tmp_path):
    path = tmp_path / "rollback.db"
    with sqlite3.connect(path) as setup:
        setup.execute("PRAGMA journal_mode=DELETE")
        setup.execute("CREATE TABLE system_values (name PRIMARY KEY, value, created_at)")
    probe = SqliteChanges(str(path))
    try:
        first = await probe.version()
        statements = traced(probe)
        assert await probe.version() == first
        commit_in_another_process(path)
        assert await probe.version() not in (first, None)
        assert statements == ["PRAGMA data_version"] * 2
    finally:
        await probe.close()


async def test_a_wal_index_caught_between_its_two_copies_means_unknown(kernel, monkeypatch):
    probe = kernel.db.changes
    header = await probe.version()
    assert isinstance(header, bytes)
    load, calls = counting_loader(["a", "b", "c"])
    assert await kernel.readcache.get("key", load) == "a"
    # a writer has updated the second copy and not yet the first
    torn = header + header[:16] + bytes(b ^ 0xFF for b in header[16:20]) + header[20:]
    monkeypatch.setattr(changes.os, "pread", lambda fd, size, offset: torn)
    assert await probe.version() is None
    assert [await kernel.readcache.get("key", load) for _ in range(2)] == ["b", "c"]
    monkeypatch.undo()
    assert await probe.version() == header


async def test_databases_without_a_change_counter_are_never_cached(tmp_path):
    # in-memory SQLite, and a PostgreSQL that cannot be reached
    for url in ("sqlite+aiosqlite://", "postgresql+asyncpg://u:p@127.0.0.1:9/db"):
        database = Database(url)
        assert await database.data_version() is None
        cache = ReadCache(database)
        load, calls = counting_loader(["a", "b"])
        assert [await cache.get("key", load), await cache.get("key", load)] == ["a", "b"]
        await database.close()


async def test_a_locked_or_missing_file_means_no_caching(tmp_path):
    database = Database(f"sqlite+aiosqlite:///{tmp_path}/gone/hostgate.db")
    assert await database.data_version() is None
    await database.close()


async def test_the_cache_is_bounded(kernel):
    cache = ReadCache(kernel.db, max_entries=3)
    for n in range(10):
        load, _ = counting_loader([str(n)])
        await cache.get(n, load)
    assert len(cache._entries) <= 3


async def test_role_change_by_another_process_applies_to_the_next_request(
    client, kernel, make_user
):
    user = await make_user("carol")
    first = await client.get("/api/v1/auth/me", headers=user.headers)
    again = await client.get("/api/v1/auth/me", headers=user.headers)
    assert first.status_code == again.status_code == 200
    assert "audit.view" not in (await again.get_json())["user"]["permissions"]
    assert kernel.readcache.hits > 0
    with sqlite3.connect(kernel.config.data_dir / "hostgate.db") as other:
        other.execute(
            "UPDATE roles SET permissions = ? WHERE id = ?", ('["audit.view"]', user.role_id)
        )
    after = await client.get("/api/v1/auth/me", headers=user.headers)
    assert (await after.get_json())["user"]["permissions"] == ["audit.view"]


async def test_cli_password_reset_revokes_on_the_next_request(client, kernel, make_user, run_cli):
    user = await make_user("dave")
    for _ in range(2):
        assert (await client.get("/api/v1/auth/me", headers=user.headers)).status_code == 200
    env = {
        "HOSTGATE_DATA_DIR": str(kernel.config.data_dir),
        "HOSTGATE_ENCRYPTION_KEY": TEST_KEY,
        "HOSTGATE_PASSWORD": "a new password 123",
    }
    code, _, err = run_cli("user", "reset-password", "dave", env=env)
    assert code == 0, err
    response = await client.get("/api/v1/auth/me", headers=user.headers)
    assert response.status_code == 401
    assert (await response.get_json())["code"] == "session_revoked"


async def test_connection_list_follows_changes_made_elsewhere(
    client, kernel, admin, make_connection
):
    connection = await make_connection(admin, "ssh", name="before")
    listed = [await client.get("/api/v1/connections", headers=admin.headers) for _ in range(2)]
    assert [(await r.get_json())["ungrouped"][0]["name"] for r in listed] == ["before"] * 2
    with sqlite3.connect(kernel.config.data_dir / "hostgate.db") as other:
        other.execute("UPDATE connections SET name = 'after' WHERE id = ?", (connection.id,))
    listed = await client.get("/api/v1/connections", headers=admin.headers)
    assert (await listed.get_json())["ungrouped"][0]["name"] == "after"
    # and a change through the API itself
    deleted = await client.delete(f"/api/v1/connections/{connection.id}", headers=admin.headers)
    assert deleted.status_code == 200
    listed = await client.get("/api/v1/connections", headers=admin.headers)
    assert (await listed.get_json())["ungrouped"] == []


async def test_scope_all_is_refused_without_permission_even_when_cached(client, make_user, admin):
    user = await make_user("erin")
    assert (
        await client.get("/api/v1/connections?scope=all", headers=admin.headers)
    ).status_code == 200
    refused = await client.get("/api/v1/connections?scope=all", headers=user.headers)
    assert refused.status_code == 403


async def test_a_verified_token_still_expires(client, kernel, make_user, monkeypatch):
    user = await make_user("frank")
    assert (await client.get("/api/v1/auth/me", headers=user.headers)).status_code == 200
    expires = jwt.decode(user.token, options={"verify_signature": False})["exp"]
    monkeypatch.setattr(time, "time", lambda: expires + 1)
    response = await client.get("/api/v1/auth/me", headers=user.headers)
    assert response.status_code == 401
    assert (await response.get_json())["code"] == "token_expired"


@pytest.mark.parametrize("tamper", ["signature", "claims"])
async def test_a_tampered_token_is_refused_after_the_genuine_one(client, make_user, tamper):
    user = await make_user("gina")
    assert (await client.get("/api/v1/auth/me", headers=user.headers)).status_code == 200
    header, claims, signature = user.token.split(".")
    if tamper == "signature":
        signature = signature[:-2] + ("AA" if signature[-2:] != "AA" else "BB")
    else:
        claims = claims[:-2] + ("AA" if claims[-2:] != "AA" else "BB")
    forged = {"Authorization": f"Bearer {header}.{claims}.{signature}"}
    response = await client.get("/api/v1/auth/me", headers=forged)
    assert response.status_code == 401


async def test_postgres_snapshot_moves_on_commits_only(postgres_url):
    import asyncpg
    from sqlalchemy.engine import make_url

    database = Database(postgres_url)
    dsn = make_url(postgres_url).set(drivername="postgresql").render_as_string(hide_password=False)
    other = await asyncpg.connect(dsn)
    try:
        first = await database.data_version()
        assert first is not None
        await other.fetchval("SELECT 1")  # a read-only transaction
        assert await database.data_version() == first
        await other.execute("CREATE TEMP TABLE t (x int); INSERT INTO t VALUES (1)")
        second = await database.data_version()
        assert second != first
        # a commit while requests wait: each gets an answer taken after it asked
        answers = await asyncio.gather(*(database.data_version() for _ in range(20)))
        assert set(answers) == {second}
        cache = ReadCache(database)
        load, calls = counting_loader(["a", "b"])
        assert [await cache.get("k", load), await cache.get("k", load)] == ["a", "a"]
        await other.execute("INSERT INTO t VALUES (2)")
        assert await cache.get("k", load) == "b"
    finally:
        await other.close()
        await database.close()


async def test_revocation_on_postgres_applies_to_the_next_request(config, postgres_url):
    from hostgate.app import create_app

    app = create_app(config.with_overrides(database_url=postgres_url))
    async with app.test_app() as test_app:
        client = test_app.test_client()
        kernel = app.extensions["hostgate"]
        setup = await client.post(
            "/api/v1/auth/setup", json={"username": "root", "password": "long-enough"}
        )
        headers = {"Authorization": f"Bearer {(await setup.get_json())['token']}"}
        for _ in range(3):
            assert (await client.get("/api/v1/auth/me", headers=headers)).status_code == 200
        assert kernel.readcache.hits > 0
        # another connection (another gateway, the CLI) revokes every session
        import asyncpg
        from sqlalchemy.engine import make_url

        url = make_url(postgres_url).set(drivername="postgresql")
        other = await asyncpg.connect(url.render_as_string(hide_password=False))
        try:
            await other.execute(
                "UPDATE login_sessions SET revoked_at = now(), revoke_reason = 'elsewhere'"
            )
        finally:
            await other.close()
        response = await client.get("/api/v1/auth/me", headers=headers)
        assert response.status_code == 401
        assert (await response.get_json())["code"] == "session_revoked"


async def test_a_postgres_probe_answer_is_never_older_than_its_caller():
    """One query serves every caller that asked before it was sent, none that asked after."""
    from hostgate.db.changes import PostgresChanges

    class Scripted(PostgresChanges):
        def __init__(self) -> None:
            super().__init__("postgresql://unused")
            self.sent = 0
            self.release = asyncio.Event()

        async def _query(self):
            self.sent += 1
            number = self.sent
            await self.release.wait()
            self.release.clear()
            return number

    probe = Scripted()
    first = asyncio.create_task(probe.version())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert probe.sent == 1  # in flight
    later = [asyncio.create_task(probe.version()) for _ in range(3)]
    await asyncio.sleep(0)
    probe.release.set()
    assert await first == 1
    for _ in range(5):
        await asyncio.sleep(0)
    assert probe.sent == 2  # one more query for the three that came later
    probe.release.set()
    assert [await task for task in later] == [2, 2, 2]
    await probe.close()
