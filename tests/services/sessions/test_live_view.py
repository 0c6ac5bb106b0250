"""``/ws/sessions/<id>/watch``: a read-only live view of a running terminal (real local shell)."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

from tests.services.sessions.helpers import Screen, socket_path, ticket_for


def watch_path(session_id: str, ticket: str | None) -> str:
    query = urlencode({"ticket": ticket}) if ticket is not None else ""
    return f"/ws/sessions/{session_id}/watch?{query}"


def open_terminal(client: Any, kernel: Any, user: Any, connection_id: str) -> Any:
    path = socket_path("localshell", ticket_for(kernel, user), connection_id, cols=80, rows=24)
    return client.websocket(path)


def running_session(kernel: Any) -> Any:
    [session] = kernel.terminal_sessions.all()
    return session


async def audit_entries(client: Any, admin: Any, event_type: str) -> list[dict[str, Any]]:
    response = await client.get(f"/api/v1/audit?eventType={event_type}", headers=admin.headers)
    assert response.status_code == 200
    return list((await response.get_json())["entries"])


async def ended_watches(client: Any, admin: Any, count: int) -> list[dict[str, Any]]:
    """The ``session.live_view_ended`` entries once there are ``count`` of them: a watch
    writes its entry in a task of its own, after its socket closed (60 s: a hang guard)."""
    for _ in range(1200):
        ended = await audit_entries(client, admin, "session.live_view_ended")
        if len(ended) >= count:
            return ended
        await asyncio.sleep(0.05)
    return ended


async def until_message(screen: Screen, kind: str, count: int = 1) -> list[dict[str, Any]]:
    """Pump until ``count`` messages of ``kind`` arrived; return them."""
    for _ in range(200):
        found = [m for m in screen.messages if m["type"] == kind]
        if len(found) >= count:
            return found
        assert await screen.pump(), f"closed before {count} {kind!r} message(s)"
    raise AssertionError(f"no {kind!r} message; got {screen.messages}")


async def test_a_viewer_sees_the_screen_then_the_output_read_only_and_audited(
    client, kernel, admin, shell_connection
):
    user, connection = shell_connection
    async with open_terminal(client, kernel, user, connection.id) as socket:
        watched = Screen(socket)
        await watched.until("$ ")
        await watched.run("echo before-$((1+1))", "before-2")
        await watched.prompt()
        session = running_session(kernel)

        async with client.websocket(watch_path(session.id, ticket_for(kernel, admin))) as viewing:
            viewer = Screen(viewing)
            [hello] = await until_message(viewer, "watch")
            assert hello["sessionId"] == session.id
            assert hello["username"] == "alice"
            assert hello["connectionName"] == "local shell"
            assert (hello["cols"], hello["rows"]) == (80, 24)
            # the current screen comes first, drawn from the output so far
            await viewer.until("before-2")

            # the watched user is told who watches
            [told] = await until_message(watched, "watchers")
            assert [w["username"] for w in told["watchers"]] == ["admin"]
            assert "watching this session" in told["message"]

            # new output reaches the viewer as it happens
            await watched.run("echo after-$((2+3))", "after-5")
            await viewer.until("after-5")

            # a viewer's keys go nowhere
            await viewing.send(json.dumps({"type": "data", "data": "echo hijacked-$((3*3))\r"}))
            await viewing.send("echo raw-hijack-$((4*4))\r")
            await watched.run("echo later-$((5+5))", "later-10")
            assert b"hijacked-9" not in watched.output
            assert b"raw-hijack-16" not in watched.output

            # a resize of the watched terminal is passed on
            await watched.resize(100, 30)
            await watched.run("echo resized-$((6+6))", "resized-12")
            [resize] = await until_message(viewer, "resize")
            assert (resize["cols"], resize["rows"]) == (100, 30)

        # the viewer left: the watched user is told nobody watches any more
        messages = await until_message(watched, "watchers", 2)
        assert messages[-1]["watchers"] == []
        assert session.viewers == []
        assert session.notice is None

    started = await audit_entries(client, admin, "session.live_view_started")
    ended = await ended_watches(client, admin, 1)
    assert [e["username"] for e in started] == ["admin"]
    assert started[0]["details"]["sessionId"] == session.id
    assert started[0]["details"]["ownerUsername"] == "alice"
    assert started[0]["target"] == "local shell"
    assert ended[0]["details"]["sessionId"] == session.id
    assert ended[0]["details"]["durationMs"] >= 0


async def test_without_view_any_the_watch_is_refused(
    client, kernel, admin, make_user, shell_connection
):
    user, connection = shell_connection
    async with open_terminal(client, kernel, user, connection.id) as socket:
        watched = Screen(socket)
        await watched.until("$ ")
        session = running_session(kernel)
        bob = await make_user("bob")  # the built-in user role: no sessions.view_any
        cases = [
            (
                watch_path(session.id, ticket_for(kernel, bob)),
                4003,
                "sessions.view_any",
                "forbidden",
            ),
            # even the session's own user needs the permission
            (
                watch_path(session.id, ticket_for(kernel, user)),
                4003,
                "sessions.view_any",
                "forbidden",
            ),
            (watch_path(session.id, "not-a-ticket"), 4001, "ticket", "ticket_invalid"),
            (watch_path(session.id, None), 4001, "ticket", "ticket_invalid"),
            (
                watch_path("no-such-session", ticket_for(kernel, admin)),
                4002,
                "not found",
                "not_found",
            ),
        ]
        for path, code, words, reason in cases:
            async with client.websocket(path) as refused:
                screen = Screen(refused)
                assert await screen.until_closed() == code, path
                assert words in screen.messages[-1]["message"], screen.messages
                assert screen.messages[-1]["reason"] == reason, screen.messages
        assert session.viewers == []
        # the watched user was never told of a refused viewer
        assert not [m for m in watched.messages if m["type"] == "watchers"]
    assert await audit_entries(client, admin, "session.live_view_started") == []


async def test_the_viewer_closes_when_the_session_ends_and_a_reattach_keeps_the_notice(
    client, kernel, admin, shell_connection
):
    user, connection = shell_connection
    path = socket_path(
        "localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24, sessionId="tab-1"
    )
    async with client.websocket(path) as socket:
        watched = Screen(socket)
        await watched.until("$ ")
        session = running_session(kernel)
        async with client.websocket(watch_path(session.id, ticket_for(kernel, admin))) as viewing:
            viewer = Screen(viewing)
            await until_message(viewer, "watch")
            await until_message(watched, "watchers")
    # (the first socket went away: the session waits for its tab to come back)
    again = socket_path(
        "localshell", ticket_for(kernel, user), connection.id, cols=80, rows=24, sessionId="tab-1"
    )
    async with client.websocket(watch_path(session.id, ticket_for(kernel, admin))) as viewing:
        viewer = Screen(viewing)
        await until_message(viewer, "watch")
        async with client.websocket(again) as socket:
            back = Screen(socket)
            assert (await until_message(back, "status"))[0]["message"] == "Reattached"
            # the re-attached tab is told at once that it is being watched
            [told] = await until_message(back, "watchers")
            assert [w["username"] for w in told["watchers"]] == ["admin"]
            await back.send("exit\r")
            assert await back.until_closed() == 1000
        assert await viewer.until_closed() == 1000
        assert viewer.messages[-1] == {
            "type": "error",
            "message": "The watched session ended",
            "reason": "session_ended",
        }
    assert len(await ended_watches(client, admin, 2)) == 2


async def test_a_watch_is_a_live_session_ended_from_the_list_or_by_revoking_the_viewer(
    client, kernel, admin, make_user, shell_connection
):
    user, connection = shell_connection
    auditor = await make_user("carol", permissions=["sessions.view_any"])
    async with open_terminal(client, kernel, user, connection.id) as socket:
        watched = Screen(socket)
        await watched.until("$ ")
        session = running_session(kernel)

        # listed among the open sessions (kind "watch"), and ended from there
        async with client.websocket(watch_path(session.id, ticket_for(kernel, admin))) as viewing:
            viewer = Screen(viewing)
            await until_message(viewer, "watch")
            listed = await client.get("/api/v1/sessions/active", headers=admin.headers)
            [entry] = [s for s in (await listed.get_json())["sessions"] if s["kind"] == "watch"]
            assert entry["username"] == "admin" and entry["connectionName"] == "local shell"
            assert entry["protocol"] == "localshell"
            ended = await client.delete(
                f"/api/v1/sessions/active/{entry['id']}?reason=enough", headers=admin.headers
            )
            assert ended.status_code == 200
            assert await viewer.until_closed() == 4003
            assert viewer.messages[-1]["message"] == "Terminated by admin: enough"
            assert viewer.messages[-1]["reason"] == "terminated"

        # the viewer's login session revoked: the watch ends at once, as their terminals would
        async with client.websocket(watch_path(session.id, ticket_for(kernel, auditor))) as viewing:
            viewer = Screen(viewing)
            await until_message(viewer, "watch")
            login = kernel.identity.decode(auditor.token, "session")["sid"]
            assert await kernel.identity.revoke_session(
                login, user_id=auditor.id, reason="Session has been revoked"
            )
            assert await viewer.until_closed() == 4001
            assert viewer.messages[-1]["reason"] == "revoked"
        # the watched terminal went on through both
        await watched.run("echo still-$((2+2))", "still-4")
        assert session.viewers == []
        assert [s.kind for s in kernel.live.all()] == ["terminal"]


async def test_a_viewer_who_loses_view_any_is_closed_on_the_change_and_by_the_periodic_check(
    client, kernel, admin, make_user, shell_connection
):
    """A watch used to outlive its viewer's ``sessions.view_any``: now the change itself
    closes it (the event-driven re-check), and so does the periodic one."""
    from hostgate.db.models.identity import Role

    user, connection = shell_connection
    auditor = await make_user("carol", permissions=["sessions.view_any"])
    async with open_terminal(client, kernel, user, connection.id) as socket:
        watched = Screen(socket)
        await watched.until("$ ")
        session = running_session(kernel)

        async with client.websocket(watch_path(session.id, ticket_for(kernel, auditor))) as viewing:
            viewer = Screen(viewing)
            await until_message(viewer, "watch")
            changed = await client.put(
                f"/api/v1/roles/{auditor.role_id}",
                json={"permissions": []},
                headers=admin.headers,
            )
            assert changed.status_code == 200, await changed.get_json()
            assert await viewer.until_closed() == 4003  # the login itself goes on
            assert viewer.messages[-1] == {
                "type": "error",
                "message": "Permission sessions.view_any was withdrawn",
                "reason": "permission_withdrawn",
            }

        restored = await client.put(
            f"/api/v1/roles/{auditor.role_id}",
            json={"permissions": ["sessions.view_any"]},
            headers=admin.headers,
        )
        assert restored.status_code == 200
        async with client.websocket(watch_path(session.id, ticket_for(kernel, auditor))) as viewing:
            viewer = Screen(viewing)
            await until_message(viewer, "watch")
            # the role changes behind the API's back: only the periodic check can notice
            async with kernel.db.session() as db:
                role = await db.get(Role, auditor.role_id)
                role.permissions = []
                db.add(role)
                await db.commit()
            assert await kernel.live_view.recheck() == 1  # what runs every CHECK_SECONDS
            assert await viewer.until_closed() == 4003
            assert viewer.messages[-1]["reason"] == "permission_withdrawn"
        # the watched terminal went on, and was told nobody watches any more
        await watched.run("echo still-$((2+2))", "still-4")
        assert session.viewers == []
        assert [s.kind for s in kernel.live.all()] == ["terminal"]
    ended = await ended_watches(client, admin, 2)
    assert len(ended) == 2
