"""WebAuthn challenges: random, single use, five minutes, bound to their purpose and user."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field

CHALLENGE_TTL_SECONDS = 300.0
MAX_CHALLENGES = 10_000


@dataclass(frozen=True)
class Challenge:
    """One issued challenge and what it may be used for."""

    purpose: str
    value: bytes
    user_id: str | None
    rp_id: str
    origins: tuple[str, ...]
    created: float = field(default_factory=time.monotonic)


class Challenges:
    """In-memory, bounded; ``take`` removes the challenge whether or not it then verifies."""

    def __init__(self, ttl: float = CHALLENGE_TTL_SECONDS, limit: int = MAX_CHALLENGES) -> None:
        self.ttl = ttl
        self.limit = limit
        self._items: OrderedDict[str, Challenge] = OrderedDict()

    def issue(
        self, purpose: str, user_id: str | None, rp_id: str, origins: tuple[str, ...]
    ) -> tuple[str, Challenge]:
        """A new ``(challengeId, challenge)``."""
        self._sweep()
        challenge_id = secrets.token_urlsafe(24)
        challenge = Challenge(purpose, secrets.token_bytes(32), user_id, rp_id, origins)
        self._items[challenge_id] = challenge
        while len(self._items) > self.limit:
            self._items.popitem(last=False)
        return challenge_id, challenge

    def take(self, challenge_id: str, purpose: str) -> Challenge | None:
        """The challenge, once; None when unknown, used, expired or issued for another purpose."""
        challenge = self._items.pop(challenge_id, None)
        if challenge is None or challenge.purpose != purpose:
            return None
        if time.monotonic() - challenge.created > self.ttl:
            return None
        return challenge

    def _sweep(self) -> None:
        cutoff = time.monotonic() - self.ttl
        while self._items:
            key, oldest = next(iter(self._items.items()))
            if oldest.created > cutoff:
                break
            self._items.pop(key, None)
