"""HOSTGATE_REDIS_URL: configuration, and the set-ups start-up refuses with a clear message."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.cluster import shared
from hostgate.cluster.bus import LocalBus, RedisBus
from hostgate.cluster.shared import filesystem_type, redacted, refusal
from hostgate.config import ConfigError, load_config
from hostgate.kernel import StartupError
from hostgate.security.ratelimit import MemoryRateLimiter, RedisRateLimiter
from hostgate.security.tickets import MemoryTicketStore, RedisTicketStore
from sqlalchemy import text

from testsupport.peers import free_port


def mountinfo(tmp_path: Path, point: Path, kind: str) -> Path:
    """A mount table where ``point`` is a filesystem of type ``kind`` (spaces escaped)."""
    escaped = str(point).replace(" ", "\\040")
    text = (
        "22 27 0:21 / / rw,relatime - ext4 /dev/vda rw\n"
        f"90 22 0:50 / {escaped} rw,relatime shared:1 - {kind} server:/export rw,vers=4.2\n"
    )
    path = tmp_path / "mountinfo"
    path.write_text(text)
    return path


def test_redis_url_from_the_environment_or_the_file(tmp_path):
    assert load_config(env={}).redis_url == ""
    env = {"HOSTGATE_REDIS_URL": "redis://10.0.0.5:6379/2"}
    assert load_config(env=env).redis_url == "redis://10.0.0.5:6379/2"
    toml = tmp_path / "hostgate.toml"
    toml.write_text('redis_url = "rediss://:pw@redis.example:6380/0"\n')
    assert load_config(env={}, config_file=toml).redis_url == "rediss://:pw@redis.example:6380/0"
    assert load_config(env=env, config_file=toml).redis_url == "redis://10.0.0.5:6379/2"
    assert load_config(env={"HOSTGATE_REDIS_URL": "unix:///run/redis.sock"}).redis_url


def test_a_redis_url_of_another_scheme_is_refused_without_its_password():
    with pytest.raises(ConfigError) as info:
        load_config(env={"HOSTGATE_REDIS_URL": "http://:s3cret@redis.example:6379"})
    assert "HOSTGATE_REDIS_URL must be a redis://, rediss:// or unix:// URL" in str(info.value)
    assert "s3cret" not in str(info.value)


def test_the_node_timeout_from_the_environment_or_the_file(tmp_path):
    assert load_config(env={}).node_timeout_seconds == 30.0
    env = {"HOSTGATE_NODE_TIMEOUT_SECONDS": "6"}
    assert load_config(env=env).node_timeout_seconds == 6.0
    toml = tmp_path / "hostgate.toml"
    toml.write_text("node_timeout_seconds = 12.5\n")
    assert load_config(env={}, config_file=toml).node_timeout_seconds == 12.5
    for wrong in ("0", "soon", "7200"):
        with pytest.raises(ConfigError) as info:
            load_config(env={"HOSTGATE_NODE_TIMEOUT_SECONDS": wrong})
        assert "HOSTGATE_NODE_TIMEOUT_SECONDS must be" in str(info.value)


def test_passwords_are_redacted_in_messages():
    assert redacted("redis://:s3cret@h:6379/0") == "redis://:***@h:6379/0"
    assert redacted("redis://user:s3cret@[::1]:6379") == "redis://user:***@[::1]:6379"
    assert redacted("redis://h:6379/0") == "redis://h:6379/0"


def test_filesystem_type_of_the_longest_mount_point(tmp_path):
    share = tmp_path / "a share"
    share.mkdir()
    table = mountinfo(tmp_path, share, "nfs4")
    assert filesystem_type(share / "data", table) == "nfs4"
    assert filesystem_type(tmp_path / "elsewhere", table) == "ext4"
    assert filesystem_type(tmp_path, tmp_path / "no-such-table") is None
    # this machine's real table knows the test's directory
    assert filesystem_type(tmp_path) not in (None, "nfs4")


def test_sqlite_with_redis_is_refused_on_a_network_filesystem(tmp_path, config):
    with_redis = config.with_overrides(redis_url="redis://127.0.0.1:1/0")
    remote = mountinfo(tmp_path, config.data_dir, "nfs4")
    message = refusal(with_redis, remote)
    assert message is not None
    assert "network filesystem (nfs4)" in message and "PostgreSQL" in message
    assert str(config.data_dir) in message
    # a local disk is fine (the workers of one machine), so is no Redis or PostgreSQL
    assert refusal(with_redis, mountinfo(tmp_path, config.data_dir, "ext4")) is None
    assert refusal(with_redis) is None
    assert refusal(config, remote) is None
    postgres = with_redis.with_overrides(database_url="postgresql+asyncpg://pg@db/hostgate")
    assert refusal(postgres, remote) is None
    memory = with_redis.with_overrides(database_url="sqlite+aiosqlite:///:memory:")
    assert "in-memory SQLite" in (refusal(memory) or "")


async def test_start_up_refuses_sqlite_on_a_network_filesystem(
    tmp_path, config, redis_server, monkeypatch
):
    monkeypatch.setattr(shared, "MOUNTINFO", mountinfo(tmp_path, config.data_dir, "cifs"))
    app = create_app(config.with_overrides(redis_url=redis_server.url))
    # the test app reports the kernel's StartupError as its lifespan's failure
    with pytest.raises(Exception, match=r"network filesystem \(cifs\)"):
        async with app.test_app():
            pass


async def test_start_up_refuses_an_unreachable_redis_and_hides_its_password(config):
    url = f"redis://:s3cret@127.0.0.1:{free_port()}/0"
    app = create_app(config.with_overrides(redis_url=url))
    with pytest.raises(StartupError) as info:
        await kernel_of(app).startup()
    message = str(info.value)
    assert message.startswith(f"Cannot reach Redis at {redacted(url)} (HOSTGATE_REDIS_URL)")
    assert "s3cret" not in message


async def test_the_kernel_shares_through_redis_only_when_configured(config, redis_server):
    single = kernel_of(create_app(config))
    assert single.cluster.redis is None
    assert isinstance(single.tickets, MemoryTicketStore)
    assert isinstance(single.limits, MemoryRateLimiter)
    assert isinstance(single.cluster.bus, LocalBus)
    app = create_app(config.with_overrides(redis_url=redis_server.url))
    async with app.test_app():
        node = kernel_of(app)
        assert isinstance(node.tickets, RedisTicketStore)
        assert isinstance(node.limits, RedisRateLimiter)
        assert isinstance(node.cluster.bus, RedisBus)
        assert node.cluster.bus.ready.is_set()


async def test_nodes_sharing_a_redis_must_share_the_database(config, tmp_path, redis_server):
    """Two hosts, each with its own SQLite file, one Redis: the second node does not start."""
    first = config.with_overrides(redis_url=redis_server.url)
    app = create_app(first)
    async with app.test_app():
        database_id = await kernel_of(app)._database_id()
        # a second node on the same database joins
        same = create_app(first)
        async with same.test_app():
            assert await kernel_of(same)._database_id() == database_id
        elsewhere = tmp_path / "other-host"
        elsewhere.mkdir()
        shutil.copy(config.data_dir / "hostgate.db", elsewhere / "hostgate.db")
        other = kernel_of(create_app(first.with_overrides(data_dir=elsewhere)))
        async with other.db.session() as session:
            await session.execute(text("DELETE FROM system_values WHERE name = 'database_id'"))
            await session.commit()
        with pytest.raises(StartupError) as info:
            await other.startup()
        await other.cluster.stop()
        await other.db.close()
    message = str(info.value)
    assert f"use another database (id {database_id}; this node's is" in message
    assert "PostgreSQL for nodes on several hosts" in message
    assert "hostgate:database" in message


async def test_a_node_without_the_shared_recordings_directory_does_not_start(
    config, tmp_path, redis_server
):
    """One database, one Redis, but the second node's recordings are a local directory."""
    first = config.with_overrides(redis_url=redis_server.url)
    app = create_app(first)
    async with app.test_app():
        recordings = config.data_dir / "recordings"
        marker = shared.read_marker(recordings)
        database_id = await kernel_of(app)._database_id()
        assert marker is not None and marker["databaseId"] == database_id
        # a second node on the same database and the same recordings directory joins
        async with create_app(first).test_app():
            pass
        elsewhere = tmp_path / "other-node"
        elsewhere.mkdir()
        second = first.with_overrides(data_dir=elsewhere, database_url=first.resolved_database_url)
        other = kernel_of(create_app(second))
        with pytest.raises(StartupError) as info:
            await other.startup()
        await other.cluster.stop()
        await other.db.close()
        message = str(info.value)
        assert f"The recordings directory {elsewhere / 'recordings'} is not the one" in message
        assert "it has no marker file" in message
        assert f"the nodes of this database wrote token {marker['token']}" in message
        assert not (elsewhere / "recordings" / shared.RECORDINGS_MARKER).exists()
        # another gateway's marker there is refused too
        shared.write_marker(elsewhere / "recordings", "another-database", "another-token")
        other = kernel_of(create_app(second))
        with pytest.raises(StartupError, match="its marker names database another-database"):
            await other.startup()
        await other.cluster.stop()
        await other.db.close()
        # the fix the message gives: the marker of the shared directory
        command = message.split("write it again: ")[1].split(". See")[0]
        content = command.split("echo '")[1].split("' >")[0]
        (elsewhere / "recordings" / shared.RECORDINGS_MARKER).write_text(content)
        async with create_app(second).test_app():
            pass


