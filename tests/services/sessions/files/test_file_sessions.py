"""File-transfer sessions: events after success, binding to the user, listing, exports."""

from __future__ import annotations

import csv
import io
import json
from datetime import timedelta

from hostgate.db.models.audit import AuditEntry
from hostgate.db.models.files import FileSession
from sqlmodel import select

from tests.services.sessions.files.conftest import url

SESSION = {"X-File-Session-Id": "3f1c2a9e-tab-one"}


def with_session(user, key=SESSION):
    return {**user.headers, **key}


async def events_of(client, user, session_id):
    response = await client.get(f"/api/v1/file-sessions/{session_id}/events", headers=user.headers)
    assert response.status_code == 200
    return (await response.get_json())["events"]


async def sessions_of(client, user, **query):
    response = await client.get("/api/v1/file-sessions", query_string=query, headers=user.headers)
    assert response.status_code == 200
    return await response.get_json()


async def do_everything(client, user, conn):
    headers = with_session(user)
    assert (
        await client.post(url(conn, "mkdir"), json={"path": "/d"}, headers=headers)
    ).status_code == 200
    response = await client.post(
        url(conn, "upload"), query_string={"path": "/d/a.txt"}, data=b"x" * 4300, headers=headers
    )
    assert response.status_code == 200
    await client.post(url(conn, "list"), json={"path": "/d"}, headers=headers)
    response = await client.get(
        url(conn, "download"), query_string={"path": "/d/a.txt"}, headers=headers
    )
    assert len(await response.get_data()) == 4300
    await client.post(url(conn, "stat"), json={"path": "/d/a.txt"}, headers=headers)
    await client.post(
        url(conn, "rename"), json={"oldPath": "/d/a.txt", "newPath": "/d/b.txt"}, headers=headers
    )
    await client.post(url(conn, "copy"), json={"srcPath": "/d", "destPath": "/e"}, headers=headers)
    await client.delete(url(conn, "file"), query_string={"path": "/e"}, headers=headers)
    response = await client.get(
        url(conn, "download"), query_string={"path": "/missing"}, headers=headers
    )
    assert response.status_code == 404


async def test_every_successful_operation_is_an_event(client, owner, memconn):
    await do_everything(client, owner, memconn)
    body = await sessions_of(client, owner)
    assert body["page"] == 1 and body["limit"] == 25
    [session] = body["sessions"]
    assert set(session) == {
        "id",
        "userId",
        "protocol",
        "startedAt",
        "endedAt",
        "connectionName",
        "username",
        "eventCount",
    }
    assert session["userId"] == owner.id
    assert session["username"] == "owner"
    assert session["protocol"] == "memfs"
    assert session["connectionName"] == "Mem Server"
    assert session["eventCount"] == 7
    assert session["startedAt"] <= session["endedAt"]
    events = await events_of(client, owner, session["id"])
    assert [(e["action"], e["path"], e["detail"]) for e in events] == [
        ("mkdir", "/d", ""),
        ("upload", "/d/a.txt", "4.2 KiB"),
        ("browse", "/d", "1 entry"),
        ("download", "/d/a.txt", "4.2 KiB"),
        ("rename", "/d/a.txt", "/d/a.txt → /d/b.txt"),
        ("copy", "/d", "/d → /e"),
        ("delete", "/e", ""),
    ]
    assert all(set(e) == {"id", "timestamp", "action", "path", "detail"} for e in events)
    assert all(isinstance(e["detail"], str) for e in events)


async def test_session_start_is_audited_once(client, kernel, owner, memconn):
    await do_everything(client, owner, memconn)
    async with kernel.db.session() as db:
        rows = (
            await db.exec(
                select(AuditEntry).where(AuditEntry.event_type == "connection.session_started")
            )
        ).all()
    assert len(rows) == 1
    assert rows[0].target == memconn.id
    assert rows[0].user_id == owner.id
    assert rows[0].details["protocol"] == "memfs"


async def test_client_session_id_is_bound_to_the_user(client, owner, make_user, make_connection):
    shared = await make_connection(owner, "memfs", shared=True)
    intruder = await make_user("intruder")
    await client.post(url(shared, "list"), json={"path": "/"}, headers=with_session(owner))
    await client.post(url(shared, "list"), json={"path": "/"}, headers=with_session(intruder))
    [mine] = (await sessions_of(client, owner))["sessions"]
    [theirs] = (await sessions_of(client, intruder))["sessions"]
    assert mine["id"] != theirs["id"]
    assert mine["eventCount"] == 1 and theirs["eventCount"] == 1
    response = await client.get(
        f"/api/v1/file-sessions/{mine['id']}/events", headers=intruder.headers
    )
    assert response.status_code == 404


