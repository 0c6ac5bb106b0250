"""Tickets, rate limits and ``kernel.shared`` values: the same tests in memory and on Redis.

"Two nodes" are two stores: with Redis, two separate clients of one redis-server
(what two gateway nodes are); in memory, the one store of the one node.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from hostgate.cluster.shared import connect
from hostgate.cluster.values import MemorySharedValues, RedisSharedValues, shared_values
from hostgate.errors import RateLimited, SharedStateUnavailable
from hostgate.security.ratelimit import (
    Limit,
    MemoryRateLimiter,
    RateLimiter,
    RedisRateLimiter,
    rate_limiter,
)
from hostgate.security.tickets import (
    TICKET_TTL_SECONDS,
    MemoryTicketStore,
    RedisTicketStore,
    TicketStore,
    ticket_store,
)


class Clock:
    """Seconds the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@dataclass
class Backend:
    """Makes the stores of one backend for two nodes."""

    name: str
    server: Any = None
    clients: list[Any] = field(default_factory=list)
    clock: Clock = field(default_factory=Clock)
    _memory_tickets: MemoryTicketStore | None = None
    _memory_limits: MemoryRateLimiter | None = None
    _memory_values: MemorySharedValues | None = None

    def values(self) -> MemorySharedValues | RedisSharedValues:
        """One node's ``kernel.shared``."""
        if self.server is None:
            if self._memory_values is None:
                self._memory_values = MemorySharedValues(clock=self.clock)
            return self._memory_values
        return RedisSharedValues(self.client())

    def client(self) -> Any:
        client = connect(self.server.url)
        self.clients.append(client)
        return client

    def tickets(self) -> TicketStore:
        """One node's ticket store."""
        if self.server is None:
            if self._memory_tickets is None:
                self._memory_tickets = MemoryTicketStore(clock=self.clock)
            return self._memory_tickets
        return RedisTicketStore(self.client())

    def limits(self, *, fake_clock: bool = True) -> RateLimiter:
        """One node's rate limiter (timed by the test's clock, or the real one)."""
        if self.server is None:
            if self._memory_limits is None:
                self._memory_limits = MemoryRateLimiter(
                    clock=self.clock if fake_clock else __import__("time").monotonic
                )
            return self._memory_limits
        return RedisRateLimiter(self.client(), clock=self.clock if fake_clock else None)

    async def let_tickets_expire(self) -> None:
        """Time passes beyond the tickets' TTL."""
        if self.server is None:
            self.clock.now += TICKET_TTL_SECONDS + 0.5
            return
        # Redis expires them itself: shorten what is left of every ticket's TTL
        client = self.client()
        async for key in client.scan_iter(match=RedisTicketStore.prefix + "*"):
            await client.pexpire(key, 1)
        await asyncio.sleep(0.05)


@pytest.fixture(params=["memory", "redis"])
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[Backend]:
    if request.param == "memory":
        yield Backend("memory")
        return
    made = Backend("redis", server=request.getfixturevalue("redis_server"))
    yield made
    for client in made.clients:
        await client.aclose()


# -- tickets ---------------------------------------------------------------------


async def test_a_ticket_redeems_once_and_only_what_was_issued(backend):
    store = backend.tickets()
    value = await store.issue("user-1", "login-1")
    assert len(value) >= 32
    ticket = await store.redeem(value)
    assert ticket is not None
    assert (ticket.user_id, ticket.login_session_id) == ("user-1", "login-1")
    assert await store.redeem(value) is None
    assert await store.redeem("not-a-ticket") is None
    assert await store.redeem("") is None
    assert await store.redeem(None) is None
    assert await store.redeem("x" * 10_000) is None


