"""``kernel.shared``: short-lived values every node sees (a pack's pending approvals...).

One node keeps them in memory; several nodes sharing a Redis keep them there, under
``hostgate:pack:<name>``, with Redis expiring them and ``GETDEL`` handing a value to
exactly one taker. Both raise the 503 ``SharedStateUnavailable`` while Redis is down.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from .shared import KEY_PREFIX, reaching

if TYPE_CHECKING:
    from redis.asyncio import Redis

MAX_NAME = 200
MAX_VALUE = 64 * 1024
MAX_TTL_SECONDS = 24 * 3600.0
PREFIX = f"{KEY_PREFIX}pack:"


def check(name: str, value: str | None = None, ttl: float | None = None) -> None:
    """ValueError for a name, value or lifetime out of bounds (a pack's bug, not input)."""
    if not name or len(name) > MAX_NAME or not name.isprintable():
        raise ValueError(f"a shared value's name has 1 to {MAX_NAME} printable characters")
    if value is not None and len(value) > MAX_VALUE:
        raise ValueError(f"a shared value has at most {MAX_VALUE} characters")
    if ttl is not None and not 0 < ttl <= MAX_TTL_SECONDS:
        raise ValueError(f"a shared value lives more than 0 and at most {MAX_TTL_SECONDS} s")


class MemorySharedValues:
    """The values of one node, in its memory."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._values: dict[str, tuple[str, float]] = {}

    async def put(self, name: str, value: str, *, ttl: float) -> None:
        """Store ``value`` under ``name`` for ``ttl`` seconds (replacing any)."""
        check(name, value, ttl)
        now = self.clock()
        for key in [k for k, (_, until) in self._values.items() if until <= now]:
            del self._values[key]
        self._values[name] = (value, now + ttl)

    async def get(self, name: str) -> str | None:
        """The value, None when there is none or it expired."""
        check(name)
        stored = self._values.get(name)
        if stored is None or stored[1] <= self.clock():
            return None
        return stored[0]

    async def take(self, name: str) -> str | None:
        """The value, removed: of callers racing for it, exactly one gets it."""
        check(name)
        stored = self._values.pop(name, None)
        if stored is None or stored[1] <= self.clock():
            return None
        return stored[0]


class RedisSharedValues:
    """The values in the Redis the nodes share."""

    def __init__(self, client: Redis) -> None:
        self._client = client

    async def put(self, name: str, value: str, *, ttl: float) -> None:
        """Store ``value`` under ``name`` for ``ttl`` seconds (replacing any)."""
        check(name, value, ttl)
        with reaching():
            await self._client.set(PREFIX + name, value, px=max(1, int(ttl * 1000)))

    async def get(self, name: str) -> str | None:
        """The value, None when there is none or it expired."""
        check(name)
        with reaching():
            raw = await self._client.get(PREFIX + name)
        return _text(raw)

    async def take(self, name: str) -> str | None:
        """The value, removed (``GETDEL``): of callers racing for it, exactly one gets it."""
        check(name)
        with reaching():
            raw = await self._client.getdel(PREFIX + name)
        return _text(raw)


def _text(raw: bytes | str | None) -> str | None:
    if raw is None:
        return None
    return raw.decode() if isinstance(raw, bytes) else raw


def shared_values(client: Redis | None) -> MemorySharedValues | RedisSharedValues:
    """The shared store when the nodes share a Redis, else this node's memory."""
    return MemorySharedValues() if client is None else RedisSharedValues(client)
