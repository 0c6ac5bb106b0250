"""Work that must happen once, with two real ``hostgate serve`` nodes on PostgreSQL and Redis.

A notification rule fires once per event and its automatic retry is made once,
by the node holding the lease, whichever node failed the first attempt; the
lease moves to the other node when its holder is killed (SIGKILL), and the
survivor then runs the retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from hostgate.testing import HttpReceiver, start_receiver
from redis import Redis

from testsupport.gateway import GatewayProcess, write_test_config
from testsupport.postgres import create_database
from testsupport.receivers import http_receiver  # noqa: F401
from testsupport.redisd import RedisServer, started_redis

API = "/api/v1"
LEASE_KEY = "hostgate:lease:housekeeping"
LEASE_SECONDS = 3
TICK = 0.5  # seconds between two turns of the retry scheduler (production: 30)
# "a few scheduler turns later": long enough for a second retry, had any node made one
FEW_TURNS = 3 * TICK


# one client for the API calls and polls (``httpx.get`` built a client and its TLS
# context per call); no keep-alive: each call opens its own connection, as before
HTTP = httpx.Client(timeout=30, limits=httpx.Limits(max_keepalive_connections=0))


def node_config(path: Path) -> Path:
    """The suite's test config with quick automatic retries, looked for every ``TICK``."""
    write_test_config(path)
    with path.open("a") as out:
        out.write("\n[plugins.notifications]\nretry_delays = [1.0, 1.0]\n")
        out.write(f"retry_scheduler_seconds = {TICK}\n")
    return path


def eager_config(path: Path) -> Path:
    """Also: the lease holder takes entries pending over 1 s as left over (every turn)."""
    node_config(path)
    with path.open("a") as out:
        out.write("orphan_seconds = 1.0\n")
    return path


@dataclass
class Pair:
    """Two nodes, their Redis, the webhook receiver and the admin's headers (``setup``)."""

    nodes: tuple[GatewayProcess, ...]
    redis: RedisServer
    receiver: HttpReceiver
    headers: dict[str, str]


@pytest.fixture(scope="module")
def pair(tmp_path_factory, postgres_server) -> Iterator[Pair]:
    """One pair for the module's tests with the usual config (starting two nodes is most
    of such a test's time). Each test counts only what it made (log entries, requests);
    the test that kills a node leaves the pair running again."""
    tmp_path = tmp_path_factory.mktemp("once-only")
    config = node_config(tmp_path / "nodes.toml")
    running = start_receiver()
    try:
        with (
            started_redis() as redis_server,
            two_nodes(tmp_path, create_database(postgres_server), redis_server, config) as nodes,
        ):
            headers = setup(nodes[0], running.receiver)
            yield Pair(nodes, redis_server, running.receiver, headers)
    finally:
        running.stop()


@pytest.fixture
def eager_nodes(tmp_path, postgres_url, redis_server) -> Iterator[tuple[GatewayProcess, ...]]:
    config = eager_config(tmp_path / "nodes.toml")
    with two_nodes(tmp_path, postgres_url, redis_server, config) as nodes:
        yield nodes


@contextlib.contextmanager
def two_nodes(
    tmp_path: Path, postgres_url: str, redis_server, config: Path
) -> Iterator[tuple[GatewayProcess, ...]]:
    env = {
        "HOSTGATE_DATABASE_URL": postgres_url,
        "HOSTGATE_REDIS_URL": redis_server.url,
        "HOSTGATE_LEASE_SECONDS": str(LEASE_SECONDS),
        "HOSTGATE_LOG_LEVEL": "INFO",  # the node id that takes the lease is logged
        "HOSTGATE_CONFIG": str(config),
    }
    started: list[GatewayProcess] = []
    shared = tmp_path / "shared-recordings"  # one directory for every node (docs/cluster.md)
    try:
        for name in ("node-a", "node-b"):  # one after the other: the first migrates
            started.append(GatewayProcess(tmp_path / name, env, recordings=shared).start())
        yield tuple(started)
    finally:
        for node in reversed(started):
            node.stop()
        for node in started:
            assert node.unhandled() == [], node.log()[-3000:]


def holder_of_lease(redis_url: str, nodes: tuple[GatewayProcess, ...]) -> GatewayProcess:
    """The node whose id is in the lease key (each logs its id when it takes it)."""
    client = Redis.from_url(redis_url)
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            value = client.get(LEASE_KEY)
            if value:
                node_id = value.decode()
                for node in nodes:
                    if re.search(rf"node {node_id} now runs the once-only work", node.log()):
                        return node
            time.sleep(0.2)
    finally:
        client.close()
    raise AssertionError("no node logged taking the lease")


def setup(node: GatewayProcess, receiver) -> dict[str, str]:
    token = node.setup_admin()
    headers = {"Authorization": f"Bearer {token}"}
    response = HTTP.put(
        f"{node.url}{API}/notifications/channels/webhook",
        headers=headers,
        json={"enabled": True, "config": {"url": receiver.url("/hook")}},
    )
    assert response.status_code == 200, response.text
    response = HTTP.post(
        f"{node.url}{API}/notifications/rules",
        headers=headers,
        json={
            "name": "new accounts",
            "events": ["user.created"],
            "actions": [{"channel": "webhook", "recipients": []}],
        },
    )
    assert response.status_code == 201, response.text
    return headers


def create_user(node: GatewayProcess, headers: dict[str, str], username: str) -> None:
    response = HTTP.post(
        f"{node.url}{API}/users",
        headers=headers,
        json={"username": username, "password": "long enough pw"},
    )
    assert response.status_code == 201, response.text