async def test_a_ticket_issued_on_one_node_opens_on_another_exactly_once(backend):
    node_a, node_b = backend.tickets(), backend.tickets()
    value = await node_a.issue("user-1", "login-1")
    ticket = await node_b.redeem(value)
    assert ticket is not None and ticket.user_id == "user-1"
    assert await node_a.redeem(value) is None
    assert await node_b.redeem(value) is None
    # both nodes at once: one wins, whoever it is
    raced = await node_a.issue("user-2", "login-2")
    results = await asyncio.gather(*(n.redeem(raced) for n in (node_a, node_b) * 4))
    assert [r.user_id for r in results if r is not None] == ["user-2"]


async def test_an_expired_ticket_is_refused_and_gone(backend):
    store = backend.tickets()
    assert store.ttl == TICKET_TTL_SECONDS == 30.0
    kept, expired = await store.issue("u", "l"), await store.issue("u", "l")
    assert await store.redeem(kept) is not None
    await backend.let_tickets_expire()
    assert await store.redeem(expired) is None
    assert await store.redeem(expired) is None


async def test_a_ticket_carries_its_payload_and_namespaces_keep_kinds_apart(backend):
    if backend.server is None:
        sockets, downloads = ticket_store(None), ticket_store(None, namespace="download")
    else:
        sockets = ticket_store(backend.client())
        downloads = ticket_store(backend.client(), namespace="download")
        other_node = ticket_store(backend.client(), namespace="download")
    value = await downloads.issue("user-1", "login-1", "sealed payload")
    # a download ticket never opens a socket, and the reverse
    assert await sockets.redeem(value) is None
    socket_ticket = await sockets.issue("user-1", "login-1")
    assert await downloads.redeem(socket_ticket) is None
    redeemer = downloads if backend.server is None else other_node
    ticket = await redeemer.redeem(value)
    assert ticket is not None and ticket.payload == "sealed payload"
    assert (await sockets.redeem(socket_ticket)) is not None


# -- rate limits -----------------------------------------------------------------


async def test_a_limit_slides_with_its_window(backend):
    limiter = backend.limits()
    limit = Limit(3, 60)
    for _ in range(3):
        await limiter.hit("login", "1.2.3.4", limit, "slow down")
    with pytest.raises(RateLimited) as info:
        await limiter.hit("login", "1.2.3.4", limit, "slow down")
    assert info.value.headers["Retry-After"] == "60"
    assert info.value.message == "slow down"
    assert await limiter.retry_after("login", "1.2.3.4", limit) == 60
    await limiter.hit("login", "5.6.7.8", limit, "other keys are independent")
    await limiter.hit("mfa", "1.2.3.4", limit, "other buckets are independent")
    backend.clock.now += 20
    assert await limiter.retry_after("login", "1.2.3.4", limit) == 40
    backend.clock.now += 41
    assert await limiter.retry_after("login", "1.2.3.4", limit) == 0
    await limiter.hit("login", "1.2.3.4", limit, "window slid")


async def test_one_budget_across_nodes_with_the_same_retry_after(backend):
    node_a, node_b = backend.limits(), backend.limits()
    limit = Limit(4, 300)
    for index in range(4):
        await (node_a if index % 2 else node_b).hit("login", "ip", limit, "too many")
        backend.clock.now += 10
    for node in (node_a, node_b):
        with pytest.raises(RateLimited) as info:
            await node.hit("login", "ip", limit, "too many")
        # the oldest attempt was 40 s ago
        assert info.value.retry_after == 260
        assert await node.retry_after("login", "ip", limit) == 260
    await node_a.reset("login", "ip")
    assert await node_b.retry_after("login", "ip", limit) == 0
    await node_b.hit("login", "ip", limit, "reset on every node")


async def test_the_last_attempt_goes_to_one_node_only(backend):
    nodes = [backend.limits(), backend.limits()]
    limit = Limit(5, 60)

    async def attempt(index: int) -> bool:
        try:
            await nodes[index % 2].hit("mfa", "user", limit, "too many")
        except RateLimited:
            return False
        return True

    outcomes = await asyncio.gather(*(attempt(i) for i in range(20)))
    assert outcomes.count(True) == 5


