"""A test gateway's reset (``hostgate.testreset``): back to its snapshot, in the database
and in memory; on SIGUSR1 only when the test fixture's variable is set."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import time
from contextlib import closing
from pathlib import Path

import httpx
import pytest
from hostgate.db.models.identity import User
from hostgate.db.models.settings import SettingValue
from hostgate.errors import RateLimited
from hostgate.security.ratelimit import LOGIN_PER_IP
from hostgate.services.identity.identity import ClientInfo
from hostgate.testreset import SNAPSHOT_ENV, done_path, reset
from sqlmodel import select

from testsupport.gateway import ADMIN_PASSWORD, GatewayProcess

CLIENT = ClientInfo(ip_address="192.0.2.7")


def copy_database(source: Path, snapshot: Path) -> None:
    """A consistent copy of a live SQLite database (its backup API)."""
    with closing(sqlite3.connect(source)) as live, closing(sqlite3.connect(snapshot)) as copy:
        live.backup(copy)


async def test_a_reset_brings_back_the_snapshot_and_forgets_what_memory_held(
    kernel, client, make_user, tmp_path
):
    snapshot = tmp_path / "first-state.db"
    copy_database(kernel.config.data_dir / "hostgate.db", snapshot)
    admin = await make_user("admin", role="admin")
    changed = await client.put(
        "/api/v1/settings", json={"app.name": "changed"}, headers=admin.headers
    )
    assert changed.status_code == 200
    recordings = kernel.config.resolved_recordings_dir
    recordings.mkdir(parents=True, exist_ok=True)
    (recordings / "2026").mkdir(exist_ok=True)
    (recordings / "2026" / "one.cast").write_text("{}\n")
    (recordings / ".hostgate-recordings").write_text("marker\n")
    for _ in range(LOGIN_PER_IP.attempts):
        await kernel.limits.hit("login-ip", "192.0.2.7", LOGIN_PER_IP, "too many")
    assert await kernel.limits.retry_after("login-ip", "192.0.2.7", LOGIN_PER_IP) > 0
    for _ in range(5):
        await kernel.logins.record_failure(None, "nobody", CLIENT, reason="bad_password")
    with pytest.raises(RateLimited):
        await kernel.logins.check_not_locked(None, CLIENT, username="nobody")

    await reset(kernel, snapshot)

    async with kernel.db.session() as session:
        assert (await session.exec(select(User))).all() == []
        assert (await session.exec(select(SettingValue))).all() == []
    assert kernel.settings.get("app.name") == "hostgate"  # memory follows the database
    assert (await client.get("/api/v1/settings", headers=admin.headers)).status_code == 401
    assert await kernel.limits.retry_after("login-ip", "192.0.2.7", LOGIN_PER_IP) == 0
    await kernel.logins.check_not_locked(None, CLIENT, username="nobody")  # not locked now
    assert sorted(p.name for p in recordings.iterdir()) == [".hostgate-recordings"]
    # the audit chain goes on from the restored head, not the forgotten one
    await kernel.audit.record("test.after_reset", target="x")
    assert (await kernel.audit.verify_chain()).ok


def wait_for_file(path: Path, process: GatewayProcess, timeout: float = 60) -> str:
    """The text of ``path`` once it exists (fails if the gateway exits first)."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.process is not None and process.process.poll() is None, process.log()
        assert time.monotonic() < deadline, f"no {path.name}: {process.log()[-2000:]}"
        time.sleep(0.05)
    return path.read_text()


def test_a_served_gateway_resets_on_sigusr1_only_when_its_fixture_asked(
    tmp_path: Path, template_db: Path
) -> None:
    snapshot = tmp_path / "first-state.db"
    data = tmp_path / "data"
    data.mkdir()
    (data / "hostgate.db").write_bytes(template_db.read_bytes())
    gateway = GatewayProcess(data, env={SNAPSHOT_ENV: str(snapshot)}).start()
    plain = GatewayProcess(tmp_path / "plain").start()
    try:
        copy_database(data / "hostgate.db", snapshot)
        gateway.setup_admin()
        body = {"username": "other", "password": ADMIN_PASSWORD, "displayName": "Other"}
        again = httpx.post(f"{gateway.url}/api/v1/auth/setup", json=body, timeout=60)
        assert again.status_code == 409, again.text  # set up: closed
        gateway.process.send_signal(signal.SIGUSR1)  # type: ignore[union-attr]
        assert wait_for_file(done_path(snapshot), gateway) == "1 ok\n"
        gateway.setup_admin()  # open again: no users
        assert "SIGUSR1 resets this gateway" in gateway.log()

        # without the variable the signal keeps its default action: the process ends
        assert "SIGUSR1" not in plain.log()
        plain.process.send_signal(signal.SIGUSR1)  # type: ignore[union-attr]
        assert plain.process.wait(30) == -signal.SIGUSR1  # type: ignore[union-attr]
    finally:
        for process in (gateway, plain):
            try:
                process.stop()
            except subprocess.TimeoutExpired:  # pragma: no cover - stop() kills after 30 s
                process.kill()
    assert not gateway.unhandled(), gateway.unhandled()