async def test_sqlite_with_redis_on_a_second_machine_does_not_start(config, redis_server):
    """A copy of the SQLite file on another host has the same database id: refused too."""
    client = shared.connect(redis_server.url)
    try:
        await shared.claim_sqlite_host(client, redis_server.url, "machine-a")
        await shared.claim_sqlite_host(client, redis_server.url, "machine-a")
        with pytest.raises(shared.ClusterSetupError, match="run on another machine"):
            await shared.claim_sqlite_host(client, redis_server.url, "machine-b")
        # this machine's node, after a node of machine-a claimed the Redis
        app = create_app(config.with_overrides(redis_url=redis_server.url))
        with pytest.raises(StartupError) as info:
            await kernel_of(app).startup()
        await kernel_of(app).cluster.stop()
        await kernel_of(app).db.close()
    finally:
        await client.aclose()
    message = str(info.value)
    assert "run on another machine (machine id machine-a" in message
    assert "--workers N" in message and "need PostgreSQL" in message
    assert shared.SQLITE_HOST_KEY in message


def test_the_machine_id_comes_from_systemd_or_the_host_name(tmp_path):
    path = tmp_path / "machine-id"
    path.write_text("0123456789abcdef\n")
    assert shared.machine_id(path) == "0123456789abcdef"
    assert shared.machine_id(tmp_path / "absent") != ""


