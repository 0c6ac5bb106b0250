"""Retention by age and total size, the free-disk watermark, and repair after a crash."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hostgate.app import create_app
from hostgate.db.models.sessions import RemoteSession
from hostgate.timefmt import utcnow

from tests.services.sessions.helpers import Screen, socket_path, ticket_for


async def recorded_rows(client: Any, kernel: Any, user: Any, count: int) -> list[str]:
    """Sessions with real (encrypted) RDP recordings of 100 KB each, oldest first."""
    connection_id = await rdp_connection_id(kernel, user)
    ids = []
    for index in range(count):
        response = await client.post(
            "/api/v1/sessions/rdp-session",
            json={"connectionId": connection_id},
            headers=user.headers,
        )
        session_id = (await response.get_json())["sessionId"]
        url = f"/api/v1/sessions/{session_id}/recording"
        await client.post(f"{url}/chunk", data=bytes([index]) * 100_000, headers=user.headers)
        await client.post(f"{url}/finalize", headers=user.headers)
        async with kernel.db.session() as db:
            row = await db.get(RemoteSession, session_id)
            row.started_at = utcnow() - timedelta(days=count - index)
            db.add(row)
            await db.commit()
        ids.append(session_id)
    return ids


async def rdp_connection_id(kernel: Any, user: Any) -> str:
    from hostgate.db.models.connections import Connection

    async with kernel.db.session() as db:
        connection = Connection(
            owner_id=user.id, name="desk", protocol="rdp", host="127.0.0.1", port=3389
        )
        db.add(connection)
        await db.commit()
        return connection.id


async def unfinished_recording(client: Any, kernel: Any, user: Any, data: bytes) -> tuple[str, str]:
    """An RDP session whose recording received ``data`` and was never finalized:
    ``(session id, recording URL)``."""
    rdp = await rdp_connection_id(kernel, user)
    created = await client.post(
        "/api/v1/sessions/rdp-session", json={"connectionId": rdp}, headers=user.headers
    )
    session_id = (await created.get_json())["sessionId"]
    url = f"/api/v1/sessions/{session_id}/recording"
    await client.post(f"{url}/chunk", data=data, headers=user.headers)
    return session_id, url


async def states(kernel: Any, ids: list[str]) -> list[bool]:
    async with kernel.db.session() as db:
        return [(await db.get(RemoteSession, i)).recording_file is not None for i in ids]


async def test_retention_by_age(client, kernel, make_user, admin):
    alice = await make_user("alice")
    ids = await recorded_rows(client, kernel, alice, 3)
    await client.put(
        "/api/v1/settings", json={"recordings.retention_days": 2}, headers=admin.headers
    )
    assert await kernel.recordings.apply_retention() == 2
    assert await states(kernel, ids) == [False, False, True]
    listed = await (await client.get("/api/v1/sessions", headers=alice.headers)).get_json()
    assert sorted(s["hasRecording"] for s in listed["sessions"]) == [False, False, True]
    gone = await client.get(f"/api/v1/sessions/{ids[0]}/recording", headers=alice.headers)
    assert gone.status_code == 404
    audit = await client.get(
        "/api/v1/audit?eventType=recordings.retention_purged", headers=admin.headers
    )
    [entry] = (await audit.get_json())["entries"]
    assert entry["details"]["deleted"] == 2


async def test_retention_by_total_size(client, kernel, make_user, admin):
    alice = await make_user("alice")
    ids = await recorded_rows(client, kernel, alice, 4)
    await client.put(
        "/api/v1/settings",
        json={"recordings.retention_days": 0, "recordings.retention_max_total_mb": 0.25},
        headers=admin.headers,
    )
    assert await kernel.recordings.apply_retention() == 2
    assert await states(kernel, ids) == [False, False, True, True]
    storage = await (await client.get("/api/v1/sessions/storage", headers=admin.headers)).get_json()
    assert storage["bytes"] <= 0.25 * 1024 * 1024
    assert await kernel.recordings.apply_retention() == 0


async def test_low_disk_stops_new_recordings_cleanly(client, kernel, admin, shell_connection):
    user, connection = shell_connection
    await client.put(
        "/api/v1/settings", json={"recordings.min_free_disk_mb": 999_999_999}, headers=admin.headers
    )
    path = socket_path("localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("echo still-works", "still-works\r\n")
        await screen.send("exit\r")
        await screen.until_closed()
    [entry] = (await (await client.get("/api/v1/sessions", headers=user.headers)).get_json())[
        "sessions"
    ]
    assert entry["hasRecording"] is False
    audit = await client.get("/api/v1/audit?eventType=recordings.disk_low", headers=admin.headers)
    [event] = (await audit.get_json())["entries"]
    assert event["details"]["minimumBytes"] > event["details"]["freeBytes"]
    rdp = await rdp_connection_id(kernel, user)
    created = await client.post(
        "/api/v1/sessions/rdp-session", json={"connectionId": rdp}, headers=user.headers
    )
    assert (await created.get_json())["shouldRecord"] is False
    # one event per low-disk episode, not one per session
    audit = await client.get("/api/v1/audit?eventType=recordings.disk_low", headers=admin.headers)
    assert len((await audit.get_json())["entries"]) == 1


async def test_restart_ends_open_sessions_and_keeps_flushed_recording(
    config, plugins, make_user, client, kernel
):
    alice = await make_user("alice")
    session_id, url = await unfinished_recording(client, kernel, alice, b"A" * 70_000)
    # a second app on the same data dir = the instance after a crash
    second = create_app(config, plugins=plugins)
    async with second.test_app() as running:
        again = running.test_client()
        listed = await (await again.get("/api/v1/sessions", headers=alice.headers)).get_json()
        [entry] = listed["sessions"]
        assert entry["endedAt"] is not None
        assert entry["hasRecording"] is True and entry["fileSize"] == 70_000
        data = await (await again.get(url, headers=alice.headers)).get_data()
        assert data == b"A" * 70_000


async def test_a_recording_damaged_by_the_crash_is_reported_as_damaged(
    config, plugins, make_user, client, kernel
):
    """A recording whose header the crash destroyed is listed as ``damaged`` (no recording,
    the reason in the row), not as a complete recording of 0 bytes; the file is kept."""
    alice = await make_user("alice")
    session_id, url = await unfinished_recording(client, kernel, alice, b"A" * 70_000)
    async with kernel.db.session() as db:
        path = kernel.recordings.path_of(await db.get(RemoteSession, session_id))
    with path.open("r+b") as handle:
        handle.write(b"\0" * 8)  # the header's magic is gone
    second = create_app(config, plugins=plugins)
    async with second.test_app() as running:
        again = running.test_client()
        listed = await (await again.get("/api/v1/sessions", headers=alice.headers)).get_json()
        [entry] = listed["sessions"]
        assert entry["endedAt"] is not None
        assert entry["recordingState"] == "damaged"
        assert entry["hasRecording"] is False and entry["fileSize"] == 0
        assert (await again.get(url, headers=alice.headers)).status_code == 404
        async with second.extensions["hostgate"].db.session() as db:
            row = await db.get(RemoteSession, session_id)
        assert row.recording_note.startswith("server restarted; recording damaged:")
        assert path.exists()


async def test_terminal_recording_is_readable_after_a_crash(
    config, plugins, client, kernel, shell_connection
):
    user, connection = shell_connection
    path = socket_path("localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("echo flushed-$((3*3))", "flushed-9\r\n")
        await kernel.terminal_sessions.tick()  # the once-a-second flush
        second = create_app(config, plugins=plugins)
        async with second.test_app() as running:
            again = running.test_client()
            [entry] = (
                await (await again.get("/api/v1/sessions", headers=user.headers)).get_json()
            )["sessions"]
            assert entry["endedAt"] is not None and entry["hasRecording"] is True
            url = f"/api/v1/sessions/{entry['id']}/recording"
            data = await (await again.get(url, headers=user.headers)).get_data()
            assert b"flushed-9" in data
            assert entry["fileSize"] == len(data)


async def test_a_restore_ends_open_uploads(client, kernel, make_user):
    alice = await make_user("alice")
    rdp = await rdp_connection_id(kernel, alice)
    created = await client.post(
        "/api/v1/sessions/rdp-session", json={"connectionId": rdp}, headers=alice.headers
    )
    url = f"/api/v1/sessions/{(await created.get_json())['sessionId']}/recording"
    assert (
        await client.post(f"{url}/chunk", data=b"B" * 1000, headers=alice.headers)
    ).status_code == 200
    await kernel.reload_state()  # what a backup import does after replacing the database
    late = await client.post(f"{url}/chunk", data=b"more", headers=alice.headers)
    assert late.status_code == 409
    assert await (await client.get(url, headers=alice.headers)).get_data() == b"B" * 1000
