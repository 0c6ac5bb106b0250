"""Kernel file-route tests: the in-memory ``memfs`` protocol pack, a fresh state per test."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.services.sessions.files import memfs


@pytest.fixture
def plugins() -> list[object]:
    return [memfs]


@pytest.fixture(autouse=True)
def mem_state() -> Iterator[memfs.MemState]:
    memfs.STATE.reset()
    yield memfs.STATE
    memfs.STATE.reset()


@pytest.fixture
async def owner(make_user: Any) -> Any:
    return await make_user("owner")


@pytest.fixture
async def memconn(make_connection: Any, owner: Any) -> Any:
    return await make_connection(owner, "memfs", name="Mem Server")


def url(connection: Any, suffix: str, protocol: str | None = None) -> str:
    return f"/api/v1/{protocol or connection.protocol}/{connection.id}/{suffix}"
