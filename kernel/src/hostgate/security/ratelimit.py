"""Sliding-window rate limits, in memory behind a small interface (Redis is the next one)."""

from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass

from ..errors import RateLimited


@dataclass(frozen=True)
class Limit:
    """``attempts`` per ``window_seconds``."""

    attempts: int
    window_seconds: float


LOGIN_PER_IP = Limit(30, 15 * 60)
MFA_PER_USER = Limit(5, 5 * 60)
PASSWORD_CHECK_PER_USER = Limit(10, 15 * 60)


class RateLimiter:
    """Counts attempts per (bucket, key) in a sliding window."""

    def __init__(self, clock: object = time.monotonic) -> None:
        self._clock = clock
        self._hits: dict[tuple[str, str], deque[float]] = {}

    def _now(self) -> float:
        return float(self._clock())  # type: ignore[operator]

    def _window(self, bucket: str, key: str, limit: Limit) -> deque[float]:
        hits = self._hits.setdefault((bucket, key), deque())
        cutoff = self._now() - limit.window_seconds
        while hits and hits[0] <= cutoff:
            hits.popleft()
        return hits

    def retry_after(self, bucket: str, key: str, limit: Limit) -> int:
        """Seconds until one more attempt is allowed (0 when allowed now)."""
        hits = self._window(bucket, key, limit)
        if len(hits) < limit.attempts:
            return 0
        return max(1, math.ceil(hits[0] + limit.window_seconds - self._now()))

    def hit(self, bucket: str, key: str, limit: Limit, message: str) -> None:
        """Count one attempt; raise RateLimited (with Retry-After) once over the limit."""
        wait = self.retry_after(bucket, key, limit)
        if wait:
            raise RateLimited(message, retry_after=wait)
        self._hits.setdefault((bucket, key), deque()).append(self._now())

    def reset(self, bucket: str, key: str) -> None:
        """Forget a key's attempts (e.g. after a successful MFA code)."""
        self._hits.pop((bucket, key), None)
