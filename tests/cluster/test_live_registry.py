"""Two nodes' ``LiveSessions`` over one shared registry (in memory, and a real redis-server):
every node's sessions listed and counted, a dead node's reaped within the bound, a node
declared dead ending its own, access changes re-checked on every node."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hostgate.closereasons import CloseReason
from hostgate.cluster.bus import LocalBus, RedisBus
from hostgate.cluster.registry import MemoryBackend, MemoryRegistry, RedisRegistry
from hostgate.cluster.shared import connect
from hostgate.errors import SharedStateUnavailable
from hostgate.services.sessions.live_sessions import LiveSession, LiveSessions
from hostgate.services.sessions.shared_sessions import DECLARED_DEAD
from hostgate.tasks import cancel_and_wait

DEAD_AFTER = 2.0


class Held:
    """A session of a test node: remembers why it was closed."""

    def __init__(self, live: LiveSessions, session_id: str, user_id: str = "u1") -> None:
        self.reasons: list[str] = []
        self.codes: list[str] = []
        self.closed = asyncio.Event()
        self.id = session_id
        live.add(
            LiveSession(
                id=session_id,
                kind="terminal",
                protocol="ssh",
                user_id=user_id,
                login_session_id="login-1",
                connection_id="c1",
                close=self.close,
                info={"username": "alice", "connectionName": "box"},
            )
        )

    async def close(self, reason: str, reason_code: str) -> None:
        self.reasons.append(reason)
        self.codes.append(reason_code)
        self.closed.set()


async def until(condition: Any, timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


@pytest.fixture(params=["memory", "redis"])
async def two_nodes(request) -> AsyncIterator[tuple[LiveSessions, LiveSessions]]:
    nodes: list[LiveSessions] = []
    buses: list[Any] = []
    client = None
    if request.param == "memory":
        backend = MemoryBackend()
        for _ in range(2):
            bus = LocalBus()
            buses.append(bus)
            nodes.append(LiveSessions(bus, MemoryRegistry(bus.node_id, DEAD_AFTER, backend)))
    else:
        server = request.getfixturevalue("redis_server")
        client = connect(server.url)
        for _ in range(2):
            bus = RedisBus(client)
            buses.append(bus)
            nodes.append(LiveSessions(bus, RedisRegistry(client, bus.node_id, DEAD_AFTER)))
    for bus in buses:
        await bus.start()
    for node in nodes:
        await node.start()
    yield nodes[0], nodes[1]
    for node in nodes:
        await node.stop()
    for bus in buses:
        await bus.stop()
    if client is not None:
        await client.aclose()


async def test_every_nodes_sessions_are_listed_found_and_counted(two_nodes):
    a, b = two_nodes
    Held(a, "s1")
    Held(a, "s2", user_id="u2")
    Held(b, "s3")
    await a.settled()
    await b.settled()
    listed = {s.id: s for s in await b.everywhere()}
    assert set(listed) == {"s1", "s2", "s3"}
    remote = listed["s1"]
    assert (remote.kind, remote.protocol, remote.user_id, remote.connection_id) == (
        "terminal",
        "ssh",
        "u1",
        "c1",
    )
    assert remote.login_session_id == "login-1"
    assert remote.info["username"] == "alice"
    assert remote.info["node"] == a.node_id
    assert b.get("s1") is None  # not held here
    assert (await b.find("s1")).id == "s1"  # type: ignore[union-attr]
    assert await b.find("nope") is None
    # the caps count every node's sessions
    assert b.count(user_id="u1") == 2
    assert b.count(kinds=("terminal",)) == 3
    assert b.held("s2") and not b.held("nope")
    a.remove("s1")
    await a.settled()
    assert {s.id for s in await b.everywhere()} == {"s2", "s3"}
    assert await b.find("s1") is None


async def test_a_dead_nodes_sessions_are_reaped_and_it_ends_them_when_it_comes_back(
    two_nodes,
):
    a, b = two_nodes
    held = Held(a, "s1")
    Held(b, "s2")
    reaped: list[list[dict[str, Any]]] = []

    async def on_reaped(entries: list[dict[str, Any]]) -> None:
        reaped.append(entries)

    b.on_reaped(on_reaped)
    await a.settled()
    assert a.shared is not None
    await cancel_and_wait(a.shared._task)  # a stops answering, as if killed
    # b's own heartbeats go on: within the bound (dead_after plus a beat) a is reaped
    await until(lambda: reaped, timeout=DEAD_AFTER * 3)
    assert [[e["id"] for e in batch] for batch in reaped] == [["s1"]]
    assert reaped[0][0]["node"] == a.node_id
    assert {s.id for s in await b.everywhere()} == {"s2"}
    assert held.reasons == []
    # a comes back: it was declared dead, so it ends what it still held
    await a.shared.beat()
    assert held.reasons == [DECLARED_DEAD]
    assert held.codes == [CloseReason.UNAVAILABLE]
    assert a.all() == []


async def test_a_node_writes_its_sessions_again_when_the_registry_lost_them(two_nodes):
    a, b = two_nodes
    Held(a, "s1")
    await a.settled()
    assert b.shared is not None and a.shared is not None
    for entry in await b.shared.registry.entries():
        await b.shared.registry.write({}, [entry["id"]])  # as after a Redis restart
    await b.shared.registry.leave()
    await a.shared.registry.leave()
    assert await b.everywhere() == []
    await a.shared.beat()
    assert [s.id for s in await b.everywhere()] == ["s1"]


async def test_settled_right_after_a_change_waits_for_one_write_not_the_next_beat():
    """The writer woken by a change but not yet run when ``settled`` is called: its one
    write covers the change. The old code counted on a second write, which only the next
    heartbeat brings (15 minutes here): it waited out its timeout (5 s by default, also
    in the live view's opening) and went on as if the write were done."""
    bus = LocalBus()
    backend = MemoryBackend()
    live = LiveSessions(bus, MemoryRegistry(bus.node_id, 3600.0, backend))
    await live.start()
    try:
        assert live.shared is not None
        Held(live, "s1")  # wakes the writer; settled() comes before it runs
        assert await live.shared.settled(timeout=30) is True
        assert [json.loads(v)["id"] for v in backend.sessions.values()] == ["s1"]
        Held(live, "s2")
        await asyncio.sleep(0)  # this time the writer runs first
        assert await live.shared.settled(timeout=30) is True
        assert sorted(json.loads(v)["id"] for v in backend.sessions.values()) == ["s1", "s2"]
    finally:
        await live.stop()


async def test_without_a_registry_only_this_nodes_sessions_exist():
    live = LiveSessions()
    Held(live, "s1")
    await live.start()
    assert [s.id for s in await live.everywhere()] == ["s1"]
    assert (await live.find("s1")).id == "s1"  # type: ignore[union-attr]
    assert live.held("s1") and live.count() == 1
    assert live.node_id
    await live.stop()


@pytest.fixture
async def redis_nodes(redis_server) -> AsyncIterator[tuple[LiveSessions, LiveSessions]]:
    client = connect(redis_server.url)
    buses = [RedisBus(client), RedisBus(client)]
    nodes = [LiveSessions(bus, RedisRegistry(client, bus.node_id, 20.0)) for bus in buses]
    for bus in buses:
        await bus.start()
    for node in nodes:
        await node.start()
    yield nodes[0], nodes[1]
    for node in nodes:
        await node.stop()
    for bus in buses:
        await bus.stop()
    await client.aclose()


async def test_closing_another_nodes_session_reaches_that_node(redis_nodes):
    a, b = redis_nodes
    held = Held(a, "s1")
    other = Held(a, "s2")
    await a.settled()
    found = await b.find("s1")
    assert found is not None
    await found.close("Terminated by admin", CloseReason.TERMINATED)
    await asyncio.wait_for(held.closed.wait(), 5)
    assert held.reasons == ["Terminated by admin"]
    assert held.codes == [CloseReason.TERMINATED]  # the code crossed the bus with the text
    assert other.reasons == []
    # a restore closes everything on every node
    await b.close_everywhere("the instance is being restored from a backup", CloseReason.RESTORING)
    await asyncio.wait_for(other.closed.wait(), 5)
    assert other.reasons == ["the instance is being restored from a backup"]
    assert other.codes == [CloseReason.RESTORING]


async def test_an_access_change_on_one_node_rechecks_the_sessions_of_every_node(redis_nodes):
    a, b = redis_nodes
    rechecks = {"a": 0, "b": 0}

    def recheck(name: str) -> Any:
        def run() -> None:
            rechecks[name] += 1

        return run

    a.on_access_changed(recheck("a"))
    b.on_access_changed(recheck("b"))
    a.access_changed()
    assert rechecks["a"] == 1  # at once, here
    await until(lambda: rechecks["b"] == 1, timeout=5)
    assert rechecks == {"a": 1, "b": 1}


async def test_after_redis_restarts_every_node_writes_its_sessions_again(redis_server):
    client = connect(redis_server.url)
    nodes = [LiveSessions(None, RedisRegistry(client, uuid, DEAD_AFTER)) for uuid in ("a", "b")]
    a, b = nodes
    for node in nodes:
        await node.start()
    try:
        Held(a, "s1")
        Held(b, "s2")
        await a.settled()
        await b.settled()
        redis_server.stop()  # nothing is persisted: the registry is gone with it
        with pytest.raises(SharedStateUnavailable):
            await b.everywhere()
        await asyncio.sleep(DEAD_AFTER)  # beats fail meanwhile; the sessions go on
        redis_server.start()

        async def listed() -> set[str]:
            while True:
                with contextlib.suppress(SharedStateUnavailable):
                    found = {s.id for s in await b.everywhere()}
                    if found == {"s1", "s2"}:
                        return found
                await asyncio.sleep(0.05)

        assert await asyncio.wait_for(listed(), 10) == {"s1", "s2"}
        assert a.get("s1") is not None  # nobody declared anybody dead
    finally:
        for node in nodes:
            await node.stop()
        await client.aclose()


async def test_after_an_outage_of_every_node_nobody_is_declared_dead(two_nodes, monkeypatch):
    a, b = two_nodes
    held = Held(a, "s1")
    Held(b, "s2")
    await a.settled()
    reaped: list[Any] = []

    async def on_reaped(entries: list[dict[str, Any]]) -> None:
        reaped.append(entries)

    a.on_reaped(on_reaped)
    b.on_reaped(on_reaped)
    assert a.shared is not None and b.shared is not None
    real = {node: node.shared.registry.heartbeat for node in (a, b)}  # type: ignore[union-attr]

    async def unreachable() -> str:
        raise SharedStateUnavailable()

    for node in (a, b):
        monkeypatch.setattr(node.shared.registry, "heartbeat", unreachable)  # type: ignore[union-attr]
    await asyncio.sleep(DEAD_AFTER * 1.5)  # both cut off: their last beats grow old
    for node in (a, b):
        monkeypatch.setattr(node.shared.registry, "heartbeat", real[node])  # type: ignore[union-attr]
    await asyncio.sleep(DEAD_AFTER * 1.5)  # both beat again, long enough to judge
    assert reaped == []
    assert held.reasons == []
    assert {s.id for s in await b.everywhere()} == {"s1", "s2"}


async def test_the_other_nodes_hear_of_a_change_before_the_next_heartbeat(redis_nodes):
    a, b = redis_nodes  # a heartbeat every 5 s
    Held(a, "s1", user_id="u9")
    await until(lambda: b.held("s1") and b.count(user_id="u9") == 1, timeout=2)
    a.remove("s1")
    await until(lambda: not b.held("s1") and b.count(user_id="u9") == 0, timeout=2)
