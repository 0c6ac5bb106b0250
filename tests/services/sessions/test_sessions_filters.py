"""``GET /sessions`` filters and total, ``GET /sessions/:id``, terminating with a reason."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from hostgate.db.models.sessions import RemoteSession
from hostgate.timefmt import iso, utcnow

from tests.services.sessions.helpers import Screen, socket_path, ticket_for


async def add(kernel: Any, user: Any, **fields: Any) -> str:
    row = RemoteSession(user_id=user.id, username=user.username, **fields)
    async with kernel.db.session() as db:
        db.add(row)
        await db.commit()
    return row.id


async def listed(client: Any, who: Any, query: str = "") -> dict[str, Any]:
    response = await client.get(f"/api/v1/sessions?{query}", headers=who.headers)
    assert response.status_code == 200, await response.get_data()
    return dict(await response.get_json())


async def test_filters_narrow_the_list_and_total_counts_the_matches(
    client, kernel, make_user, admin
):
    alice = await make_user("alice")
    bob = await make_user("bob")
    now = utcnow()
    old = await add(
        kernel,
        alice,
        protocol="ssh",
        connection_name="Web-1",
        started_at=now - timedelta(days=3),
        recording_state="complete",
    )
    recent = await add(
        kernel, alice, protocol="rdp", connection_name="desk_top", started_at=now, ended_at=now
    )
    theirs = await add(
        kernel, bob, protocol="telnet", connection_name="switch", started_at=now, ended_at=now
    )

    def ids(body: dict[str, Any]) -> set[str]:
        return {s["id"] for s in body["sessions"]}

    everything = await listed(client, admin)
    assert ids(everything) == {old, recent, theirs} and everything["total"] == 3
    assert ids(await listed(client, admin, "protocol=ssh,telnet")) == {old, theirs}
    assert ids(await listed(client, admin, f"userId={bob.id}")) == {theirs}
    assert ids(await listed(client, admin, "search=WEB")) == {old}  # any case
    assert ids(await listed(client, admin, "search=BO")) == {theirs}  # the username
    assert ids(await listed(client, admin, "search=k_t")) == {recent}  # _ is no wildcard
    assert ids(await listed(client, admin, "search=%25")) == set()
    assert ids(await listed(client, admin, "recorded=true")) == {old}
    assert ids(await listed(client, admin, "recorded=false")) == {recent, theirs}
    since = iso(now - timedelta(days=1)).replace("+", "%2B")
    assert ids(await listed(client, admin, f"from={since}")) == {recent, theirs}
    assert ids(await listed(client, admin, f"to={since}")) == {old}
    paged = await listed(client, admin, "limit=1&page=2")
    assert len(paged["sessions"]) == 1 and paged["total"] == 3
    # without sessions.view_any the filters apply to one's own sessions only
    assert ids(await listed(client, alice, f"userId={bob.id}")) == set()
    assert (await listed(client, alice))["total"] == 2

    for bad in ("from=yesterday", "recorded=maybe", "search=" + "x" * 201, "colour=red"):
        response = await client.get(f"/api/v1/sessions?{bad}", headers=admin.headers)
        assert response.status_code == 400, bad


async def test_one_session_in_detail(client, kernel, make_user, admin):
    alice = await make_user("alice")
    bob = await make_user("bob")
    session_id = await add(
        kernel,
        alice,
        protocol="ssh",
        connection_name="web-1",
        client_ip="192.0.2.7",
        ended_at=utcnow(),
        end_reason="Shell closed",
    )
    response = await client.get(f"/api/v1/sessions/{session_id}", headers=alice.headers)
    assert response.status_code == 200
    body = await response.get_json()
    assert body["id"] == session_id and body["connectionName"] == "web-1"
    assert body["clientIp"] == "192.0.2.7" and body["endReason"] == "Shell closed"
    assert body["live"] is False and body["hasRecording"] is False
    assert (
        await client.get(f"/api/v1/sessions/{session_id}", headers=admin.headers)
    ).status_code == 200
    assert (
        await client.get(f"/api/v1/sessions/{session_id}", headers=bob.headers)
    ).status_code == 403
    assert (await client.get("/api/v1/sessions/nope", headers=admin.headers)).status_code == 404
    # the named routes are not taken for ids
    assert (await client.get("/api/v1/sessions/storage", headers=admin.headers)).status_code == 200
    assert (await client.get("/api/v1/sessions/active", headers=alice.headers)).status_code == 200


async def test_terminating_with_a_reason_tells_the_user_and_the_audit_log(
    client, kernel, admin, shell_connection
):
    user, connection = shell_connection
    path = socket_path("localshell", ticket_for(kernel, user), connection.id)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        [session] = kernel.terminal_sessions.all()
        detail = await (
            await client.get(f"/api/v1/sessions/{session.id}", headers=admin.headers)
        ).get_json()
        assert detail["live"] is True and detail["endedAt"] is None
        too_long = await client.delete(
            f"/api/v1/sessions/active/{session.id}?reason={'x' * 201}", headers=admin.headers
        )
        assert too_long.status_code == 400
        response = await client.delete(
            f"/api/v1/sessions/active/{session.id}?reason=Maintenance%20window",
            headers=admin.headers,
        )
        assert response.status_code == 200
        assert await screen.until_closed() == 4003
        assert screen.messages[-1]["message"] == "Terminated by admin: Maintenance window"
        assert screen.messages[-1]["reason"] == "terminated"
    audit = await client.get(
        "/api/v1/audit?eventType=connection.session_terminated", headers=admin.headers
    )
    [entry] = (await audit.get_json())["entries"]
    assert entry["details"]["reason"] == "Maintenance window"