async def test_requests_without_the_header_share_an_implicit_session(
    client, kernel, owner, memconn
):
    for _ in range(2):
        await client.post(url(memconn, "list"), json={"path": "/"}, headers=owner.headers)
    [session] = (await sessions_of(client, owner))["sessions"]
    assert session["eventCount"] == 2
    async with kernel.db.session() as db:
        row = await db.get(FileSession, session["id"])
        row.ended_at = row.ended_at - timedelta(minutes=31)
        db.add(row)
        await db.commit()
    await client.post(url(memconn, "list"), json={"path": "/"}, headers=owner.headers)
    assert len((await sessions_of(client, owner))["sessions"]) == 2
    oversized = {"X-File-Session-Id": "x" * 129}
    await client.post(
        url(memconn, "list"), json={"path": "/"}, headers=with_session(owner, oversized)
    )
    sessions = (await sessions_of(client, owner))["sessions"]
    assert len(sessions) == 2
    assert sessions[0]["eventCount"] == 2


async def test_listing_narrows_to_own_sessions_unless_view_any(
    client, owner, make_user, admin, make_connection
):
    other = await make_user("other")
    theirs = await make_connection(other, "memfs")
    await client.post(url(theirs, "list"), json={"path": "/"}, headers=other.headers)
    mine = await make_connection(owner, "memfs")
    await client.post(url(mine, "list"), json={"path": "/"}, headers=owner.headers)
    assert [s["username"] for s in (await sessions_of(client, owner))["sessions"]] == ["owner"]
    everyone = (await sessions_of(client, admin))["sessions"]
    assert sorted(s["username"] for s in everyone) == ["other", "owner"]
    page = await sessions_of(client, admin, page=2, limit=1)
    assert page["page"] == 2 and page["limit"] == 1 and len(page["sessions"]) == 1
    response = await client.get(
        f"/api/v1/file-sessions/{everyone[0]['id']}/events", headers=admin.headers
    )
    assert response.status_code == 200
    response = await client.get(
        "/api/v1/file-sessions", query_string={"page": "0"}, headers=admin.headers
    )
    assert response.status_code == 400
    assert (await client.get("/api/v1/file-sessions")).status_code == 401


async def test_exports(client, owner, make_connection):
    conn = await make_connection(owner, "memfs", name='Prod "files", east')
    tricky = '/d/=cmd|" a,b\nc.txt'
    await client.post(url(conn, "mkdir"), json={"path": "/d"}, headers=with_session(owner))
    response = await client.post(
        url(conn, "upload"), query_string={"path": tricky}, data=b"1", headers=with_session(owner)
    )
    assert response.status_code == 200
    await client.post(url(conn, "list"), json={"path": "/d"}, headers=with_session(owner))
    [session] = (await sessions_of(client, owner))["sessions"]
    base = f"/api/v1/file-sessions/{session['id']}/export"

    response = await client.get(base, query_string={"format": "json"}, headers=owner.headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("application/json")
    disposition = response.headers["Content-Disposition"]
    assert disposition.startswith('attachment; filename="file-activity_Prod_files_east_')
    assert disposition.endswith('.json"')
    document = json.loads(await response.get_data())
    assert document["session"]["connectionName"] == 'Prod "files", east'
    assert document["session"]["id"] == session["id"]
    assert [e["action"] for e in document["events"]] == ["mkdir", "upload", "browse"]
    assert document["events"][1]["path"] == tricky

    response = await client.get(base, query_string={"format": "csv"}, headers=owner.headers)
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/csv")
    assert response.headers["Content-Disposition"].endswith('.csv"')
    rows = list(csv.reader(io.StringIO((await response.get_data()).decode())))
    assert rows[0] == [
        "session_id",
        "connection",
        "username",
        "protocol",
        "session_started",
        "session_ended",
        "timestamp",
        "action",
        "path",
        "detail",
    ]
    assert [r[7] for r in rows[1:]] == ["mkdir", "upload", "browse"]
    assert rows[1][1] == 'Prod "files", east'
    assert rows[2][8] == tricky
    assert rows[2][9] == "1 B"
    assert rows[3][9] == "1 entry"

    response = await client.get(base, query_string={"format": "xml"}, headers=owner.headers)
    assert response.status_code == 400
    response = await client.get(base, headers=owner.headers)
    assert response.headers["Content-Disposition"].endswith('.json"')


async def test_csv_cells_cannot_become_formulas(client, owner, make_connection):
    conn = await make_connection(owner, "memfs", name="=HYPERLINK(1)")
    await client.post(url(conn, "mkdir"), json={"path": "=2+3"}, headers=with_session(owner))
    [session] = (await sessions_of(client, owner))["sessions"]
    response = await client.get(
        f"/api/v1/file-sessions/{session['id']}/export",
        query_string={"format": "csv"},
        headers=owner.headers,
    )
    rows = list(csv.reader(io.StringIO((await response.get_data()).decode())))
    assert rows[1][1] == "'=HYPERLINK(1)"
    assert rows[1][8] == "'=2+3"


async def test_purge_removes_sessions_and_events(client, kernel, owner, memconn):
    await do_everything(client, owner, memconn)
    assert await kernel.file_sessions.purge() == 1
    assert (await sessions_of(client, owner))["sessions"] == []
