"""Output indexing turned off on another node: the follower purges, and retries when busy."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hostgate.config import Config
from hostgate_recsearch.index import INDEX_OUTPUT
from hostgate_recsearch.plugin import service
from sqlalchemy.exc import OperationalError

from testsupport.dblock import write_lock

from .test_recording_search import entries, index_output, run_shell

BUSY_MS = 300


@pytest.fixture
def config(config: Config) -> Config:
    """SQLite (the write lock is its file lock), waiting at most ``BUSY_MS`` for it."""
    return config.with_overrides(database_busy_timeout_ms=BUSY_MS)


async def test_a_purge_that_meets_a_locked_database_is_retried_by_the_follower(
    client: Any, kernel: Any, config: Config, admin: Any, shell_connection: Any
) -> None:
    user, connection = shell_connection
    await index_output(client, admin, True)
    await run_shell(client, kernel, user, connection, "echo indexed-$((3+3))", "indexed-6")
    assert await entries(kernel, "output")
    # as another node's change arrives (no audit entry here), while the database is busy;
    # nothing awaits between the two, so the follower cannot purge before the lock
    kernel.settings.remember({INDEX_OUTPUT: False})
    with write_lock(config.data_dir / "hostgate.db"):
        with pytest.raises(OperationalError):
            await service(kernel).follow_setting()
        assert await entries(kernel, "output")  # not purged yet
    async with asyncio.timeout(30):  # the follower tries every second
        while await entries(kernel, "output"):
            await asyncio.sleep(0.05)
    assert await entries(kernel, "command")  # commands stay
