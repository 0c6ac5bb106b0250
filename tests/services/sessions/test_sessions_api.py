"""The /sessions routes: listing, purge, storage, RDP sessions, uploads, Range, input events."""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from hostgate.db.models.files import FileSession
from hostgate.db.models.sessions import RemoteSession, SessionCommand
from hostgate.timefmt import utcnow


async def add_rows(kernel: Any, user: Any, count: int, **fields: Any) -> list[str]:
    ids = []
    async with kernel.db.session() as db:
        for index in range(count):
            row = RemoteSession(
                user_id=user.id,
                username=user.username,
                connection_name=f"c{index}",
                protocol="ssh",
                started_at=utcnow() - timedelta(minutes=index),
                ended_at=utcnow(),
                **fields,
            )
            db.add(row)
            ids.append(row.id)
        await db.commit()
    return ids


async def rdp_connection(make_connection: Any, user: Any) -> Any:
    return await make_connection(user, "rdp", "127.0.0.1", 3389, name="desktop")


async def new_rdp_session(client: Any, user: Any, connection: Any) -> dict[str, Any]:
    response = await client.post(
        "/api/v1/sessions/rdp-session", json={"connectionId": connection.id}, headers=user.headers
    )
    assert response.status_code == 200, await response.get_data()
    return dict(await response.get_json())


async def test_list_pagination_and_narrowing(client, kernel, make_user, admin):
    alice = await make_user("alice")
    bob = await make_user("bob")
    mine = await add_rows(kernel, alice, 3)
    await add_rows(kernel, bob, 2)
    response = await client.get("/api/v1/sessions?limit=2", headers=alice.headers)
    body = await response.get_json()
    assert (body["page"], body["limit"]) == (1, 2)
    assert [s["id"] for s in body["sessions"]] == mine[:2]
    first = body["sessions"][0]
    assert set(first) >= {
        "id",
        "userId",
        "protocol",
        "startedAt",
        "endedAt",
        "hasRecording",
        "fileSize",
        "connectionName",
        "username",
    }
    assert first["startedAt"].endswith("Z") and first["hasRecording"] is False
    assert first["fileSize"] == 0
    assert first["via"] == ""  # rows made without a door's ``via``: the browser app
    page2 = await (
        await client.get("/api/v1/sessions?limit=2&page=2", headers=alice.headers)
    ).get_json()
    assert [s["id"] for s in page2["sessions"]] == mine[2:]
    everyone = await (await client.get("/api/v1/sessions", headers=admin.headers)).get_json()
    assert len(everyone["sessions"]) == 5 and everyone["limit"] == 25
    assert (await client.get("/api/v1/sessions?page=0", headers=alice.headers)).status_code == 400
    assert (await client.get("/api/v1/sessions")).status_code == 401


async def test_purge_needs_permission_and_reports_counts(
    client, kernel, make_user, admin, make_connection
):
    alice = await make_user("alice")
    ids = await add_rows(kernel, alice, 2)
    async with kernel.db.session() as db:
        db.add(SessionCommand(session_id=ids[0], command="ls", elapsed=5))
        await db.commit()
    connection = await rdp_connection(make_connection, alice)
    created = await new_rdp_session(client, alice, connection)
    url = f"/api/v1/sessions/{created['sessionId']}/recording"
    assert (
        await client.post(f"{url}/chunk", data=b"x" * 100, headers=alice.headers)
    ).status_code == 200
    assert (await client.post(f"{url}/finalize", headers=alice.headers)).status_code == 200
    async with kernel.db.session() as db:
        db.add(
            FileSession(
                user_id=alice.id,
                username=alice.username,
                connection_id=connection.id,
                connection_name="files",
                protocol="sftp",
                client_key="tab",
            )
        )
        await db.commit()

    refused = await client.delete("/api/v1/sessions", headers=alice.headers)
    assert refused.status_code == 403
    response = await client.delete("/api/v1/sessions", headers=admin.headers)
    assert response.status_code == 200
    assert await response.get_json() == {
        "ok": True,
        "deletedSessions": 3,
        "deletedRecordings": 1,
        "deletedFileSessions": 1,
    }
    assert (await (await client.get("/api/v1/sessions", headers=admin.headers)).get_json())[
        "sessions"
    ] == []
    assert os.listdir(kernel.config.data_dir / "recordings") == []
    audit = await client.get("/api/v1/audit?eventType=sessions.purged", headers=admin.headers)
    [entry] = (await audit.get_json())["entries"]
    assert entry["details"]["deletedSessions"] == 3


