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


async def test_claims_one_node_at_a_time_released_or_expired(redis_server) -> None:
    """The per-delivery claim: the same rules in memory and on a real Redis."""
    from hostgate.cluster.lease import LocalClaims, RedisClaims
    from hostgate.errors import SharedStateUnavailable

    local = LocalClaims()
    assert await local.claim("delivery:1", 0.3)
    assert not await local.claim("delivery:1", 0.3)
    await local.release("delivery:1")
    assert await local.claim("delivery:1", 0.3)
    await asyncio.sleep(0.4)
    assert await local.claim("delivery:1", 0.3)  # expired

    clients = [connect(redis_server.url) for _ in range(2)]
    a, b = RedisClaims(clients[0], "node-a"), RedisClaims(clients[1], "node-b")
    try:
        won = await asyncio.gather(*(c.claim("delivery:2", 5) for c in (a, b, a, b)))
        assert sorted(won) == [False, False, False, True]
        winner, loser = (
            (a, b) if await clients[0].get("hostgate:claim:delivery:2") == b"node-a" else (b, a)
        )
        await loser.release("delivery:2")  # not the loser's: stays
        assert not await loser.claim("delivery:2", 5)
        await winner.release("delivery:2")
        assert await loser.claim("delivery:2", 0.3)
        await asyncio.sleep(0.5)
        assert await winner.claim("delivery:2", 5)  # the loser's claim expired
        down = RedisClaims(connect("redis://127.0.0.1:1/0"), "node-c")
        try:
            await down.claim("delivery:3", 5)
        except SharedStateUnavailable:
            pass
        else:
            raise AssertionError("a claim Redis cannot check must not be granted")
    finally:
        for client in clients:
            await client.aclose()