def all_entries(node: GatewayProcess, headers: dict[str, str]) -> list[dict]:
    response = HTTP.get(
        f"{node.url}{API}/notifications/log", headers=headers, params={"limit": 200}
    )
    assert response.status_code == 200, response.text
    return list(response.json()["entries"])


async def new_entries(node, headers, seen: set[str], count: int) -> list[dict]:
    """Wait until ``count`` entries not in ``seen`` exist and none is pending; those."""
    deadline = time.monotonic() + 30
    entries: list[dict] = []
    while time.monotonic() < deadline:
        entries = [e for e in all_entries(node, headers) if e["id"] not in seen]
        if len(entries) >= count and all(e["status"] != "pending" for e in entries):
            return entries
        await asyncio.sleep(0.2)
    raise AssertionError(f"log entries did not settle: {entries}")


async def failed_then_retried_once(node, other, headers, receiver, username) -> None:
    """An event on ``node`` whose first attempt fails: one retry in all, seen from both."""
    seen = {e["id"] for e in all_entries(other, headers)}
    before = len(receiver.received("/hook"))
    receiver.fail_next = 1
    create_user(node, headers, username)
    await new_entries(other, headers, seen, 2)
    # a few scheduler turns later there is still one retry, not one per node
    await asyncio.sleep(FEW_TURNS)
    entries = [e for e in all_entries(other, headers) if e["id"] not in seen]
    assert sorted((e["attempt"], e["status"]) for e in entries) == [(1, "failed"), (2, "sent")]
    assert len(receiver.received("/hook")) - before == 2
    assert all(username in r.body.decode() for r in receiver.received("/hook")[before:])


async def test_a_rule_notifies_once_per_event_and_retries_once_with_two_nodes(pair):
    nodes, headers, receiver = pair.nodes, pair.headers, pair.receiver
    holder = holder_of_lease(pair.redis.url, nodes)
    other = next(n for n in nodes if n is not holder)
    seen = {e["id"] for e in all_entries(nodes[0], headers)}
    before = len(receiver.received("/hook"))
    # events on each node: one delivery per event, each to the receiver once
    create_user(nodes[0], headers, "alice")
    create_user(nodes[1], headers, "bob")
    entries = await new_entries(nodes[1], headers, seen, 2)
    await asyncio.sleep(FEW_TURNS)  # and no node sends any of them again
    entries = [e for e in all_entries(nodes[0], headers) if e["id"] not in seen]
    assert sorted((e["attempt"], e["status"]) for e in entries) == [(1, "sent"), (1, "sent")]
    bodies = [r.body.decode() for r in receiver.received("/hook")[before:]]
    assert len(bodies) == 2
    assert sum("alice" in b for b in bodies) == 1 and sum("bob" in b for b in bodies) == 1
    # a failed first attempt on the node without the lease: the holder retries, once
    await failed_then_retried_once(other, holder, headers, receiver, "carol")
    # and on the holder itself
    await failed_then_retried_once(holder, other, headers, receiver, "dave")


async def test_the_lease_moves_to_the_other_node_when_its_holder_is_killed(pair):
    nodes, redis_url = pair.nodes, pair.redis.url
    holder = holder_of_lease(redis_url, nodes)
    survivor = next(n for n in nodes if n is not holder)
    holder.kill()  # SIGKILL: it never hands the lease back
    took = holder_of_lease(redis_url, (survivor,))
    assert took is survivor
    # the survivor now runs the retries
    await failed_then_retried_once(survivor, survivor, pair.headers, pair.receiver, "erin")
    # the killed node comes back and does not take the lease from the survivor
    holder.start()
    await asyncio.sleep(LEASE_SECONDS)
    assert holder_of_lease(redis_url, nodes) is survivor


async def test_a_delivery_in_flight_on_one_node_is_not_sent_again_by_the_lease_holder(
    eager_nodes,
    redis_server,
    http_receiver,  # noqa: F811
):
    """The holder re-queues entries pending longer than ``orphan_seconds`` (a dead node
    left them); a slow send on a live node is one of those, and its claim keeps the
    holder from sending it a second time."""
    nodes = eager_nodes
    holder = holder_of_lease(redis_server.url, nodes)
    other = next(n for n in nodes if n is not holder)
    headers = setup(nodes[0], http_receiver)
    http_receiver.delay = 4.0  # the receiver answers each request after 4 s
    try:
        create_user(other, headers, "frank")
        [entry] = await new_entries(holder, headers, set(), 1)
        await asyncio.sleep(FEW_TURNS)  # a few more turns of the holder's scheduler
    finally:
        http_receiver.delay = 0.0
    assert (entry["attempt"], entry["status"]) == (1, "sent")
    assert len(all_entries(holder, headers)) == 1
    [request] = http_receiver.received("/hook")
    assert "frank" in request.body.decode()
    # the race happened: the holder took the entry as left over and found it claimed
    assert f"notification {entry['id']} is being sent by another node" in holder.log()


def test_a_serve_node_with_its_own_recordings_directory_is_refused(
    tmp_path, postgres_url, redis_server
):
    env = {"HOSTGATE_DATABASE_URL": postgres_url, "HOSTGATE_REDIS_URL": redis_server.url}
    first = GatewayProcess(tmp_path / "node-a", env).start()
    try:
        second = GatewayProcess(tmp_path / "node-b", env).spawn()
        assert second.wait_refused() != 0
        log = second.log()
        assert "is not the one the other gateway nodes use: it has no marker file" in log
        assert "one shared recordings directory" in log
    finally:
        first.stop()
