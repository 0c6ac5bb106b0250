"""``kernel.cluster`` on two in-process nodes sharing one real redis-server: the bus
reaches the other node, one node holds the lease, a claim is one node's at a time."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.config import Config


@pytest.fixture
def config(hostgate_config: Config, redis_server: Any) -> Config:
    return hostgate_config.with_overrides(redis_url=redis_server.url)


@pytest.fixture
async def node_b(config: Config, app: Any) -> AsyncIterator[Any]:
    application = create_app(config)
    async with application.test_app():
        yield kernel_of(application)


async def test_two_nodes_share_bus_lease_and_claims(kernel, node_b):
    a, b = kernel.cluster, node_b.cluster
    assert a.several_nodes and b.several_nodes
    heard: asyncio.Queue[dict[str, Any]] = asyncio.Queue()

    async def handler(message: dict[str, Any]) -> None:
        await heard.put(message)

    a.bus.subscribe("featurepack.topic", handler)  # after start, as a pack's startup does
    # the subscription lands a moment after the call: publish until node a hears one
    message = None
    for n in range(100):
        await b.bus.publish("featurepack.topic", {"n": n})
        try:
            message = await asyncio.wait_for(heard.get(), 0.1)
            break
        except TimeoutError:
            continue
    assert message is not None and message["n"] >= 0
    assert [a.lease.held(), b.lease.held()].count(True) == 1
    assert await a.claims.claim("featurepack:one", 30.0)
    assert not await b.claims.claim("featurepack:one", 30.0)
    await a.claims.release("featurepack:one")
    assert await b.claims.claim("featurepack:one", 30.0)
