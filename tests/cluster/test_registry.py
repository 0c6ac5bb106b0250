"""The live-session registry: the same tests against the in-memory one and a real redis-server.

Each "node" is a registry with its own id over one shared backend (a
``MemoryBackend``, or the Redis).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from hostgate.cluster.registry import (
    MemoryBackend,
    MemoryRegistry,
    RedisRegistry,
    SessionRegistry,
)
from hostgate.cluster.shared import connect

DEAD_AFTER = 1.0


class Nodes:
    """Makes registries (nodes) over one backend, and can make the backend lose everything."""

    def __init__(self, make: Callable[[str], SessionRegistry], lose: Callable[[], Any]) -> None:
        self.make = make
        self.lose = lose

    def node(self) -> SessionRegistry:
        return self.make(uuid.uuid4().hex)


@pytest.fixture(params=["memory", "redis"])
async def nodes(request) -> AsyncIterator[Nodes]:
    if request.param == "memory":
        backend = MemoryBackend()

        def lose() -> None:
            backend.nodes.clear()
            backend.sessions.clear()
            backend.reaped.clear()

        async def alose() -> None:
            lose()

        yield Nodes(lambda node: MemoryRegistry(node, DEAD_AFTER, backend), alose)
        return
    server = request.getfixturevalue("redis_server")
    client = connect(server.url)

    async def flush() -> None:
        await client.flushdb()

    yield Nodes(lambda node: RedisRegistry(client, node, DEAD_AFTER), flush)
    await client.aclose()


def entry(session_id: str, **more: Any) -> dict[str, Any]:
    return {"id": session_id, "kind": "terminal", "user_id": "u1", **more}


async def past_dead_after() -> None:
    await asyncio.sleep(DEAD_AFTER * 1.5)


async def test_a_node_sees_the_entries_of_another(nodes):
    a, b = nodes.node(), nodes.node()
    assert await a.heartbeat() == "absent"  # not known before its first beat
    assert await a.heartbeat() == "ok"
    await b.heartbeat()
    await a.write({"s1": entry("s1"), "s2": entry("s2")}, [])
    await b.write({"s3": entry("s3", user_id="u2")}, [])
    seen = {e["id"]: e for e in await b.entries()}
    assert seen["s1"] == {**entry("s1"), "node": a.node_id}
    assert seen["s3"]["node"] == b.node_id
    assert set(seen) == {"s1", "s2", "s3"}
    assert (await b.get("s2")) == {**entry("s2"), "node": a.node_id}
    await a.write({"s2": entry("s2", kind="stream")}, ["s1"])
    assert await b.get("s1") is None
    assert (await b.get("s2"))["kind"] == "stream"
    assert await b.get("nope") is None


async def test_a_dead_nodes_entries_are_reaped_once_and_it_learns_it_was_declared_dead(nodes):
    a, b, c = nodes.node(), nodes.node(), nodes.node()
    for node in (a, b, c):
        await node.heartbeat()
    await a.write({"s1": entry("s1"), "s2": entry("s2")}, [])
    await b.write({"s3": entry("s3")}, [])
    assert await b.reap() == []  # everybody's heartbeat is fresh
    await past_dead_after()  # a stops beating; b and c go on
    await b.heartbeat()
    await c.heartbeat()
    taken = await asyncio.gather(b.reap(), c.reap())
    reaped = sorted(e["id"] for batch in taken for e in batch)
    assert reaped == ["s1", "s2"]  # each entry to one reaper only
    assert all(e["node"] == a.node_id for batch in taken for e in batch)
    assert sorted(e["id"] for e in await c.entries()) == ["s3"]
    assert await b.reap() == []
    # a comes back: told once that it was declared dead, then known again
    assert await a.heartbeat() == "reaped"
    assert await a.heartbeat() == "ok"


async def test_entries_of_an_unknown_node_are_reaped(nodes):
    ghost, b = nodes.node(), nodes.node()
    await ghost.write({"s1": entry("s1")}, [])  # never beat its heart
    await b.heartbeat()
    assert [e["id"] for e in await b.reap()] == ["s1"]


async def test_a_registry_that_lost_everything_says_absent(nodes):
    a = nodes.node()
    await a.heartbeat()
    await a.write({"s1": entry("s1")}, [])
    await nodes.lose()
    assert await a.entries() == []
    assert await a.heartbeat() == "absent"
    assert await a.heartbeat() == "ok"


async def test_a_node_that_leaves_takes_its_entries_along(nodes):
    a, b = nodes.node(), nodes.node()
    await a.heartbeat()
    await b.heartbeat()
    await a.write({"s1": entry("s1")}, [])
    await b.write({"s2": entry("s2")}, [])
    await a.leave()
    assert [e["id"] for e in await b.entries()] == ["s2"]
    await past_dead_after()
    await b.heartbeat()
    assert await b.reap() == []  # a left: nothing of it to reap
    assert await a.heartbeat() == "absent"