async def test_without_a_test_clock_nodes_agree_on_retry_after(backend):
    node_a, node_b = backend.limits(fake_clock=False), backend.limits(fake_clock=False)
    limit = Limit(1, 120)
    await node_a.hit("password", "user", limit, "too many")
    first = await node_a.retry_after("password", "user", limit)
    other = await node_b.retry_after("password", "user", limit)
    last = await node_a.retry_after("password", "user", limit)
    # one clock for every node (Redis's own): never more than the second that passed
    assert 119 <= last <= other <= first <= 120


def test_the_kernel_picks_the_store_by_configuration():
    assert isinstance(ticket_store(None), MemoryTicketStore)
    assert isinstance(rate_limiter(None), MemoryRateLimiter)


# -- kernel.shared ---------------------------------------------------------------


async def test_a_shared_value_put_on_one_node_is_read_on_another_and_taken_once(backend):
    node_a, node_b = backend.values(), backend.values()
    await node_a.put("pack.thing", "one", ttl=60)
    assert await node_b.get("pack.thing") == "one"
    assert await node_a.get("pack.thing") == "one"  # reading leaves it
    await node_b.put("pack.thing", "two", ttl=60)  # replaced
    results = await asyncio.gather(*(n.take("pack.thing") for n in (node_a, node_b) * 4))
    assert [r for r in results if r is not None] == ["two"]
    assert await node_a.get("pack.thing") is None
    assert await node_b.get("pack.never") is None


async def test_a_shared_value_expires(backend):
    store = backend.values()
    await store.put("pack.brief", "soon gone", ttl=0.05)
    await store.put("pack.kept", "stays", ttl=60)
    if backend.server is None:
        backend.clock.now += 0.1
    else:
        await asyncio.sleep(0.1)  # Redis's own expiry: the store keeps no clock of its own
    assert await store.get("pack.brief") is None
    assert await store.take("pack.brief") is None
    assert await store.get("pack.kept") == "stays"


async def test_shared_value_bounds_are_a_pack_error():
    store = MemorySharedValues()
    for name, value, ttl in [("", "v", 1.0), ("n" * 201, "v", 1.0), ("bad\nname", "v", 1.0),
                             ("ok", "v" * (64 * 1024 + 1), 1.0), ("ok", "v", 0.0),
                             ("ok", "v", 86401.0)]:  # fmt: skip
        with pytest.raises(ValueError):
            await store.put(name, value, ttl=ttl)
    assert isinstance(shared_values(None), MemorySharedValues)


# -- Redis down and back ---------------------------------------------------------


async def test_redis_down_is_a_503_and_back_without_a_restart(redis_server):
    client = connect(redis_server.url)
    try:
        tickets, limits = RedisTicketStore(client), RedisRateLimiter(client)
        limit = Limit(3, 60)
        issued = await tickets.issue("u", "l")
        await limits.hit("login", "ip", limit, "too many")
        redis_server.stop()
        calls = [
            tickets.issue("u", "l"),
            tickets.redeem(issued),
            limits.hit("login", "ip", limit, "too many"),
            limits.retry_after("login", "ip", limit),
            limits.reset("login", "ip"),
        ]
        for call in calls:
            with pytest.raises(SharedStateUnavailable) as info:
                await call
            assert info.value.status == 503
            assert info.value.code == "shared_state_unavailable"
            assert info.value.headers["Retry-After"] == "5"
        redis_server.start()
        # nothing was persisted: a restarted Redis has forgotten the ticket and the count
        assert await tickets.redeem(issued) is None
        again = await tickets.issue("u", "l")
        assert (await tickets.redeem(again)) is not None
        for _ in range(3):
            await limits.hit("login", "ip", limit, "too many")
        with pytest.raises(RateLimited):
            await limits.hit("login", "ip", limit, "too many")
    finally:
        await client.aclose()
