"""Two real ``hostgate serve`` nodes on one PostgreSQL and one Redis behind a real HAProxy.

Round robin without stickiness: a login answered by one node is used on the other,
a ticket from one node opens a telnet terminal on the other once, logging out on
one node closes the socket the other holds, and the login limit is one budget.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from urllib.parse import urlencode

import httpx
import pytest
from hostgate.security.ratelimit import LOGIN_PER_IP
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from testsupport.gateway import ADMIN_PASSWORD, GatewayProcess
from testsupport.telnetd import telnetd  # noqa: F401

API = "/api/v1"


@pytest.fixture
def nodes(tmp_path, postgres_url, redis_server) -> Iterator[tuple[GatewayProcess, ...]]:
    env = {"HOSTGATE_DATABASE_URL": postgres_url, "HOSTGATE_REDIS_URL": redis_server.url}
    started: list[GatewayProcess] = []
    shared = tmp_path / "shared-recordings"  # one directory for every node (docs/cluster.md)
    try:
        # one after the other: the first migrates the empty database
        for name in ("node-a", "node-b"):
            started.append(GatewayProcess(tmp_path / name, env, recordings=shared).start())
        yield tuple(started)
    finally:
        for node in reversed(started):
            node.stop()
        for node in started:
            assert node.unhandled() == [], node.log()[-3000:]


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def ticket_on(node_url: str, token: str) -> str:
    async with httpx.AsyncClient(base_url=node_url, headers=bearer(token), timeout=30) as http:
        response = await http.post(f"{API}/auth/ws-ticket")
        assert response.status_code == 200, response.text
        return str(response.json()["ticket"])


async def closed(socket) -> tuple[int | None, str | None]:
    try:
        while True:
            await asyncio.wait_for(socket.recv(), 20)
    except ConnectionClosed:
        pass
    return socket.close_code, socket.close_reason


async def test_two_nodes_behind_haproxy_share_logins_tickets_closes_and_limits(
    nodes,
    haproxy,
    telnetd,  # noqa: F811
):
    node_a, node_b = nodes
    balancer = haproxy([node_a.port, node_b.port])
    admin = node_a.setup_admin()

    async with httpx.AsyncClient(base_url=balancer.url, timeout=30) as http:
        # a login answered by one node, the next requests answered by both
        login = await http.post(
            f"{API}/auth/login", json={"username": "admin", "password": ADMIN_PASSWORD}
        )
        assert login.status_code == 200, login.text
        token = login.json()["token"]
        served = set()
        for _ in range(4):
            me = await http.get(f"{API}/auth/me", headers=bearer(token))
            assert me.status_code == 200, me.text
            assert me.json()["user"]["username"] == "admin"
            served.add(me.headers["X-Hostgate-Node"])
        assert served == {"node1", "node2"}

        created = await http.post(
            f"{API}/connections",
            headers=bearer(admin),
            json={
                "name": "telnet box",
                "protocol": "telnet",
                "host": telnetd.host,
                "port": telnetd.port,
                "username": telnetd.username,
                "password": telnetd.password,
            },
        )
        assert created.status_code == 201, created.text
        connection_id = created.json()["id"]

    # a ticket from node A opens a terminal on node B, once
    ticket = await ticket_on(node_a.url, token)
    query = urlencode({"ticket": ticket, "connectionId": connection_id, "cols": 80, "rows": 24})
    async with connect(f"{node_b.ws_url}/ws/telnet?{query}") as socket:
        first = json.loads(await asyncio.wait_for(socket.recv(), 20))
        assert first == {"type": "status", "message": "Connected"}
        for again in (node_a, node_b):
            async with connect(f"{again.ws_url}/ws/telnet?{query}") as refused:
                assert await closed(refused) == (4001, "Invalid or expired ticket")
        # logging out on node A closes the terminal node B holds
        async with httpx.AsyncClient(base_url=node_a.url, timeout=30) as http:
            logout = await http.post(f"{API}/auth/logout", headers=bearer(token))
            assert logout.status_code in (200, 204), logout.text
        assert await closed(socket) == (4001, "logout")

    # the login limit per IP is one budget, whichever node answers
    refused_after = 0
    async with httpx.AsyncClient(base_url=balancer.url, timeout=30) as http:
        for attempt in range(2 * LOGIN_PER_IP.attempts):
            body = {"username": f"nobody-{attempt}", "password": "wrong"}
            response = await http.post(f"{API}/auth/login", json=body)
            if response.status_code == 429:
                break
            assert response.status_code == 401, response.text
            refused_after += 1
    # one successful login above already counted
    assert refused_after == LOGIN_PER_IP.attempts - 1
    waits = []
    for node in (node_a, node_b, node_a):
        response = httpx.post(
            f"{node.url}{API}/auth/login", json={"username": "x", "password": "y"}, timeout=30
        )
        assert response.status_code == 429
        waits.append(int(response.headers["Retry-After"]))
    assert waits[0] >= waits[1] >= waits[2] >= waits[0] - 1
