"""Two gateway nodes sharing one real redis-server (and one database): tickets, limits,
closes, Redis going down and live view across nodes, through each node's own app.

Node A is the suite's ``app``/``client``/``kernel`` (configured with the Redis);
node B is a second app on the same data directory and Redis.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.closereasons import CloseReason
from hostgate.config import Config
from hostgate.security.ratelimit import LOGIN_PER_IP
from hostgate.services.sessions import remote_session, terminal_watch

from tests.services.sessions import localshell
from tests.services.sessions.helpers import Screen, socket_path

API = "/api/v1"
CLOSE_GUARD = 60.0
"""Seconds a close told by the other node may take: a hang guard, not the proof (see
``no_periodic_check``). Node B sends the close frame after closing the shell (up to
CLOSE_TIMEOUT), the recording and the history rows on the SQLite file both nodes share;
under load that took longer than the 5 s these tests once allowed."""


@pytest.fixture
def config(hostgate_config: Config, redis_server: Any) -> Config:
    return hostgate_config.with_overrides(redis_url=redis_server.url)


@pytest.fixture
async def node_b(config: Config) -> AsyncIterator[Any]:
    application = create_app(config, plugins=[localshell])
    async with application.test_app():
        yield application


@pytest.fixture
def no_periodic_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Node B's own 30-second access check never comes: a close is the other node's doing."""
    monkeypatch.setattr(remote_session, "LOGIN_CHECK_SECONDS", math.inf)


async def ticket_from(client: Any, user: Any) -> str:
    response = await client.post(f"{API}/auth/ws-ticket", headers=user.headers)
    assert response.status_code == 200, await response.get_json()
    return str((await response.get_json())["ticket"])


async def test_a_ticket_from_node_a_opens_a_socket_on_node_b_once(client, node_b, shell_connection):
    user, connection = shell_connection
    ticket = await ticket_from(client, user)
    client_b = node_b.test_client()
    async with client_b.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        assert screen.messages[0] == {"type": "status", "message": "Connected"}
        assert [s.id for s in kernel_of(node_b).live.all()] != []
    for again in (client, client_b):
        async with again.websocket(socket_path("localshell", ticket, connection.id)) as socket:
            screen = Screen(socket)
            assert await screen.until_closed() == 4001
            assert {
                "type": "error",
                "message": "Invalid or expired ticket",
                "reason": "ticket_invalid",
            } in screen.messages


async def test_the_login_limit_is_one_budget_across_nodes(client, node_b):
    client_b = node_b.test_client()
    for attempt in range(LOGIN_PER_IP.attempts):
        # another name each time: no account lockout, only the per-IP budget counts
        body = {"username": f"nobody-{attempt}", "password": "wrong password"}
        response = await (client, client_b)[attempt % 2].post(f"{API}/auth/login", json=body)
        assert response.status_code == 401, await response.get_json()
    waits = []
    for node in (client, client_b, client):
        body = {"username": "nobody-else", "password": "wrong password"}
        response = await node.post(f"{API}/auth/login", json=body)
        assert response.status_code == 429
        assert (await response.get_json())["code"] == "rate_limited"
        waits.append(int(response.headers["Retry-After"]))
    # one window on one clock: B's answer lies between A's before and after it
    assert LOGIN_PER_IP.window_seconds >= waits[0] >= waits[1] >= waits[2] >= waits[0] - 1


async def test_logging_out_on_node_a_closes_the_socket_held_by_node_b(
    client, kernel, node_b, shell_connection, no_periodic_check
):
    user, connection = shell_connection
    ticket = await ticket_from(client, user)
    client_b = node_b.test_client()
    async with client_b.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        assert kernel.live.all() == []  # node A holds nothing itself
        response = await client.post(f"{API}/auth/logout", headers=user.headers)
        assert response.status_code in (200, 204)
        # node B's own login check is off (no_periodic_check): the bus did it
        assert await screen.until_closed(timeout=CLOSE_GUARD) == 4001
        assert {"type": "error", "message": "logout", "reason": "revoked"} in screen.messages
    assert kernel_of(node_b).live.all() == []


