"""Sliding-window rate limits behind one small interface: in memory, or shared in Redis.

``RateLimiter`` is the interface; ``MemoryRateLimiter`` counts in this process
(one node), ``RedisRateLimiter`` in the Redis the nodes share, so a budget is
one budget whichever node answers, with the same ``Retry-After``. It counts with
a Lua script (atomic: two nodes cannot both take the last attempt) over a sorted
set per (bucket, key), timed by the Redis server's clock so every node agrees.
When Redis is down every call raises the 503 ``SharedStateUnavailable``: a
limit never fails open.
"""

from __future__ import annotations

import math
import secrets
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..cluster.shared import KEY_PREFIX, reaching
from ..errors import RateLimited

if TYPE_CHECKING:
    from redis.asyncio import Redis


@dataclass(frozen=True)
class Limit:
    """``attempts`` per ``window_seconds``."""

    attempts: int
    window_seconds: float


LOGIN_PER_IP = Limit(30, 15 * 60)
MFA_PER_USER = Limit(5, 5 * 60)
PASSWORD_CHECK_PER_USER = Limit(10, 15 * 60)


class RateLimiter(Protocol):
    """Counts attempts per (bucket, key) in a sliding window."""

    async def retry_after(self, bucket: str, key: str, limit: Limit) -> int:
        """Seconds until one more attempt is allowed (0 when allowed now)."""

    async def hit(self, bucket: str, key: str, limit: Limit, message: str) -> None:
        """Count one attempt; raise RateLimited (with Retry-After) once over the limit."""

    async def reset(self, bucket: str, key: str) -> None:
        """Forget a key's attempts (e.g. after a successful MFA code)."""


def _seconds(wait: float) -> int:
    return max(1, math.ceil(wait)) if wait > 0 else 0


class MemoryRateLimiter(RateLimiter):
    """The attempts of this process (one node)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._hits: dict[tuple[str, str], deque[float]] = {}

    def _window(self, bucket: str, key: str, limit: Limit, now: float) -> deque[float]:
        hits = self._hits.setdefault((bucket, key), deque())
        cutoff = now - limit.window_seconds
        while hits and hits[0] <= cutoff:
            hits.popleft()
        return hits

    def _wait(self, bucket: str, key: str, limit: Limit, now: float) -> int:
        hits = self._window(bucket, key, limit, now)
        if len(hits) < limit.attempts:
            return 0
        return max(1, _seconds(hits[0] + limit.window_seconds - now))

    async def retry_after(self, bucket: str, key: str, limit: Limit) -> int:
        """Seconds until one more attempt is allowed (0 when allowed now)."""
        return self._wait(bucket, key, limit, float(self._clock()))

    async def hit(self, bucket: str, key: str, limit: Limit, message: str) -> None:
        """Count one attempt; raise RateLimited (with Retry-After) once over the limit."""
        now = float(self._clock())
        wait = self._wait(bucket, key, limit, now)
        if wait:
            raise RateLimited(message, retry_after=wait)
        self._hits[(bucket, key)].append(now)

    async def reset(self, bucket: str, key: str) -> None:
        """Forget a key's attempts (e.g. after a successful MFA code)."""
        self._hits.pop((bucket, key), None)

    def forget_all(self) -> None:
        """Forget every attempt of every key (a test gateway's reset)."""
        self._hits.clear()


# KEYS[1]: the sorted set of one (bucket, key), scored by the time of each attempt in
# microseconds. ARGV: now (microseconds; empty = the Redis server's clock), window
# (microseconds), attempts allowed, "1" to count an attempt, a unique member.
# Returns 0 when allowed (and counted if asked), else the microseconds to wait.
_SLIDING_WINDOW = """
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local window = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return math.max(1, tonumber(oldest[2]) + window - now)
end
if ARGV[4] == '1' then
  redis.call('ZADD', KEYS[1], now, ARGV[5])
  redis.call('PEXPIRE', KEYS[1], math.ceil(window / 1000))
end
return 0
"""
MICRO = 1_000_000


class RedisRateLimiter(RateLimiter):
    """The attempts of every node, in the shared Redis (atomic, Redis's clock)."""

    prefix = f"{KEY_PREFIX}limit:"

    def __init__(self, client: Redis, clock: Callable[[], float] | None = None) -> None:
        """``clock`` (seconds) replaces the Redis server's clock: for tests only."""
        self._client = client
        self._clock = clock
        self._script = client.register_script(_SLIDING_WINDOW)

    def _key(self, bucket: str, key: str) -> str:
        return f"{self.prefix}{bucket}:{key}"

    async def _run(self, bucket: str, key: str, limit: Limit, count: bool) -> int:
        now = "" if self._clock is None else str(int(self._clock() * MICRO))
        arguments = [
            now,
            str(int(limit.window_seconds * MICRO)),
            str(limit.attempts),
            "1" if count else "0",
            secrets.token_hex(8),
        ]
        with reaching():
            waited = await self._script(keys=[self._key(bucket, key)], args=arguments)
        return _seconds(int(waited) / MICRO)

    async def retry_after(self, bucket: str, key: str, limit: Limit) -> int:
        """Seconds until one more attempt is allowed (0 when allowed now)."""
        return await self._run(bucket, key, limit, count=False)

    async def hit(self, bucket: str, key: str, limit: Limit, message: str) -> None:
        """Count one attempt on every node's budget; RateLimited once over the limit."""
        wait = await self._run(bucket, key, limit, count=True)
        if wait:
            raise RateLimited(message, retry_after=wait)

    async def reset(self, bucket: str, key: str) -> None:
        """Forget a key's attempts on every node."""
        with reaching():
            await self._client.delete(self._key(bucket, key))


def rate_limiter(client: Redis | None) -> RateLimiter:
    """The shared limiter when the nodes share a Redis, else the in-memory one."""
    return MemoryRateLimiter() if client is None else RedisRateLimiter(client)
