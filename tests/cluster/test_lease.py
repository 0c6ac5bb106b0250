"""The lease for once-only work: one holder at a time on a real Redis, taken over when it dies."""

from __future__ import annotations

import asyncio

from hostgate.cluster.lease import LocalLease, RedisLease
from hostgate.cluster.shared import connect


async def test_one_node_always_holds_the_lease_and_runs_its_hooks_at_start() -> None:
    lease = LocalLease()
    ran: list[str] = []

    async def hook() -> None:
        ran.append("took")

    lease.on_acquired(hook)
    await lease.start()
    assert lease.held()
    assert ran == ["took"]
    await lease.stop()


async def test_one_holder_at_a_time_and_a_graceful_stop_hands_over_at_once(redis_server) -> None:
    first_client, second_client = connect(redis_server.url), connect(redis_server.url)
    first = RedisLease(first_client, "node-a", seconds=3)
    second = RedisLease(second_client, "node-b", seconds=3)
    took: list[str] = []

    async def second_took() -> None:
        took.append("node-b")

    second.on_acquired(second_took)
    try:
        await first.start()
        await second.start()
        assert first.held() and not second.held()
        assert await second.holder() == "node-a"
        await asyncio.sleep(2.5)  # renewed by its holder: still node-a's
        assert first.held() and not second.held()
        await first.stop()  # handed back: the key is gone at once
        assert not first.held()
        assert await second.holder() is None
        await asyncio.wait_for(second.changed.wait(), 3)
        assert second.held() and took == ["node-b"]
        assert await first.holder() == "node-b"
    finally:
        await first.stop()
        await second.stop()
        await first_client.aclose()
        await second_client.aclose()


async def test_a_dead_holder_loses_the_lease_once_it_expires(redis_server) -> None:
    first_client, second_client = connect(redis_server.url), connect(redis_server.url)
    first = RedisLease(first_client, "node-a", seconds=2)
    second = RedisLease(second_client, "node-b", seconds=2)
    try:
        await first.start()
        await second.start()
        assert first.held()
        # node-a dies: it stops renewing and never hands the lease back
        assert first._task is not None
        first._task.cancel()
        await asyncio.wait_for(second.changed.wait(), 5)
        assert second.held()
        assert await second.holder() == "node-b"
        # the dead holder's own view ran out before Redis let the other take it
        assert not first.held()
    finally:
        await second.stop()
        await first_client.aclose()
        await second_client.aclose()


async def test_a_holder_cut_off_from_redis_stops_believing_it_holds_the_lease(
    redis_server,
) -> None:
    client = connect(redis_server.url)
    lease = RedisLease(client, "node-a", seconds=1.5)
    try:
        await lease.start()
        assert lease.held()
        lease.changed.clear()
        redis_server.stop()
        await asyncio.wait_for(lease.changed.wait(), 10)
        assert not lease.held()
        redis_server.start()  # an empty Redis again: the node takes the lease back
        lease.changed.clear()
        await asyncio.wait_for(lease.changed.wait(), 10)
        assert lease.held()
    finally:
        await lease.stop()
        await client.aclose()
