"""Recordings in an S3-compatible bucket (radosgw, else moto, on loopback; one per module):
writing as multipart uploads, ranged reads, retention, storage count, backups, repair,
an upload the bucket refuses for a while or for good."""

from __future__ import annotations

import asyncio
import logging
import time
from datetime import timedelta
from typing import Any

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.closereasons import CloseReason
from hostgate.config import Config, ConfigError, load_config
from hostgate.db.models.sessions import RemoteSession
from hostgate.kernel import StartupError
from hostgate.services.backup import KdfCost
from hostgate.services.sessions import recording_store
from hostgate.services.sessions.recording_store import PART_SIZE
from hostgate.testreset import reset
from hostgate.timefmt import utcnow

from tests.kernel.test_testreset import copy_database
from tests.services.sessions.test_retention import rdp_connection_id, unfinished_recording
from testsupport.s3server import S3Server

API = "/api/v1"
MIB = 1024 * 1024
PASSWORD = "a long backup password"
CHEAP = KdfCost(time_cost=1, memory_kib=1024, lanes=1)


@pytest.fixture
def config(hostgate_config: Config, s3_server: S3Server) -> Config:
    return hostgate_config.with_overrides(**s3_server.config())


def objects(s3: S3Server, config: Config) -> dict[str, int]:
    """The bucket's objects under the test's prefix, by name."""
    prefix = config.recordings_url.removeprefix(f"s3://{s3.bucket}/") + "/"
    client = s3.client()
    try:
        listed = client.list_objects_v2(Bucket=s3.bucket, Prefix=prefix).get("Contents", [])
    finally:
        client.close()
    return {item["Key"][len(prefix) :]: item["Size"] for item in listed}


