"""The control bus: Redis pub/sub between nodes over a real redis-server, and the local one."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from hostgate.cluster.bus import LocalBus, RedisBus
from hostgate.cluster.shared import connect
from hostgate.errors import SharedStateUnavailable


class Inbox:
    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = []
        self.arrived = asyncio.Event()

    async def __call__(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self.arrived.set()

    async def next(self) -> dict[str, Any]:
        await asyncio.wait_for(self.arrived.wait(), 5)
        self.arrived.clear()
        return self.messages[-1]


async def until(condition: Any, timeout: float = 10.0) -> None:
    async def poll() -> None:
        while not condition():
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), timeout)


@pytest.fixture
async def two_buses(redis_server):
    clients = [connect(redis_server.url), connect(redis_server.url)]
    buses = [RedisBus(c) for c in clients]
    inboxes = [Inbox(), Inbox()]
    for bus, inbox in zip(buses, inboxes, strict=True):
        bus.subscribe("test.topic", inbox)
    for bus in buses:
        await bus.start()
    yield buses, inboxes
    for bus in buses:
        await bus.stop()
    for client in clients:
        await client.aclose()


async def test_a_message_reaches_the_other_node_not_its_sender(two_buses):
    (a, b), (inbox_a, inbox_b) = two_buses
    await a.publish("test.topic", {"reason": "revoked", "match": {"user_id": "u1"}})
    assert await inbox_b.next() == {"reason": "revoked", "match": {"user_id": "u1"}}
    await b.publish("test.topic", {"n": 2})
    assert await inbox_a.next() == {"n": 2}
    # each saw only the other's message
    assert inbox_a.messages == [{"n": 2}]
    assert inbox_b.messages == [{"reason": "revoked", "match": {"user_id": "u1"}}]


async def test_other_topics_are_not_delivered(two_buses):
    (a, _), (_, inbox_b) = two_buses
    await a.publish("another.topic", {"n": 1})
    await a.publish("test.topic", {"n": 2})
    assert await inbox_b.next() == {"n": 2}
    assert inbox_b.messages == [{"n": 2}]


async def test_redis_down_then_back_the_bus_subscribes_again(two_buses, redis_server):
    (a, b), (_, inbox_b) = two_buses
    redis_server.stop()
    with pytest.raises(SharedStateUnavailable):
        await a.publish("test.topic", {"n": 1})
    await until(lambda: not b.ready.is_set())
    redis_server.start()
    await until(b.ready.is_set)
    # "ready" says the subscription is back; on a loaded machine a publish can still
    # race its registration on the restarted server, so publish until it arrives
    for _ in range(50):
        with contextlib.suppress(SharedStateUnavailable):
            await a.publish("test.topic", {"n": 2})
        await asyncio.sleep(0.1)
        if inbox_b.messages:
            break
    assert inbox_b.messages and inbox_b.messages[-1] == {"n": 2}


async def test_one_node_has_nobody_to_tell():
    bus = LocalBus()
    inbox = Inbox()
    bus.subscribe("test.topic", inbox)
    await bus.start()
    await bus.publish("test.topic", {"n": 1})
    await bus.stop()
    assert inbox.messages == []


async def test_stop_ends_a_listener_that_swallowed_its_cancellation(redis_server, monkeypatch):
    """A cancellation lost inside the Redis client's read (the listener reads on) does not
    hang the node's shut-down: the bus cancels again until its listener has ended."""
    from redis.asyncio.client import PubSub

    real = PubSub.get_message
    swallowed: list[bool] = []

    async def losing_one_cancellation(self: PubSub, *args: Any, **kwargs: Any) -> Any:
        try:
            return await real(self, *args, **kwargs)
        except asyncio.CancelledError:
            if swallowed:
                raise
            swallowed.append(True)
            current = asyncio.current_task()
            assert current is not None
            current.uncancel()  # lost for good, as a timeout racing the cancel can lose it
            return None

    monkeypatch.setattr(PubSub, "get_message", losing_one_cancellation)
    client = connect(redis_server.url)
    bus = RedisBus(client)
    bus.subscribe("test.topic", Inbox())
    await bus.start()
    listener = bus._task
    assert listener is not None
    await asyncio.sleep(0.1)  # the listener waits in get_message
    stopping = asyncio.create_task(bus.stop())
    await asyncio.wait({stopping}, timeout=10)  # (wait_for would cancel the listener again)
    try:
        assert stopping.done(), "stop() still waits for a listener that reads on"
        assert swallowed == [True]
        assert listener.done() and not bus.ready.is_set()
    finally:
        listener.cancel()
        await asyncio.wait({stopping, listener}, timeout=10)
        await client.aclose()
