"""Logins in flight: state -> nonce, PKCE verifier and browser binding, single use, 10 minutes.

And sign-ins whose second step is due: a handle (the browser's cookie) -> the pending
step, single use, as long as its ``mfaToken`` lives.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from hostgate import SecondStepDue

PENDING_TTL_SECONDS = 600.0
STEP_TTL_SECONDS = 300.0
MAX_PENDING = 10_000


class _Dated(Protocol):
    @property
    def created(self) -> float: ...


T = TypeVar("T", bound=_Dated)


@dataclass(frozen=True)
class PendingLogin:
    """What the callback needs to finish one flow."""

    nonce: str
    code_verifier: str
    redirect_uri: str
    browser_hash: str
    created: float = field(default_factory=time.monotonic)


@dataclass(frozen=True)
class PendingStep:
    """A callback whose user has a second step due: what the browser app fetches once."""

    due: SecondStepDue
    created: float = field(default_factory=time.monotonic)


class PendingLogins(Generic[T]):
    """In-memory and bounded; ``take`` removes the entry whatever happens next."""

    def __init__(self, ttl: float = PENDING_TTL_SECONDS, limit: int = MAX_PENDING) -> None:
        self.ttl = ttl
        self.limit = limit
        self._items: OrderedDict[str, T] = OrderedDict()

    def add(self, state: str, pending: T) -> None:
        """Remember a flow (the oldest are dropped past the limit)."""
        self._sweep()
        self._items[state] = pending
        while len(self._items) > self.limit:
            self._items.popitem(last=False)

    def take(self, state: str) -> T | None:
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
