"""The update check with several nodes: only the lease holder calls the release feed; its
answer (stored in Redis) is what every node serves, and the next holder takes over.

Two in-process nodes on one SQLite file and one real redis-server; node A is the suite's
``app``/``client``/``kernel`` and starts first, so it holds the lease."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hostgate.app import create_app, kernel_of
from hostgate.config import Config

from tests.services.test_version_feed import _Feed, feed, with_feed  # noqa: F401

API = "/api/v1"


@pytest.fixture
def config(hostgate_config: Config, redis_server: Any, feed: str) -> Config:  # noqa: F811
    return with_feed(hostgate_config.with_overrides(redis_url=redis_server.url), feed)


@pytest.fixture
async def node_b(config: Config, app: Any) -> AsyncIterator[Any]:
    application = create_app(config)
    async with application.test_app():
        yield application


async def test_only_the_lease_holder_asks_the_feed_and_every_node_serves_its_answer(
    client, kernel, node_b, admin
):
    b = kernel_of(node_b)
    assert kernel.cluster.lease.held() and not b.cluster.lease.held()
    client_b = node_b.test_client()
    # asked first on B: the holder (A) fetches, B serves A's answer
    body = await (await client_b.get(f"{API}/version")).get_json()
    assert body["latest"] == "99.0.0" and body["updateAvailable"] is True
    assert (kernel.version.fetches, b.version.fetches, _Feed.hits) == (1, 0, 1)
    for node in (client, client_b, client):
        again = await (await node.get(f"{API}/version")).get_json()
        assert again == body
    assert _Feed.hits == 1
    # forced on B by a signed-in admin: the holder fetches anew, B serves the new answer
    _Feed.version = "0.0.1"
    try:
        forced = await client_b.get(f"{API}/version?force=true", headers=admin.headers)
        answer = await forced.get_json()
        assert forced.status_code == 200, answer
        assert answer["latest"] == "0.0.1" and answer["updateAvailable"] is False
        assert (kernel.version.fetches, b.version.fetches, _Feed.hits) == (2, 0, 2)
        assert (await (await client.get(f"{API}/version")).get_json())["latest"] == "0.0.1"
    finally:
        _Feed.version = "99.0.0"


async def test_the_next_lease_holder_makes_the_check(app, kernel, node_b, admin):
    b = kernel_of(node_b)
    client_b = node_b.test_client()
    await kernel.cluster.lease.stop()  # node A hands the lease back (as at shut-down)
    await b.cluster.lease._turn()  # B's next turn takes it (every third of the expiry)
    assert b.cluster.lease.held() and not kernel.cluster.lease.held()
    body = await (await client_b.get(f"{API}/version?force=1", headers=admin.headers)).get_json()
    assert body["latest"] == "99.0.0"
    assert (kernel.version.fetches, b.version.fetches, _Feed.hits) == (0, 1, 1)
    # A, no longer the holder, serves B's answer without asking the feed
    seen = await (await app.test_client().get(f"{API}/version")).get_json()
    assert seen == body and kernel.version.fetches == 0 and _Feed.hits == 1