async def test_close_where_on_node_a_closes_what_matches_on_node_b(
    client, kernel, node_b, make_user, shell_connection, no_periodic_check
):
    user, connection = shell_connection
    client_b = node_b.test_client()
    path = socket_path("localshell", await ticket_from(client, user), connection.id)
    async with client_b.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        [held] = kernel_of(node_b).live.all()
        assert (
            await kernel.live.close_where(
                "not this one", reason_code=CloseReason.TERMINATED, user_id="someone-else"
            )
            == 0
        )
        assert (
            await kernel.live.close_where(
                "terminated elsewhere", reason_code=CloseReason.TERMINATED, id=held.id
            )
            == 0
        )
        assert await screen.until_closed(timeout=CLOSE_GUARD) == 4003
        assert {
            "type": "error",
            "message": "terminated elsewhere",
            "reason": "terminated",
        } in screen.messages


async def test_redis_down_answers_503_then_recovers_without_a_restart(
    client, node_b, make_user, redis_server, shell_connection
):
    user, connection = shell_connection
    client_b = node_b.test_client()
    ticket = await ticket_from(client, user)
    redis_server.stop()
    for node in (client, client_b):
        refused = await node.post(f"{API}/auth/ws-ticket", headers=user.headers)
        assert refused.status_code == 503
        assert await refused.get_json() == {
            "error": "The gateway's shared state (Redis) is unavailable; try again in a moment",
            "code": "shared_state_unavailable",
        }
        assert refused.headers["Retry-After"] == "5"
        login = await node.post(
            f"{API}/auth/login", json={"username": user.username, "password": user.password}
        )
        assert login.status_code == 503
        assert (await login.get_json())["code"] == "shared_state_unavailable"
    # a socket cannot check its ticket: closed with 1013 (try again later), not let in
    async with client_b.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        assert await screen.until_closed() == 1013
    # what does not need Redis still works
    me = await client_b.get(f"{API}/auth/me", headers=user.headers)
    assert me.status_code == 200
    redis_server.start()
    login = await client_b.post(
        f"{API}/auth/login", json={"username": user.username, "password": user.password}
    )
    assert login.status_code == 200, await login.get_json()
    fresh = await ticket_from(client, user)
    async with client_b.websocket(socket_path("localshell", fresh, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")


async def test_with_redis_down_a_logout_still_closes_this_nodes_sockets(
    client, kernel, redis_server, shell_connection
):
    user, connection = shell_connection
    ticket = await ticket_from(client, user)
    async with client.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        redis_server.stop()
        # the revoke is in the database and this node's socket closes; the other nodes
        # are not told (their periodic check ends theirs), and the request does not fail
        response = await client.post(f"{API}/auth/logout", headers=user.headers)
        assert response.status_code in (200, 204), await response.get_json()
        assert await screen.until_closed() == 4001
    assert kernel.live.all() == []


def watch_path(session_id: str, ticket: str) -> str:
    return f"/ws/sessions/{session_id}/watch?ticket={ticket}"


def watchers(screen: Screen) -> list[list[str]]:
    return [
        [w["username"] for w in m["watchers"]] for m in screen.messages if m["type"] == "watchers"
    ]


async def until_true(check: Any, what: str) -> None:
    for _ in range(200):
        if check():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"never: {what}")


async def test_a_viewer_on_node_a_watches_a_terminal_held_by_node_b(
    client, kernel, node_b, admin, shell_connection
):
    user, connection = shell_connection
    client_b = node_b.test_client()
    path = socket_path("localshell", await ticket_from(client, user), connection.id)
    async with client_b.websocket(path) as socket:
        watched = Screen(socket)
        await watched.until("$ ")
        await watched.run("echo before-$((1+1))", "before-2")
        await watched.prompt()
        [session] = kernel_of(node_b).terminal_sessions.all()
        assert kernel.terminal_sessions.get(session.id) is None  # node A does not hold it

        viewer_path = watch_path(session.id, await ticket_from(client, admin))
        async with client.websocket(viewer_path) as viewing:
            viewer = Screen(viewing)
            await viewer.until("before-2")  # the screen, drawn on node B
            [hello] = [m for m in viewer.messages if m["type"] == "watch"]
            assert hello["sessionId"] == session.id
            assert hello["username"] == user.username
            assert (hello["cols"], hello["rows"]) == (80, 24)
            # the watched user, on node B, is told who watches from node A
            while not watchers(watched):
                assert await watched.pump()
            assert watchers(watched) == [["admin"]]
            # output and resizes reach node A's viewer as they happen
            await watched.run("echo after-$((2+3))", "after-5")
            await viewer.until("after-5")
            await viewing.send(json.dumps({"type": "data", "data": "echo hijack-$((3*3))\r"}))
            await watched.resize(100, 30)
            await watched.run("echo resized-$((6+6))", "resized-12")
            await viewer.until("resized-12")
            assert {"type": "resize", "cols": 100, "rows": 30} in viewer.messages
            assert b"hijack-9" not in watched.output
            # node B lists the watch node A holds
            listed = await client_b.get(f"{API}/sessions/active", headers=admin.headers)
            kinds = {s["kind"] for s in (await listed.get_json())["sessions"]}
            assert kinds == {"terminal", "watch"}
        # the viewer left: node B stops feeding it and tells the watched user
        while len(watchers(watched)) < 2:
            assert await watched.pump()
        assert watchers(watched)[-1] == []
        await until_true(lambda: session.viewers == [], "node B untaps the session")

        # a watch ends with the session it watches
        viewer_path = watch_path(session.id, await ticket_from(client, admin))
        async with client.websocket(viewer_path) as viewing:
            viewer = Screen(viewing)
            await viewer.until("resized-12")
            await kernel_of(node_b).terminal_sessions.terminate(session.id, "ended for the test")
            assert await viewer.until_closed() == 1000
    response = await client.get(
        f"{API}/audit?eventType=session.live_view_started", headers=admin.headers
    )
    started = (await response.get_json())["entries"]
    assert len(started) == 2
    assert started[0]["details"]["sessionId"] == session.id
    assert started[0]["details"]["ownerUsername"] == user.username


async def test_watching_a_session_no_node_holds_is_refused(client, node_b, admin):
    async with client.websocket(
        watch_path("no-such-session", await ticket_from(client, admin))
    ) as s:
        screen = Screen(s)
        assert await screen.until_closed() == 4002
        assert {
            "type": "error",
            "message": "Session not found or not running on this gateway",
            "reason": "not_found",
        } in screen.messages


async def test_a_permission_withdrawn_on_node_a_closes_the_socket_held_by_node_b(
    client, node_b, admin, make_user, shell_connection, no_periodic_check
):
    user, connection = shell_connection
    await make_user("carol", permissions=[])  # and its role "role-carol", with nothing
    client_b = node_b.test_client()
    path = socket_path("localshell", await ticket_from(client, user), connection.id)
    async with client_b.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        changed = await client.put(
            f"{API}/users/{user.id}", headers=admin.headers, json={"role": "role-carol"}
        )
        assert changed.status_code == 200, await changed.get_json()
        # node B's own check is off (no_periodic_check): node A told it to re-check
        assert await screen.until_closed(timeout=CLOSE_GUARD) == 4003
        assert {
            "type": "error",
            "message": "Permission connections.use_localshell was withdrawn",
            "reason": "permission_withdrawn",
        } in screen.messages


async def test_a_viewer_on_node_a_loses_view_any_on_node_b_and_the_watch_closes(
    client, node_b, admin, make_user, shell_connection, monkeypatch
):
    """The watch is relayed (the terminal is node B's) and the role changes on node B:
    node A, which holds the viewer, re-checks at once."""
    # node A's own 30-second watch check never comes: the close is the bus's doing
    monkeypatch.setattr(terminal_watch, "CHECK_SECONDS", math.inf)
    user, connection = shell_connection
    auditor = await make_user("carol", permissions=["sessions.view_any"])
    client_b = node_b.test_client()
    path = socket_path("localshell", await ticket_from(client, user), connection.id)
    async with client_b.websocket(path) as socket:
        watched = Screen(socket)
        await watched.until("$ ")
        await watched.run("echo before-$((1+1))", "before-2")
        [session] = kernel_of(node_b).terminal_sessions.all()
        async with client.websocket(
            watch_path(session.id, await ticket_from(client, auditor))
        ) as viewing:
            viewer = Screen(viewing)
            await viewer.until("before-2")  # the screen, drawn on node B
            changed = await client_b.put(
                f"{API}/roles/{auditor.role_id}", headers=admin.headers, json={"permissions": []}
            )
            assert changed.status_code == 200, await changed.get_json()
            assert await viewer.until_closed(timeout=CLOSE_GUARD) == 4003
            assert {
                "type": "error",
                "message": "Permission sessions.view_any was withdrawn",
                "reason": "permission_withdrawn",
            } in viewer.messages
        await watched.run("echo still-$((2+2))", "still-4")


async def test_a_password_reset_on_node_a_ends_a_token_and_its_socket_on_node_b(
    client, node_b, admin, shell_connection, no_periodic_check
):
    user, connection = shell_connection
    client_b = node_b.test_client()
    made = await (
        await client.post(f"{API}/profile/api-tokens", headers=user.headers, json={"name": "ci"})
    ).get_json()
    token = {"Authorization": f"Bearer {made['secret']}"}
    response = await client_b.post(f"{API}/auth/ws-ticket", headers=token)
    ticket = (await response.get_json())["ticket"]
    async with client_b.websocket(socket_path("localshell", ticket, connection.id)) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        reset = await client.post(
            f"{API}/users/{user.id}/reset-password",
            headers=admin.headers,
            json={"newPassword": "A-new-password-42"},
        )
        assert reset.status_code == 200, await reset.get_json()
        assert await screen.until_closed(timeout=CLOSE_GUARD) == 4001
        assert screen.messages[-1]["reason"] == "revoked"
    refused = await client_b.get(f"{API}/auth/me", headers=token)
    assert (await refused.get_json())["code"] == "api_token_revoked"


async def test_both_nodes_write_one_audit_chain(client, node_b, admin):
    client_b = node_b.test_client()
    body = {"username": admin.username, "password": admin.password}
    for _ in range(3):
        for node in (client, client_b):
            response = await node.post(f"{API}/auth/login", json=body)
            assert response.status_code == 200, await response.get_json()
    for node in (client, client_b):
        verified = await node.get(f"{API}/audit/verify", headers=admin.headers)
        result = await verified.get_json()
        assert result["ok"] is True, result
        assert result["checked"] >= 6


async def test_a_setting_changed_on_node_a_is_served_by_node_b_at_once(client, node_b, admin):
    client_b = node_b.test_client()
    kernel_b = kernel_of(node_b)
    assert kernel_b.settings.get("security.max_sessions_per_user") != 3
    response = await client.put(
        f"{API}/settings", json={"security.max_sessions_per_user": 3}, headers=admin.headers
    )
    assert response.status_code == 200, await response.get_json()
    await until_true(
        lambda: kernel_b.settings.get("security.max_sessions_per_user") == 3,
        "node B reads the changed setting",
    )
    shown = await client_b.get(f"{API}/settings", headers=admin.headers)
    assert (await shown.get_json())["settings"]["security.max_sessions_per_user"] == 3


async def test_the_session_caps_count_every_nodes_sessions(
    client, kernel, node_b, admin, shell_connection
):
    user, connection = shell_connection
    response = await client.put(
        f"{API}/settings", json={"security.max_sessions_per_user": 1}, headers=admin.headers
    )
    assert response.status_code == 200
    kernel_b = kernel_of(node_b)
    await until_true(
        lambda: kernel_b.settings.get("security.max_sessions_per_user") == 1, "node B knows"
    )
    client_b = node_b.test_client()
    path = socket_path("localshell", await ticket_from(client, user), connection.id)
    async with client_b.websocket(path) as socket:
        await Screen(socket).until("$ ")
        # node B says its sessions changed: node A reads them (no heartbeat needed)
        await until_true(lambda: kernel.live.count(user_id=user.id) == 1, "node A counts it")
        # the user's one session is on node B: node A refuses a second one
        path = socket_path("localshell", await ticket_from(client, user), connection.id)
        async with client.websocket(path) as second:
            screen = Screen(second)
            assert await screen.until_closed() == 4008
            assert "Maximum 1 concurrent sessions per user." in screen.messages[-1]["message"]


async def test_a_restore_on_node_a_closes_node_bs_sockets_and_node_b_reloads(
    client, kernel, node_b, shell_connection, tmp_path, monkeypatch, no_periodic_check
):
    from hostgate.services.backup import Backups

    from tests.services.backup.support import CHEAP, export_to, restore_from

    monkeypatch.setattr(Backups, "kdf_cost", CHEAP)
    user, connection = shell_connection
    kernel_b = kernel_of(node_b)
    await kernel.settings.update({"app.name": "Before Export"})
    archive = await export_to(kernel, tmp_path / "backup.geb", include_recordings=False)
    await kernel.settings.update({"app.name": "After Export"})
    await until_true(lambda: kernel_b.settings.get("app.name") == "After Export", "B follows")

    client_b = node_b.test_client()
    path = socket_path("localshell", await ticket_from(client, user), connection.id)
    async with client_b.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        await restore_from(kernel, archive)
        # closed before the database is replaced, while the login session is still valid
        assert await screen.until_closed(timeout=CLOSE_GUARD) == 4003
        assert {
            "type": "error",
            "message": "the instance is being restored from a backup",
            "reason": "restoring",
        } in screen.messages
    assert kernel.settings.get("app.name") == "Before Export"
    await until_true(lambda: kernel_b.settings.get("app.name") == "Before Export", "node B reloads")


async def test_a_lockout_on_node_a_leaves_the_socket_on_node_b_a_password_reset_ends_it(
    client, node_b, admin, shell_connection, no_periodic_check
):
    """A lockout after failed sign-ins stops new logins only; an admin's reset ends sessions."""
    user, connection = shell_connection
    client_b = node_b.test_client()
    path = socket_path("localshell", await ticket_from(client, user), connection.id)
    async with client_b.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        body = {"username": user.username, "password": "not the password"}
        for _ in range(5):  # security.max_login_attempts
            response = await client.post(f"{API}/auth/login", json=body)
            assert response.status_code == 401, await response.get_json()
        refused = await client_b.post(
            f"{API}/auth/login", json={"username": user.username, "password": user.password}
        )
        assert (await refused.get_json())["code"] == "account_locked"
        for session in kernel_of(node_b).terminal_sessions.all():
            await session.enforce_access()  # what node B's once-a-second check does
        await screen.run("echo still-$((1+1))", "still-2")
        reset = await client.post(
            f"{API}/users/{user.id}/reset-password",
            json={"newPassword": "A-new-password-42"},
            headers=admin.headers,
        )
        assert reset.status_code == 200, await reset.get_json()
        assert await screen.until_closed(timeout=CLOSE_GUARD) == 4001
