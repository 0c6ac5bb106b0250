"""The terminal socket end to end over a real local shell: framing, codes, caps, control."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

from tests.services.sessions.helpers import Screen, socket_path, ticket_for


async def test_runs_a_command_and_records_the_session(client, kernel, shell_connection):
    user, connection = shell_connection
    path = socket_path("localshell", ticket_for(kernel, user), connection.id)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.resize(100, 30)
        await screen.pump()
        assert screen.messages[0] == {"type": "status", "message": "Connected"}
        await screen.until("$ ")
        await screen.run("echo hello-$((6*7))", "hello-42")
        await screen.send("exit\r")
        assert await screen.until_closed() == 1000
        # the error frame before a close the server makes names it, a normal end too
        assert screen.messages[-1] == {
            "type": "error",
            "message": "Shell closed",
            "reason": "shell_closed",
        }

    response = await client.get("/api/v1/sessions", headers=user.headers)
    body = await response.get_json()
    assert response.status_code == 200
    [entry] = body["sessions"]
    assert entry["protocol"] == "localshell"
    assert entry["connectionName"] == "local shell"
    assert entry["username"] == "alice"
    assert entry["hasRecording"] is True
    assert entry["fileSize"] > 0
    assert entry["endedAt"] is not None


async def open_screen(client: Any, kernel: Any, user: Any, connection_id: str | None, **extra: Any):
    extra.setdefault("cols", 80)
    extra.setdefault("rows", 24)
    path = socket_path("localshell", ticket_for(kernel, user), connection_id, **extra)
    return client.websocket(path)


async def test_close_codes_for_refused_sockets(
    client, kernel, make_user, make_connection, admin, shell_connection
):
    user, connection = shell_connection
    cases = [
        (socket_path("localshell", "not-a-ticket", connection.id), 4001, "ticket_invalid"),
        (socket_path("localshell", None, connection.id), 4001, "ticket_invalid"),
        (socket_path("localshell", ticket_for(kernel, user), None), 4001, "bad_request"),
        (
            socket_path("localshell", ticket_for(kernel, user), "no-such-connection"),
            4002,
            "not_found",
        ),
    ]
    stranger = await make_user("mallory")
    cases.append(
        (socket_path("localshell", ticket_for(kernel, stranger), connection.id), 4002, "not_found")
    )
    blocked = await make_user("blocked", permissions=[])
    own = await make_connection(blocked, "localshell", "127.0.0.1", 1)
    cases.append(
        (socket_path("localshell", ticket_for(kernel, blocked), own.id), 4003, "forbidden")
    )
    # a ticket taken before its user was deleted (or before a sign-out) and used after
    gone = await make_user("gone")
    gone_ticket = ticket_for(kernel, gone)
    deleted = await client.delete(f"/api/v1/users/{gone.id}", headers=admin.headers)
    assert deleted.status_code == 200, await deleted.get_data()
    cases.append((socket_path("localshell", gone_ticket, connection.id), 4001, "user_deleted"))
    signed_out = await make_user("signed-out")
    signed_out_ticket = ticket_for(kernel, signed_out)
    logout = await client.post("/api/v1/auth/logout", headers=signed_out.headers)
    assert logout.status_code == 200, await logout.get_data()
    cases.append((socket_path("localshell", signed_out_ticket, connection.id), 4001, "revoked"))
    for path, code, reason in cases:
        async with client.websocket(path) as socket:
            screen = Screen(socket)
            assert await screen.until_closed() == code, path
            assert screen.messages and screen.messages[-1]["type"] == "error"
            assert screen.messages[-1]["reason"] == reason, path


async def test_a_ticket_is_single_use(client, kernel, shell_connection):
    user, connection = shell_connection
    ticket = ticket_for(kernel, user)
    path = socket_path("localshell", ticket, connection.id)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        async with client.websocket(path) as second:
            assert await Screen(second).until_closed() == 4001


async def test_resize_reaches_the_pty(client, kernel, shell_connection):
    user, connection = shell_connection
    path = socket_path("localshell", ticket_for(kernel, user), connection.id)
    async with client.websocket(path) as socket:
        screen = Screen(socket)
        await screen.resize(91, 33)
        await screen.until("$ ")
        await screen.run("stty size", "33 91")
        await screen.resize(120, 40)
        await screen.run("stty size", "40 120")


async def test_initial_size_from_query_and_raw_frames(client, kernel, shell_connection):
    user, connection = shell_connection
    async with await open_screen(client, kernel, user, connection.id, cols=77, rows=22) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await socket.send("stty size; echo raw-$((1+1))\r")
        await screen.until("raw-2")
        assert b"22 77" in screen.output


async def test_hostile_control_messages_are_refused_and_the_shell_goes_on(
    client, kernel, shell_connection
):
    user, connection = shell_connection
    deep = '{"type": "resize", "cols": ' + "[" * 1000 + "]" * 1000 + "}"
    surrogate = '{"type": "data", "data": "echo typed-\\ud800\\r"}'
    async with await open_screen(client, kernel, user, connection.id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        for frame in (deep, surrogate):
            errors = len([m for m in screen.messages if m["type"] == "error"])
            await socket.send(frame)
            for _ in range(50):
                if len([m for m in screen.messages if m["type"] == "error"]) > errors:
                    break
                assert await screen.pump(), "the socket closed on a refused control message"
            else:
                raise AssertionError("no error message for a refused control message")
        refusals = [m["message"] for m in screen.messages if m["type"] == "error"]
        assert "nested deeper" in refusals[0]
        assert "surrogate" in refusals[1]
        await screen.run("stty size; echo still-$((20+1))", "still-21")
        assert b"24 80" in screen.output  # the deep resize changed nothing
        assert b"typed-" not in screen.output  # nor was the refused data typed


async def test_per_user_cap(client, kernel, admin, shell_connection):
    user, connection = shell_connection
    response = await client.put(
        "/api/v1/settings", json={"security.max_sessions_per_user": 1}, headers=admin.headers
    )
    assert response.status_code == 200
    async with await open_screen(client, kernel, user, connection.id) as first:
        await Screen(first).until("$ ")
        async with await open_screen(client, kernel, user, connection.id) as second:
            screen = Screen(second)
            assert await screen.until_closed() == 4008
            assert "concurrent" in screen.messages[-1]["message"]
            assert screen.messages[-1]["reason"] == "session_limit"


async def test_global_cap(client, kernel, admin, make_connection, shell_connection):
    user, connection = shell_connection
    await client.put(
        "/api/v1/settings", json={"security.max_sessions_total": 1}, headers=admin.headers
    )
    theirs = await make_connection(admin, "localshell", "127.0.0.1", 1)
    async with await open_screen(client, kernel, user, connection.id) as first:
        await Screen(first).until("$ ")
        async with await open_screen(client, kernel, admin, theirs.id) as second:
            screen = Screen(second)
            assert await screen.until_closed() == 4008
            assert screen.messages[-1]["reason"] == "session_limit"


async def test_reattach_replays_and_keeps_the_shell(client, kernel, shell_connection):
    user, connection = shell_connection
    async with await open_screen(client, kernel, user, connection.id, sessionId="tab-1") as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("export MARK=kept-$((2*3))", "$ ")
        await screen.run("echo before-$MARK", "before-kept-6")
    async with await open_screen(client, kernel, user, connection.id, sessionId="tab-1") as socket:
        screen = Screen(socket)
        await screen.until("before-kept-6")
        assert screen.messages[0] == {"type": "status", "message": "Reattached"}
        await screen.run("echo after-$MARK", "after-kept-6")
    sessions = await (await client.get("/api/v1/sessions", headers=user.headers)).get_json()
    assert len(sessions["sessions"]) == 1


async def test_opening_the_session_elsewhere_closes_the_first_socket(
    client, kernel, shell_connection
):
    user, connection = shell_connection
    async with await open_screen(client, kernel, user, connection.id, sessionId="tab-1") as first:
        screen = Screen(first)
        await screen.until("$ ")
        async with await open_screen(
            client, kernel, user, connection.id, sessionId="tab-1"
        ) as second:
            moved = Screen(second)
            await moved.pump()
            assert moved.messages[0] == {"type": "status", "message": "Reattached"}
            assert await screen.until_closed() == 4003
            assert screen.messages[-1] == {
                "type": "error",
                "message": "Session opened in another window",
                "reason": "opened_elsewhere",
            }
            await moved.run("echo moved-$((3*3))", "moved-9")


async def test_without_session_id_the_shell_ends_with_the_socket(client, kernel, shell_connection):
    user, connection = shell_connection
    async with await open_screen(client, kernel, user, connection.id) as socket:
        await Screen(socket).until("$ ")
    for _ in range(100):
        if not kernel.terminal_sessions.all():
            break
        await asyncio.sleep(0.05)
    assert kernel.terminal_sessions.all() == []
    assert kernel.live.count() == 0


async def test_idle_sockets_are_closed(client, kernel, admin, shell_connection):
    user, connection = shell_connection
    await client.put(
        "/api/v1/settings", json={"security.idle_timeout_minutes": 1}, headers=admin.headers
    )
    async with await open_screen(client, kernel, user, connection.id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        [session] = kernel.terminal_sessions.all()
        await kernel.terminal_sessions.tick()
        assert not session.ended
        session.last_input = time.monotonic() - 61
        await kernel.terminal_sessions.tick()
        assert await screen.until_closed() == 4003
        assert "without input" in screen.messages[-1]["message"]
        assert screen.messages[-1]["reason"] == "idle_timeout"


async def test_revoking_the_login_session_closes_the_socket(client, kernel, shell_connection):
    user, connection = shell_connection
    sid = kernel.identity.decode(user.token, "session")["sid"]
    async with await open_screen(client, kernel, user, connection.id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        response = await client.delete(
            f"/api/v1/profile/login-sessions/{sid}", headers=user.headers
        )
        assert response.status_code == 200
        assert await screen.until_closed() == 4001
        assert screen.messages[-1]["reason"] == "revoked"


async def test_active_sessions_and_termination(client, kernel, make_user, shell_connection, admin):
    user, connection = shell_connection
    other = await make_user("bob")
    async with await open_screen(client, kernel, user, connection.id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        mine = await (await client.get("/api/v1/sessions/active", headers=user.headers)).get_json()
        [entry] = mine["sessions"]
        assert entry["protocol"] == "localshell"
        assert entry["connectionId"] == connection.id
        assert entry["username"] == "alice"
        theirs = await client.get("/api/v1/sessions/active", headers=other.headers)
        assert (await theirs.get_json())["sessions"] == []
        everyone = await client.get("/api/v1/sessions/active", headers=admin.headers)
        assert [s["id"] for s in (await everyone.get_json())["sessions"]] == [entry["id"]]
        refused = await client.delete(
            f"/api/v1/sessions/active/{entry['id']}", headers=other.headers
        )
        assert refused.status_code == 404
        response = await client.delete(
            f"/api/v1/sessions/active/{entry['id']}", headers=admin.headers
        )
        assert response.status_code == 200
        assert await screen.until_closed() == 4003
        assert "Terminated by admin" in screen.messages[-1]["message"]
        assert screen.messages[-1]["reason"] == "terminated"
    gone = await client.delete(f"/api/v1/sessions/active/{entry['id']}", headers=admin.headers)
    assert gone.status_code == 404


async def test_sessions_are_audited(client, kernel, shell_connection, admin):
    user, connection = shell_connection
    async with await open_screen(client, kernel, user, connection.id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.send("exit\r")
        await screen.until_closed()
    response = await client.get(
        "/api/v1/audit?eventType=connection.session_started,connection.session_ended",
        headers=admin.headers,
    )
    entries = (await response.get_json())["entries"]
    kinds = sorted(e["eventType"] for e in entries)
    assert kinds == ["connection.session_ended", "connection.session_started"]
    started = next(e for e in entries if e["eventType"] == "connection.session_started")
    assert started["username"] == "alice"
    assert started["details"]["connectionId"] == connection.id
    ended = next(e for e in entries if e["eventType"] == "connection.session_ended")
    assert ended["details"]["reason"] == "Shell closed"
    assert json.dumps(ended["details"])


async def test_command_log_through_a_real_shell(client, kernel, shell_connection):
    user, connection = shell_connection
    async with await open_screen(client, kernel, user, connection.id) as socket:
        screen = Screen(socket)
        # each line is typed at a prompt that is showing, as a person types: the
        # output is awaited from where the line was sent (the echo of the read command
        # holds 'Password: ' too, and an earlier '$ ' would let a line be typed ahead)
        await screen.prompt()
        await screen.step("echo one-$((0+1))", "one-1\r\n")
        await screen.send("read -s -p 'Password: ' secret; echo; echo len=${#secret}\r")
        await screen.until("echo len=${#secret}")  # the echo of the whole line, then
        await screen.prompt(b"Password: ")  # read's own prompt
        await screen.send("Typed-Secret-99\r")
        await screen.until("len=15")
        await screen.prompt()
        await screen.send("exit\r")
        await screen.until_closed()
    [entry] = (await (await client.get("/api/v1/sessions", headers=user.headers)).get_json())[
        "sessions"
    ]
    response = await client.get(f"/api/v1/sessions/{entry['id']}/commands", headers=user.headers)
    commands = (await response.get_json())["commands"]
    assert [c["command"] for c in commands] == [
        "echo one-$((0+1))",
        "read -s -p 'Password: ' secret; echo; echo len=${#secret}",
        "[password]",
        "exit",
    ]
    assert commands[0]["output_preview"] == "one-1"
    assert commands[1]["elapsed"] >= commands[0]["elapsed"]
    assert "Typed-Secret" not in repr(commands)

    # one audit entry per command, for notification rules and SIEM forwarding
    response = await client.get("/api/v1/audit?eventType=session.command", headers=user.headers)
    audited = list(reversed((await response.get_json())["entries"]))
    assert [e["details"]["command"] for e in audited] == [c["command"] for c in commands]
    assert {e["details"]["sessionId"] for e in audited} == {entry["id"]}
    assert {e["details"]["connectionId"] for e in audited} == {connection.id}
    assert all(e["username"] == "alice" for e in audited)
    assert "Typed-Secret" not in repr(audited)


async def test_withdrawn_access_closes_open_sockets(client, kernel, make_user, admin, tmp_path):
    owner = await make_user("owner")
    guest = await make_user("guest", permissions=["connections.use_localshell"])
    connection_response = await client.post(
        "/api/v1/connections",
        json={"name": "shared shell", "protocol": "localshell", "host": "127.0.0.1", "port": 1},
        headers=owner.headers,
    )
    assert connection_response.status_code == 201, await connection_response.get_data()
    connection_id = (await connection_response.get_json())["id"]
    shared = await client.put(
        f"/api/v1/connections/{connection_id}", json={"shared": True}, headers=owner.headers
    )
    assert shared.status_code == 200, await shared.get_data()
    async with await open_screen(client, kernel, guest, connection_id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        unshared = await client.put(
            f"/api/v1/connections/{connection_id}", json={"shared": False}, headers=owner.headers
        )
        assert unshared.status_code == 200
        assert await screen.until_closed() == 4003
        assert "shared" in screen.messages[-1]["message"]
        assert screen.messages[-1]["reason"] == "not_shared"
    # losing the permission through a role change closes the owner's own socket too
    roles = await (await client.get("/api/v1/roles", headers=admin.headers)).get_json()
    user_role = next(r for r in roles["roles"] if r["name"] == "user")
    async with await open_screen(client, kernel, owner, connection_id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        kept = [p for p in user_role["permissions"] if p != "connections.use_localshell"]
        changed = await client.put(
            f"/api/v1/roles/{user_role['id']}", json={"permissions": kept}, headers=admin.headers
        )
        assert changed.status_code == 200, await changed.get_data()
        assert await screen.until_closed() == 4003
        assert "connections.use_localshell" in screen.messages[-1]["message"]
        assert screen.messages[-1]["reason"] == "permission_withdrawn"


async def test_the_periodic_access_check_gives_the_same_reason_as_the_change(
    client, kernel, make_user
):
    """Whichever closes the socket first, the unshare itself or the sessions' own access
    check, the client reads the same reason (the check alone is exercised here)."""
    from hostgate.db.models.connections import Connection

    owner = await make_user("owner")
    guest = await make_user("guest", permissions=["connections.use_localshell"])
    created = await client.post(
        "/api/v1/connections",
        json={"name": "shared", "protocol": "localshell", "host": "127.0.0.1", "port": 1},
        headers=owner.headers,
    )
    connection_id = (await created.get_json())["id"]
    await client.put(
        f"/api/v1/connections/{connection_id}", json={"shared": True}, headers=owner.headers
    )
    async with await open_screen(client, kernel, guest, connection_id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        # the sharing flag changes behind the API's back: only the access check can notice
        async with kernel.db.session() as db:
            row = await db.get(Connection, connection_id)
            row.shared = False
            db.add(row)
            await db.commit()
        for session in kernel.terminal_sessions.all():
            await session.enforce_access()
        assert await screen.until_closed() == 4003
        assert screen.messages[-1]["message"] == "the connection is no longer shared with you"
        assert screen.messages[-1]["reason"] == "not_shared"  # the same code, too


async def test_a_lockout_leaves_open_sockets_alone_a_password_reset_ends_them(
    client, kernel, admin, shell_connection
):
    """Anyone can lock an account by mistyping its password: that stops new logins only
    (docs/identity.md). An admin ends the account's sessions on purpose: reset password."""
    user, connection = shell_connection
    await client.put(
        "/api/v1/settings", json={"security.max_login_attempts": 2}, headers=admin.headers
    )
    async with await open_screen(client, kernel, user, connection.id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        for _ in range(2):
            failed = await client.post(
                "/api/v1/auth/login", json={"username": user.username, "password": "wrong-one"}
            )
            assert failed.status_code == 401
        refused = await client.post(
            "/api/v1/auth/login", json={"username": user.username, "password": user.password}
        )
        assert (await refused.get_json())["code"] == "account_locked"
        for session in kernel.terminal_sessions.all():
            await session.enforce_access()  # what the once-a-second check does
        await screen.run("echo still-$((1+1))", "still-2")
        assert (await client.get("/api/v1/profile", headers=user.headers)).status_code == 200
        reset = await client.post(
            f"/api/v1/users/{user.id}/reset-password",
            json={"newPassword": "A-new-password-42"},
            headers=admin.headers,
        )
        assert reset.status_code == 200, await reset.get_json()
        assert await screen.until_closed() == 4001
        assert screen.messages[-1]["type"] == "error"
        assert screen.messages[-1]["reason"] == "revoked"


async def test_a_personal_api_token_opens_a_socket_and_revoking_it_closes_the_socket(
    client, kernel, shell_connection
):
    user, connection = shell_connection
    made = await (
        await client.post(
            "/api/v1/profile/api-tokens", headers=user.headers, json={"name": "automation"}
        )
    ).get_json()
    token = {"Authorization": f"Bearer {made['secret']}"}
    ticket = (await (await client.post("/api/v1/auth/ws-ticket", headers=token)).get_json())[
        "ticket"
    ]
    async with client.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await screen.run("echo scripted-$((6*7))", "scripted-42")
        response = await client.delete(
            f"/api/v1/profile/api-tokens/{made['token']['id']}", headers=user.headers
        )
        assert response.status_code == 200
        assert await screen.until_closed() == 4001
        assert screen.messages[-1]["reason"] == "revoked"
    # a ticket asked for with a revoked token is refused before any socket
    refused = await client.post("/api/v1/auth/ws-ticket", headers=token)
    assert refused.status_code == 401


async def test_a_token_without_the_protocol_permission_cannot_open_its_socket(
    client, kernel, shell_connection
):
    user, connection = shell_connection
    made = await (
        await client.post(
            "/api/v1/profile/api-tokens",
            headers=user.headers,
            json={"name": "read only", "permissions": []},
        )
    ).get_json()
    token = {"Authorization": f"Bearer {made['secret']}"}
    ticket = (await (await client.post("/api/v1/auth/ws-ticket", headers=token)).get_json())[
        "ticket"
    ]
    async with client.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        assert await screen.until_closed() == 4003
        assert screen.messages[-1]["reason"] == "forbidden"


async def test_deleting_the_connection_or_the_user_closes_the_socket_saying_so(
    client, kernel, make_user, make_connection, admin, shell_connection, tmp_path
):
    user, connection = shell_connection
    async with await open_screen(client, kernel, user, connection.id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        deleted = await client.delete(f"/api/v1/connections/{connection.id}", headers=user.headers)
        assert deleted.status_code == 200, await deleted.get_data()
        assert await screen.until_closed() == 4003
        assert screen.messages[-1] == {
            "type": "error",
            "message": "the connection was deleted",
            "reason": "connection_deleted",
        }
    code, screen = await deleting_a_user_with_an_open_shell(
        client, kernel, make_user, make_connection, admin, tmp_path
    )
    assert code == 4001
    assert screen.messages[-1]["reason"] == "user_deleted"


async def deleting_a_user_with_an_open_shell(
    client, kernel, make_user, make_connection, admin, tmp_path
) -> tuple[int, Screen]:
    """A new user's local shell, open while an admin deletes the user: its close code and
    screen."""
    dave = await make_user("dave")
    theirs = await make_connection(
        dave, "localshell", "127.0.0.1", 1, extra={"home": str(tmp_path / "home")}
    )
    async with await open_screen(client, kernel, dave, theirs.id) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        gone = await client.delete(f"/api/v1/users/{dave.id}", headers=admin.headers)
        assert gone.status_code == 200, await gone.get_data()
        code = await screen.until_closed()
    return code, screen


async def test_a_deleted_users_socket_closed_by_the_access_recheck_says_user_deleted(
    client, kernel, make_user, make_connection, admin, shell_connection, tmp_path, monkeypatch
):
    # deleting a user deletes its login sessions in the same commit: the re-check of
    # open sessions that the commit starts may close the socket before the deletion's
    # own close does, and must name the deletion too
    async def not_here(*args: object, **kwargs: object) -> int:
        return 0

    monkeypatch.setattr(kernel.live, "close_where", not_here)
    code, screen = await deleting_a_user_with_an_open_shell(
        client, kernel, make_user, make_connection, admin, tmp_path
    )
    assert code == 4001
    assert screen.messages[-1]["reason"] == "user_deleted"


async def token_socket_closed_by(
    client: Any, kernel: Any, admin: Any, shell_connection: Any, act: Any
):
    """Open a shell with an API token of the connection's owner, ``await act(user)`` as
    an admin; return the socket's close code, its screen and the token's secret."""
    user, connection = shell_connection
    made = await (
        await client.post("/api/v1/profile/api-tokens", headers=user.headers, json={"name": "ci"})
    ).get_json()
    token = {"Authorization": f"Bearer {made['secret']}"}
    ticket = (await (await client.post("/api/v1/auth/ws-ticket", headers=token)).get_json())[
        "ticket"
    ]
    async with client.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await act(user)
        code = await screen.until_closed()
    return code, screen, token


async def test_an_admin_password_reset_closes_a_token_socket_and_ends_the_token(
    client, kernel, admin, shell_connection
):
    async def reset(user: Any) -> None:
        response = await client.post(
            f"/api/v1/users/{user.id}/reset-password",
            json={"newPassword": "A-new-password-42"},
            headers=admin.headers,
        )
        assert response.status_code == 200, await response.get_json()

    code, screen, token = await token_socket_closed_by(
        client, kernel, admin, shell_connection, reset
    )
    assert code == 4001
    assert screen.messages[-1]["reason"] == "revoked"
    refused = await client.post("/api/v1/auth/ws-ticket", headers=token)
    assert (await refused.get_json())["code"] == "api_token_revoked"


async def test_a_role_with_no_permissions_closes_a_token_socket_and_ends_the_token(
    client, kernel, admin, shell_connection
):
    created = await client.post(
        "/api/v1/roles", json={"name": "nothing", "permissions": []}, headers=admin.headers
    )
    assert created.status_code == 201, await created.get_json()

    async def strip(user: Any) -> None:
        response = await client.put(
            f"/api/v1/users/{user.id}", json={"role": "nothing"}, headers=admin.headers
        )
        assert response.status_code == 200, await response.get_json()

    code, screen, token = await token_socket_closed_by(
        client, kernel, admin, shell_connection, strip
    )
    assert code == 4001
    assert screen.messages[-1]["reason"] == "revoked"
    refused = await client.get("/api/v1/auth/me", headers=token)
    assert (await refused.get_json())["code"] == "api_token_revoked"


async def test_deleting_a_user_closes_their_token_socket_and_ends_the_token(
    client, kernel, admin, shell_connection
):
    async def delete(user: Any) -> None:
        response = await client.delete(f"/api/v1/users/{user.id}", headers=admin.headers)
        assert response.status_code == 200, await response.get_json()

    code, screen, token = await token_socket_closed_by(
        client, kernel, admin, shell_connection, delete
    )
    assert code == 4001
    assert screen.messages[-1]["reason"] == "user_deleted"
    assert (await client.get("/api/v1/auth/me", headers=token)).status_code == 401