async def test_storage_reports_bytes_on_disk(client, kernel, make_user, admin, make_connection):
    alice = await make_user("alice")
    assert (await client.get("/api/v1/sessions/storage", headers=alice.headers)).status_code == 403
    empty = await (await client.get("/api/v1/sessions/storage", headers=admin.headers)).get_json()
    assert empty == {"bytes": 0}
    connection = await rdp_connection(make_connection, alice)
    created = await new_rdp_session(client, alice, connection)
    url = f"/api/v1/sessions/{created['sessionId']}/recording"
    await client.post(f"{url}/chunk", data=os.urandom(100_000), headers=alice.headers)
    body = await (await client.get("/api/v1/sessions/storage", headers=admin.headers)).get_json()
    assert body["bytes"] > 100_000


async def test_rdp_session_creation_rules(client, kernel, make_user, admin, make_connection):
    alice = await make_user("alice")
    connection = await rdp_connection(make_connection, alice)
    created = await new_rdp_session(client, alice, connection)
    assert created["shouldRecord"] is True and isinstance(created["sessionId"], str)
    ssh = await make_connection(alice, "ssh", "127.0.0.1", 22)
    wrong = await client.post(
        "/api/v1/sessions/rdp-session", json={"connectionId": ssh.id}, headers=alice.headers
    )
    assert wrong.status_code == 400
    for body in ({}, {"connectionId": ""}, {"connectionId": connection.id, "x": 1}):
        bad = await client.post("/api/v1/sessions/rdp-session", json=body, headers=alice.headers)
        assert bad.status_code == 400, body
    stranger = await make_user("eve")
    hidden = await client.post(
        "/api/v1/sessions/rdp-session",
        json={"connectionId": connection.id},
        headers=stranger.headers,
    )
    assert hidden.status_code == 404
    await client.put("/api/v1/settings", json={"recordings.enabled": False}, headers=admin.headers)
    off = await new_rdp_session(client, alice, connection)
    assert off["shouldRecord"] is False
    url = f"/api/v1/sessions/{off['sessionId']}/recording"
    assert (
        await client.post(f"{url}/chunk", data=b"abc", headers=alice.headers)
    ).status_code == 409
    events = [{"elapsed": 1, "type": "click"}]
    assert (
        await client.post(f"{url}/events", json=events, headers=alice.headers)
    ).status_code == 409


async def test_webm_upload_range_and_finalize(client, kernel, make_user, make_connection):
    alice = await make_user("alice")
    connection = await rdp_connection(make_connection, alice)
    created = await new_rdp_session(client, alice, connection)
    url = f"/api/v1/sessions/{created['sessionId']}/recording"
    first, second = os.urandom(70_000), os.urandom(90_000)
    for chunk in (first, second):
        response = await client.post(f"{url}/chunk", data=chunk, headers=alice.headers)
        assert response.status_code == 200
        assert await response.get_json() == {"ok": True}
    content = first + second
    size = len(content)

    whole = await client.get(url, headers=alice.headers)
    assert whole.status_code == 200
    assert whole.headers["Content-Type"] == "video/webm"
    assert await whole.get_data() == content

    cases = {
        "bytes=0-9": (0, 9),
        "bytes=65530-65545": (65530, 65545),
        f"bytes={size - 10}-": (size - 10, size - 1),
        "bytes=-100": (size - 100, size - 1),
        f"bytes=100-{size + 500}": (100, size - 1),
    }
    for header, (start, end) in cases.items():
        part = await client.get(url, headers={**alice.headers, "Range": header})
        assert part.status_code == 206, header
        assert part.headers["Content-Range"] == f"bytes {start}-{end}/{size}"
        assert int(part.headers["Content-Length"]) == end - start + 1
        assert await part.get_data() == content[start : end + 1], header
    for header in (f"bytes={size}-", "bytes=500-100", "bytes=-0"):
        refused = await client.get(url, headers={**alice.headers, "Range": header})
        assert refused.status_code == 416, header
        assert refused.headers["Content-Range"] == f"bytes */{size}"
        assert (await refused.get_json())["code"] == "range_not_satisfiable"
    ignored = await client.get(url, headers={**alice.headers, "Range": "items=0-5"})
    assert ignored.status_code == 200

    listed = await (await client.get("/api/v1/sessions", headers=alice.headers)).get_json()
    assert listed["sessions"][0]["fileSize"] == size
    assert listed["sessions"][0]["endedAt"] is None
    assert listed["sessions"][0]["recordingComplete"] is False  # still being written
    assert (await client.post(f"{url}/finalize", headers=alice.headers)).status_code == 200
    listed = await (await client.get("/api/v1/sessions", headers=alice.headers)).get_json()
    assert listed["sessions"][0]["endedAt"] is not None
    assert listed["sessions"][0]["hasRecording"] is True
    assert listed["sessions"][0]["recordingComplete"] is True
    late = await client.post(f"{url}/chunk", data=b"late", headers=alice.headers)
    assert late.status_code == 409
    assert (await client.post(f"{url}/finalize", headers=alice.headers)).status_code == 200


