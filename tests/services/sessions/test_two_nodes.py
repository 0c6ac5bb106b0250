"""Two gateway nodes sharing one real redis-server (and one database): tickets, limits,
closes and Redis going down, through each node's own app.

Node A is the suite's ``app``/``client``/``kernel`` (configured with the Redis);
node B is a second app on the same data directory and Redis.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.config import Config
from hostgate.security.ratelimit import LOGIN_PER_IP

from tests.services.sessions import localshell
from tests.services.sessions.helpers import Screen, socket_path
from testsupport.wire import STEP

API = "/api/v1"


@pytest.fixture
def config(hostgate_config: Config, redis_server: Any) -> Config:
    return hostgate_config.with_overrides(redis_url=redis_server.url)


@pytest.fixture
async def node_b(config: Config) -> AsyncIterator[Any]:
    application = create_app(config, plugins=[localshell])
    async with application.test_app():
        yield application


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
            assert {"type": "error", "message": "Invalid or expired ticket"} in screen.messages


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
    client, kernel, node_b, shell_connection
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
        # well before the sockets' own 30-second login check: the bus did it
        assert await screen.until_closed(timeout=STEP / 2) == 4001
        assert {"type": "error", "message": "logout"} in screen.messages
    assert kernel_of(node_b).live.all() == []


async def test_close_where_on_node_a_closes_what_matches_on_node_b(
    client, kernel, node_b, make_user, shell_connection
):
    user, connection = shell_connection
    client_b = node_b.test_client()
    path = socket_path("localshell", await ticket_from(client, user), connection.id)
    async with client_b.websocket(path) as socket:
        screen = Screen(socket)
        await screen.until("$ ")
        [held] = kernel_of(node_b).live.all()
        assert await kernel.live.close_where("not this one", user_id="someone-else") == 0
        assert await kernel.live.close_where("terminated elsewhere", id=held.id) == 0
        assert await screen.until_closed(timeout=STEP / 2) == 4003
        assert {"type": "error", "message": "terminated elsewhere"} in screen.messages


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
