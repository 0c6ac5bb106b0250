"""Logins in flight: state -> nonce, PKCE verifier and browser binding, single use, 10 minutes."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field

PENDING_TTL_SECONDS = 600.0
MAX_PENDING = 10_000


@dataclass(frozen=True)
class PendingLogin:
    """What the callback needs to finish one flow."""

    nonce: str
    code_verifier: str
    redirect_uri: str
    browser_hash: str
    created: float = field(default_factory=time.monotonic)


class PendingLogins:
    """In-memory and bounded; ``take`` removes the entry whatever happens next."""

    def __init__(self, ttl: float = PENDING_TTL_SECONDS, limit: int = MAX_PENDING) -> None:
        self.ttl = ttl
        self.limit = limit
        self._items: OrderedDict[str, PendingLogin] = OrderedDict()

    def add(self, state: str, pending: PendingLogin) -> None:
        """Remember a flow (the oldest are dropped past the limit)."""
        self._sweep()
        self._items[state] = pending
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def take(self, state: str) -> PendingLogin | None:
        """The flow for ``state``, once; None when unknown, used or expired."""
        pending = self._items.pop(state, None)
        if pending is None or time.monotonic() - pending.created > self.ttl:
            return None
        return pending

    def _sweep(self) -> None:
        cutoff = time.monotonic() - self.ttl
        while self._items:
            state, oldest = next(iter(self._items.items()))
            if oldest.created > cutoff:
                break
            self._items.pop(state, None)

    def __len__(self) -> int:
        return len(self._items)