async def test_uploads_are_the_owners_alone(client, kernel, make_user, make_connection, admin):
    alice = await make_user("alice")
    connection = await rdp_connection(make_connection, alice)
    created = await new_rdp_session(client, alice, connection)
    url = f"/api/v1/sessions/{created['sessionId']}/recording"
    for suffix, kwargs in (
        ("/chunk", {"data": b"x"}),
        ("/finalize", {}),
        ("/events", {"json": [{"elapsed": 1, "type": "key"}]}),
    ):
        response = await client.post(url + suffix, headers=admin.headers, **kwargs)
        assert response.status_code == 403, suffix
        assert (await client.post(url + suffix, **kwargs)).status_code == 401
    missing = await client.post(
        "/api/v1/sessions/nope/recording/chunk", data=b"x", headers=alice.headers
    )
    assert missing.status_code == 404


async def test_upload_size_cap(client, kernel, make_user, make_connection, admin):
    alice = await make_user("alice")
    await client.put(
        "/api/v1/settings", json={"recordings.max_size_mb": 0.1}, headers=admin.headers
    )
    connection = await rdp_connection(make_connection, alice)
    created = await new_rdp_session(client, alice, connection)
    url = f"/api/v1/sessions/{created['sessionId']}/recording"
    assert (
        await client.post(f"{url}/chunk", data=os.urandom(60_000), headers=alice.headers)
    ).status_code == 200
    over = await client.post(f"{url}/chunk", data=os.urandom(60_000), headers=alice.headers)
    assert over.status_code == 413
    data = await (await client.get(url, headers=alice.headers)).get_data()
    assert len(data) == int(0.1 * 1024 * 1024)
    again = await client.post(f"{url}/chunk", data=b"more", headers=alice.headers)
    assert again.status_code == 409


async def test_input_events_write_and_read_forms(client, kernel, make_user, make_connection):
    alice = await make_user("alice")
    connection = await rdp_connection(make_connection, alice)
    created = await new_rdp_session(client, alice, connection)
    url = f"/api/v1/sessions/{created['sessionId']}/recording/events"
    events = [
        {"elapsed": 2500, "type": "key"},
        {"elapsed": 1200.5, "type": "click"},
        {"elapsed": 3000, "type": "move"},
    ]
    response = await client.post(url, json=events, headers=alice.headers)
    assert response.status_code == 200
    assert await response.get_json() == {"ok": True}
    body = await (await client.get(url, headers=alice.headers)).get_json()
    assert body == {
        "events": [
            {"elapsed": 1200.5, "event_type": "click"},
            {"elapsed": 2500, "event_type": "key"},
            {"elapsed": 3000, "event_type": "move"},
        ]
    }
    for bad in (
        {"elapsed": 1, "type": "key"},
        [{"elapsed": -1, "type": "key"}],
        [{"elapsed": 1}],
        [{"elapsed": "soon", "type": "key"}],
        [{"elapsed": 1, "type": ""}],
    ):
        refused = await client.post(url, json=bad, headers=alice.headers)
        assert refused.status_code == 400, bad
    after = await (await client.get(url, headers=alice.headers)).get_json()
    assert len(after["events"]) == 3


async def test_commands_route_shape(client, kernel, make_user):
    alice = await make_user("alice")
    [session_id] = await add_rows(kernel, alice, 1)
    async with kernel.db.session() as db:
        db.add(
            SessionCommand(
                session_id=session_id, command="whoami", elapsed=900, output_preview="alice"
            )
        )
        db.add(SessionCommand(session_id=session_id, command="ls", elapsed=300))
        await db.commit()
    body = await (
        await client.get(f"/api/v1/sessions/{session_id}/commands", headers=alice.headers)
    ).get_json()
    assert [c["command"] for c in body["commands"]] == ["ls", "whoami"]
    entry = body["commands"][1]
    # SPEC's fields, and whose keys typed it (typedBy, a hostgate addition: joining)
    assert set(entry) == {"id", "timestamp", "elapsed", "command", "output_preview", "typedBy"}
    assert entry["elapsed"] == 900 and entry["output_preview"] == "alice"
    assert entry["timestamp"].endswith("Z")
    assert body["commands"][0]["output_preview"] == ""