def test_the_guide_shows_the_haproxy_configuration_the_tests_run():
    docs = Path(__file__).resolve().parents[2] / "docs"
    config = (docs / "haproxy.cfg").read_text()
    assert f"```\n{config}```" in (docs / "cluster.md").read_text()


async def test_a_restored_database_takes_over_the_shared_recordings_directory(config, redis_server):
    """After a restore the database may carry another token: the restoring node re-marks."""
    node = config.with_overrides(redis_url=redis_server.url)
    app = create_app(node)
    async with app.test_app():
        kernel = kernel_of(app)
        async with kernel.db.session() as session:
            await session.execute(
                text("UPDATE system_values SET value = 'restored' WHERE name = 'recordings_marker'")
            )
            await session.commit()
        await kernel.reload_state()
        marker = shared.read_marker(config.resolved_recordings_dir)
        assert marker is not None and marker["token"] == "restored"
        async with create_app(node).test_app():  # another node still joins
            pass


async def test_nodes_with_their_own_data_dirs_share_hostgate_recordings_dir(
    config, tmp_path, redis_server
):
    """HOSTGATE_RECORDINGS_DIR apart from the data dirs: both nodes start and mark it once;
    a node that points it at another directory is refused with that variable named."""
    recordings = tmp_path / "nfs" / "recordings"
    first = config.with_overrides(redis_url=redis_server.url, recordings_dir=recordings)
    app = create_app(first)
    async with app.test_app():
        marker = shared.read_marker(recordings)
        assert marker is not None
        assert not (config.data_dir / "recordings").exists()
        elsewhere = tmp_path / "node-b-data"
        elsewhere.mkdir()
        second = first.with_overrides(data_dir=elsewhere, database_url=first.resolved_database_url)
        async with create_app(second).test_app():
            assert shared.read_marker(recordings) == marker
        assert not (elsewhere / "recordings").exists()
        local = second.with_overrides(recordings_dir=tmp_path / "local" / "recordings")
        other = kernel_of(create_app(local))
        with pytest.raises(StartupError) as info:
            await other.startup()
        await other.cluster.stop()
        await other.db.close()
    message = str(info.value)
    assert f"The recordings directory {tmp_path / 'local' / 'recordings'} is not the one" in message
    assert "HOSTGATE_RECORDINGS_DIR" in message and "mounted on every node" in message