def pattern(size: int) -> bytes:
    """Bytes where every offset is told apart (a wrong range cannot pass)."""
    block = bytes(range(251)) * (MIB // 251 + 1)
    return (block * (size // len(block) + 1))[:size]


async def recorded(client: Any, kernel: Any, user: Any, chunks: list[bytes]) -> str:
    """An RDP session whose recording got ``chunks`` and was finalized; its id."""
    connection_id = await rdp_connection_id(kernel, user)
    created = await client.post(
        f"{API}/sessions/rdp-session", json={"connectionId": connection_id}, headers=user.headers
    )
    session_id = str((await created.get_json())["sessionId"])
    url = f"{API}/sessions/{session_id}/recording"
    for chunk in chunks:
        answer = await client.post(f"{url}/chunk", data=chunk, headers=user.headers)
        assert answer.status_code == 200, await answer.get_json()
    assert (await client.post(f"{url}/finalize", headers=user.headers)).status_code == 200
    return session_id


async def test_a_recording_is_written_to_the_bucket_and_read_in_ranges(
    client, kernel, make_user, config, s3_server
):
    alice = await make_user("alice")
    data = pattern(12 * MIB + 12345)  # two full parts and a short last one
    session_id = await recorded(client, kernel, alice, [data[: 7 * MIB], data[7 * MIB :]])
    url = f"{API}/sessions/{session_id}/recording"
    stored = objects(s3_server, config)
    assert list(stored) == [f"{session_id}.webm"]
    assert stored[f"{session_id}.webm"] > len(data)  # encrypted: slots and tags
    assert not config.resolved_recordings_dir.exists() or not any(
        config.resolved_recordings_dir.iterdir()
    )
    whole = await client.get(url, headers=alice.headers)
    assert whole.status_code == 200
    assert await whole.get_data() == data
    start, stop = 5 * MIB - 10, 9 * MIB + 77  # across slots and parts
    part = await client.get(url, headers={**alice.headers, "Range": f"bytes={start}-{stop}"})
    assert part.status_code == 206
    assert part.headers["Content-Range"] == f"bytes {start}-{stop}/{len(data)}"
    assert await part.get_data() == data[start : stop + 1]
    listed = await (await client.get(f"{API}/sessions", headers=alice.headers)).get_json()
    [entry] = listed["sessions"]
    assert entry["hasRecording"] is True and entry["fileSize"] == len(data)


async def test_storage_counts_the_objects_and_retention_deletes_them(
    client, kernel, make_user, admin, config, s3_server
):
    alice = await make_user("alice")
    ids = [await recorded(client, kernel, alice, [bytes([i]) * 100_000]) for i in range(3)]
    async with kernel.db.session() as db:
        for age, session_id in enumerate(reversed(ids)):
            row = await db.get(RemoteSession, session_id)
            row.started_at = utcnow() - timedelta(days=age + 1)
            db.add(row)
        await db.commit()
    storage = await client.get(f"{API}/sessions/storage", headers=admin.headers)
    assert (await storage.get_json())["bytes"] == sum(objects(s3_server, config).values())
    await client.put(
        f"{API}/settings", json={"recordings.retention_days": 2}, headers=admin.headers
    )
    assert await kernel.recordings.apply_retention() == 2
    assert list(objects(s3_server, config)) == [f"{ids[2]}.webm"]
    storage = await client.get(f"{API}/sessions/storage", headers=admin.headers)
    assert (await storage.get_json())["bytes"] == sum(objects(s3_server, config).values())
    gone = await client.get(f"{API}/sessions/{ids[0]}/recording", headers=alice.headers)
    assert gone.status_code == 404


async def test_a_backup_carries_the_bucket_recordings_when_asked(
    client, kernel, make_user, config, s3_server
):
    kernel.backups.kdf_cost = CHEAP
    alice = await make_user("alice")
    await recorded(client, kernel, alice, [b"x" * 200_000])
    await recorded(client, kernel, alice, [b"y" * 300_000])
    sizes = objects(s3_server, config)
    assert await kernel.backups.size() == {
        "dbSize": (await kernel.backups.size())["dbSize"],
        "recordingsSize": sum(sizes.values()),
        "recordingCount": 2,
    }
    with_recordings = b"".join(
        [p async for p in kernel.backups.export(PASSWORD, include_recordings=True)]
    )
    without = b"".join([p async for p in kernel.backups.export(PASSWORD, include_recordings=False)])
    # the archive is sealed: the recordings show as the size they add
    assert len(with_recordings) - len(without) >= sum(sizes.values())


async def wait_for_parts(s3: S3Server, config: Config, name: str, count: int) -> None:
    """Until the unfinished upload of ``name`` has ``count`` parts (a hang guard, not a timer)."""
    prefix = config.recordings_url.removeprefix(f"s3://{s3.bucket}/") + "/"
    client = s3.client()
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            uploads = client.list_multipart_uploads(Bucket=s3.bucket, Prefix=prefix + name)
            for upload in uploads.get("Uploads", []):
                parts = client.list_parts(
                    Bucket=s3.bucket, Key=upload["Key"], UploadId=upload["UploadId"]
                ).get("Parts", [])
                if len(parts) >= count:
                    return
            await asyncio.sleep(0.05)
    finally:
        client.close()
    raise AssertionError(f"no upload of {name} reached {count} part(s)")


async def test_a_crash_keeps_the_uploaded_parts_readable(
    config, plugins, make_user, client, kernel, s3_server
):
    """A node that dies mid-recording leaves its unfinished multipart upload; the next
    start completes it: the recording reads back up to the last uploaded part."""
    alice = await make_user("alice")
    data = pattern(6 * MIB)
    session_id, url = await unfinished_recording(client, kernel, alice, data)
    name = f"{session_id}.webm"
    await wait_for_parts(s3_server, config, name, 1)
    # not complete: the object is still the header the session's start stored
    assert objects(s3_server, config)[name] == 16
    second = create_app(config, plugins=plugins)  # the instance after a crash
    async with second.test_app() as running:
        again = running.test_client()
        [entry] = (await (await again.get(f"{API}/sessions", headers=alice.headers)).get_json())[
            "sessions"
        ]
        assert entry["endedAt"] is not None and entry["hasRecording"] is True
        got = await (await again.get(url, headers=alice.headers)).get_data()
        # whole slots up to the first part (at least PART_SIZE of sealed slots) survive
        assert PART_SIZE * 0.99 < len(got) < len(data)
        assert got == data[: len(got)]
        assert entry["fileSize"] == len(got)
    assert name in objects(s3_server, config)


async def test_an_upload_resumes_from_the_bucket(config, make_user, client, kernel, s3_server):
    """An upload let go (a node shutting down, or handing it over) is completed in the
    bucket; the next chunk copies it into a new upload server-side and appends."""
    alice = await make_user("alice")
    first = pattern(6 * MIB)
    session_id, url = await unfinished_recording(client, kernel, alice, first)
    await kernel.live.close_all("server shutting down", CloseReason.SHUTTING_DOWN)
    assert not kernel.recordings.uploading(session_id)
    name = f"{session_id}.webm"
    assert objects(s3_server, config)[name] > len(first)
    more = b"tail" * 1000
    answer = await client.post(f"{url}/chunk", data=more, headers=alice.headers)
    assert answer.status_code == 200, await answer.get_json()
    assert (await client.post(f"{url}/finalize", headers=alice.headers)).status_code == 200
    got = await (await client.get(url, headers=alice.headers)).get_data()
    assert got == first + more


async def test_a_restore_puts_the_archive_recordings_in_the_bucket(
    client, kernel, make_user, config, s3_server, tmp_path
):
    """The archive's recordings are uploaded after the database commit and the bucket's
    other recordings (made after the export) are deleted: rows and objects agree."""
    kernel.backups.kdf_cost = CHEAP
    alice = await make_user("alice")
    kept = await recorded(client, kernel, alice, [pattern(300_000)])
    archive = tmp_path / "backup.geb"
    with archive.open("wb") as handle:
        async for piece in kernel.backups.export(PASSWORD, include_recordings=True):
            handle.write(piece)
    later = await recorded(client, kernel, alice, [b"later" * 1000])
    assert set(objects(s3_server, config)) == {f"{kept}.webm", f"{later}.webm"}
    async with kernel.backups.import_slot() as slot:
        result = await kernel.backups.restore(archive, PASSWORD, slot)
    assert result.recordings_restored == 1
    assert set(objects(s3_server, config)) == {f"{kept}.webm"}
    async with kernel.db.session() as db:
        row = await db.get(RemoteSession, kept)
        assert await db.get(RemoteSession, later) is None
    reader = await kernel.recordings.open_reader(row)
    try:
        assert await asyncio.to_thread(lambda: b"".join(reader.chunks())) == pattern(300_000)
    finally:
        reader.close()


def test_the_bucket_comes_from_the_environment_or_the_config_file(tmp_path):
    env = {
        "HOSTGATE_RECORDINGS_URL": "s3://records/gateway-1/",
        "HOSTGATE_S3_ENDPOINT_URL": "http://rgw.internal:7480",
        "HOSTGATE_S3_SECRET_ACCESS_KEY": "very-secret-value",
        "HOSTGATE_S3_ACCESS_KEY_ID": "key-id",
    }
    loaded = load_config(env=env)
    assert loaded.recordings_url == "s3://records/gateway-1"
    assert loaded.s3_endpoint_url == "http://rgw.internal:7480"
    assert "very-secret-value" not in repr(loaded)
    toml = tmp_path / "hostgate.toml"
    toml.write_text('recordings_url = "s3://from-file"\ns3_region = "eu-west-3"\n')
    from_file = load_config(env={}, config_file=toml)
    assert (from_file.recordings_url, from_file.s3_region) == ("s3://from-file", "eu-west-3")
    for wrong in ("records", "s3://", "https://records/x", "s3://user:pw@records"):
        with pytest.raises(ConfigError, match="HOSTGATE_RECORDINGS_URL must be s3://") as info:
            load_config(env={"HOSTGATE_RECORDINGS_URL": wrong})
        assert "pw" not in str(info.value)


async def test_a_bucket_that_does_not_exist_refuses_start_up(hostgate_config, s3_server):
    settings = {**s3_server.config(), "recordings_url": "s3://no-such-bucket-here/x"}
    app = create_app(hostgate_config.with_overrides(**settings))
    with pytest.raises(StartupError) as info:
        await kernel_of(app).startup()
    await kernel_of(app).shutdown()
    message = str(info.value)
    assert "The recordings bucket s3://no-such-bucket-here/x/ (HOSTGATE_RECORDINGS_URL)" in message
    assert "cannot be used" in message
    assert s3_server.endpoint not in message and "hostgate-test-secret" not in message


async def test_the_local_store_takes_a_file_as_a_recording_readable_by_its_owner_only(tmp_path):
    from hostgate.services.sessions.recording_store import LocalStore

    store = LocalStore(tmp_path / "recordings")
    await store.start()
    source = tmp_path / "restored.cast"
    source.write_bytes(b"x" * 70_000)
    await store.upload_file("abc.cast", source)
    assert store.exists("abc.cast")
    assert (await store.sizes())["abc.cast"] == 70_000
    assert (store.path("abc.cast").stat().st_mode & 0o777) == 0o600


async def retried(caplog: pytest.LogCaptureFixture) -> None:
    """Until an upload request was tried again (a hang guard, not a timer)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if any("trying again" in r.getMessage() for r in caplog.records):
            return
        await asyncio.sleep(0.05)
    raise AssertionError("no upload request was tried again")


async def recording_state(kernel: Any, session_id: str) -> tuple[str | None, str | None]:
    async with kernel.db.session() as db:
        row = await db.get(RemoteSession, session_id)
        return row.recording_state, row.recording_note


async def test_a_part_refused_for_a_while_is_uploaded_again(
    client, kernel, make_user, config, s3_server, caplog, monkeypatch
):
    """The bucket refuses every request (the S3 user suspended) while a part goes up;
    once it answers again the next try lands it and the recording is whole."""
    monkeypatch.setattr(recording_store, "UPLOAD_BACKOFF", 1.0)  # 31 s of tries in all
    caplog.set_level(logging.INFO, logger="hostgate.recordings")
    alice = await make_user("alice")
    first = pattern(MIB)
    session_id, url = await unfinished_recording(client, kernel, alice, first)
    s3_server.suspend_user()
    try:
        more = pattern(6 * MIB)[::-1]  # fills a part: it is queued and refused
        answer = await client.post(f"{url}/chunk", data=more, headers=alice.headers)
        assert answer.status_code == 200
        await retried(caplog)
    finally:
        s3_server.suspend_user(suspended=False)
    assert (await client.post(f"{url}/finalize", headers=alice.headers)).status_code == 200
    assert await (await client.get(url, headers=alice.headers)).get_data() == first + more
    assert (await recording_state(kernel, session_id))[0] == "complete"


async def test_a_bucket_that_keeps_failing_stops_the_recording_honestly(
    client, kernel, make_user, admin, config, s3_server, caplog, monkeypatch
):
    """Past its tries a refused part ends the recording: the row says ``stopped``
    (``storage_failed``, not complete), an audit entry says why, later chunks are
    refused, and what reached the bucket before reads back whole."""
    monkeypatch.setattr(recording_store, "UPLOAD_ATTEMPTS", 2)
    monkeypatch.setattr(recording_store, "UPLOAD_BACKOFF", 0.05)
    alice = await make_user("alice")
    data = pattern(12 * MIB)
    session_id, url = await unfinished_recording(client, kernel, alice, data[: 6 * MIB])
    await wait_for_parts(s3_server, config, f"{session_id}.webm", 1)
    s3_server.suspend_user()
    try:
        answer = await client.post(f"{url}/chunk", data=data[6 * MIB :], headers=alice.headers)
        assert answer.status_code == 200  # queued: the upload fails behind it
        deadline = time.monotonic() + 60
        while await recording_state(kernel, session_id) != ("stopped", "storage_failed"):
            assert time.monotonic() < deadline, "the recording was not marked stopped"
            await asyncio.sleep(0.05)
    finally:
        s3_server.suspend_user(suspended=False)
    refused = await client.post(f"{url}/chunk", data=b"later", headers=alice.headers)
    assert refused.status_code == 409
    assert (await client.post(f"{url}/finalize", headers=alice.headers)).status_code == 200
    got = await (await client.get(url, headers=alice.headers)).get_data()
    assert PART_SIZE * 0.99 < len(got) < 6 * MIB and got == data[: len(got)]
    [entry] = (await (await client.get(f"{API}/sessions", headers=alice.headers)).get_json())[
        "sessions"
    ]
    assert entry["recordingState"] == "stopped" and entry["recordingComplete"] is False
    assert entry["fileSize"] == len(got)
    audit = await client.get(
        f"{API}/audit?eventType=recordings.storage_failed", headers=admin.headers
    )
    [event] = (await audit.get_json())["entries"]
    assert event["details"]["sessionId"] == session_id
    assert "UserSuspended" in event["details"]["reason"]
    assert "hostgate-test-secret" not in str(event) and s3_server.endpoint not in str(event)
    assert not any("hostgate-test-secret" in r.getMessage() for r in caplog.records)


async def test_a_test_gateway_reset_empties_the_bucket(
    client, kernel, make_user, config, s3_server, tmp_path
):
    """``hostgate.testreset`` (the browser tests' SIGUSR1): the prefix's objects and
    unfinished uploads go with the rows that named them."""
    snapshot = tmp_path / "first-state.db"
    copy_database(config.data_dir / "hostgate.db", snapshot)
    alice = await make_user("alice")
    await recorded(client, kernel, alice, [b"done" * 1000])
    session_id, _ = await unfinished_recording(client, kernel, alice, pattern(6 * MIB))
    await wait_for_parts(s3_server, config, f"{session_id}.webm", 1)
    assert len(objects(s3_server, config)) == 2
    await reset(kernel, snapshot)
    assert objects(s3_server, config) == {}
    prefix = config.recordings_url.removeprefix(f"s3://{s3_server.bucket}/") + "/"
    s3 = s3_server.client()
    try:
        assert (
            s3.list_multipart_uploads(Bucket=s3_server.bucket, Prefix=prefix).get("Uploads", [])
            == []
        )
    finally:
        s3.close()
