"""HOSTGATE_RECORDINGS_DIR on one node: recordings are written, read by Range, repaired
after a crash, finalized when abandoned and purged by retention in the configured
directory, never in ``<data dir>/recordings``."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.config import Config, ConfigError, load_config
from hostgate.db.models.sessions import RemoteSession
from hostgate.kernel import StartupError

from tests.services.sessions.test_recordings_api import record_session
from tests.services.sessions.test_retention import recorded_rows, states, unfinished_recording


@pytest.fixture
def config(config: Config, tmp_path: Path) -> Config:
    return config.with_overrides(recordings_dir=tmp_path / "shared" / "recordings")


def test_the_recordings_directory_from_the_environment_or_the_file(tmp_path):
    assert load_config(env={}).resolved_recordings_dir == Path("data") / "recordings"
    env = {"HOSTGATE_RECORDINGS_DIR": "/srv/recordings", "HOSTGATE_DATA_DIR": "/var/lib/hg"}
    assert load_config(env=env).resolved_recordings_dir == Path("/srv/recordings")
    toml = tmp_path / "hostgate.toml"
    toml.write_text('recordings_dir = "/mnt/nfs/recordings"\n')
    assert load_config(env={}, config_file=toml).recordings_dir == Path("/mnt/nfs/recordings")
    assert load_config(env=env, config_file=toml).recordings_dir == Path("/srv/recordings")
    with pytest.raises(ConfigError, match="HOSTGATE_RECORDINGS_DIR must be an absolute path"):
        load_config(env={"HOSTGATE_RECORDINGS_DIR": "recordings"})


async def test_a_recordings_directory_that_cannot_be_made_refuses_start_up(config, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    app = create_app(config.with_overrides(recordings_dir=blocker / "recordings"))
    with pytest.raises(StartupError) as info:
        await kernel_of(app).startup()
    await kernel_of(app).db.close()
    message = str(info.value)
    assert f"The recordings directory {blocker / 'recordings'} (HOSTGATE_RECORDINGS_DIR)" in message
    assert "cannot be used" in message and "writable" in message


async def test_a_terminal_recording_lives_in_the_configured_directory(
    client, kernel, shell_connection, config
):
    user, connection = shell_connection
    session_id = await record_session(client, kernel, user, connection)
    files = [p for p in config.recordings_dir.iterdir() if not p.name.startswith(".")]
    assert len(files) == 1 and b"recorded-42" not in files[0].read_bytes()
    assert not (config.data_dir / "recordings").exists()
    url = f"/api/v1/sessions/{session_id}/recording"
    whole = await (await client.get(url, headers=user.headers)).get_data()
    assert b"recorded-42" in whole
    ranged = await client.get(url, headers={**user.headers, "Range": "bytes=5-24"})
    assert ranged.status_code == 206
    assert await ranged.get_data() == whole[5:25]


async def test_crash_repair_and_the_abandoned_finalizer_use_the_configured_directory(
    config, plugins, make_user, client, kernel
):
    alice = await make_user("alice")
    session_id, url = await unfinished_recording(client, kernel, alice, b"A" * 70_000)
    async with kernel.db.session() as db:
        path = kernel.recordings.path_of(await db.get(RemoteSession, session_id))
    assert path is not None and path.parent == config.recordings_dir
    second = create_app(config, plugins=plugins)  # the instance after a crash
    async with second.test_app() as running:
        again = running.test_client()
        [entry] = (await (await again.get("/api/v1/sessions", headers=alice.headers)).get_json())[
            "sessions"
        ]
        assert entry["endedAt"] is not None and entry["fileSize"] == 70_000
        assert await (await again.get(url, headers=alice.headers)).get_data() == b"A" * 70_000
    # an upload the browser abandons is closed readable by this node's finalizer
    other, other_url = await unfinished_recording(client, kernel, alice, b"B" * 1000)
    for upload in kernel.recordings._uploads.values():
        upload.last_activity -= 3600  # idle for an hour
    await kernel.recordings._close_abandoned_uploads()
    async with kernel.db.session() as db:
        row = await db.get(RemoteSession, other)
    assert row.ended_at is not None and row.recording_state == "complete"
    assert await (await client.get(other_url, headers=alice.headers)).get_data() == b"B" * 1000


async def test_retention_deletes_from_the_configured_directory(
    client, kernel, make_user, admin, config
):
    alice = await make_user("alice")
    ids = await recorded_rows(client, kernel, alice, 3)
    assert len([p for p in config.recordings_dir.iterdir() if p.is_file()]) == 3
    await client.put(
        "/api/v1/settings", json={"recordings.retention_days": 2}, headers=admin.headers
    )
    assert await kernel.recordings.apply_retention() == 2
    assert await states(kernel, ids) == [False, False, True]
    [left] = [p for p in config.recordings_dir.iterdir() if p.is_file()]
    storage = await (await client.get("/api/v1/sessions/storage", headers=admin.headers)).get_json()
    assert storage["bytes"] == left.stat().st_size > 100_000  # the encrypted file
