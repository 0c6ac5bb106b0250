"""Once-only work done by two nodes at the same moment (a lease that just moved): a due
retry becomes one retry entry, an ended digest period one message. Two in-process nodes on
one SQLite file and one real redis-server."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import hostgate_notifications.plugin
import pytest
from hostgate.app import create_app, kernel_of
from hostgate.config import Config
from hostgate.timefmt import utcnow
from hostgate_notifications.models import NotificationLogEntry
from hostgate_notifications.service import service
from sqlmodel import select


@pytest.fixture
def config(hostgate_config: Config, redis_server: Any) -> Config:
    return hostgate_config.with_overrides(redis_url=redis_server.url)


@pytest.fixture
def plugins() -> list[object]:
    return [hostgate_notifications.plugin]


@pytest.fixture
async def node_b(config: Config, app: Any, plugins: list[object]) -> AsyncIterator[Any]:
    application = create_app(config, plugins=plugins)
    async with application.test_app():
        yield application


async def test_a_due_retry_is_made_once_by_two_nodes_at_once(kernel, node_b):
    failed = NotificationLogEntry(
        channel="webhook",
        status="failed",
        error="HTTP 500",
        payload={"subject": "s", "text": "t", "recipients": []},
        next_attempt_at=utcnow() - timedelta(seconds=1),
    )
    async with kernel.db.session() as session:
        session.add(failed)
        await session.commit()
    nodes = [service(kernel).delivery, service(kernel_of(node_b)).delivery]
    for delivery in nodes:  # only the retry entries are of interest, not their sending
        delivery.enqueue = lambda ids: None
    await asyncio.gather(*(d.run_due_retries() for d in nodes for _ in range(3)))
    async with kernel.db.session() as session:
        retries = (
            await session.exec(
                select(NotificationLogEntry).where(NotificationLogEntry.retry_of == failed.id)
            )
        ).all()
        again = await session.get(NotificationLogEntry, failed.id)
    assert len(retries) == 1 and retries[0].attempt == 2
    assert again is not None and again.next_attempt_at is None
