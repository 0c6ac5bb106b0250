"""WebSocket tickets: random, single use, short lived, bound to a user and login session."""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

TICKET_TTL_SECONDS = 30.0


@dataclass(frozen=True)
class Ticket:
    """What a redeemed ticket proves."""

    user_id: str
    login_session_id: str
    issued_at: float


class TicketStore:
    """In-memory ticket store (the seam for a shared store when scaling out)."""

    def __init__(
        self, ttl: float = TICKET_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self._tickets: dict[str, Ticket] = {}

    def issue(self, user_id: str, login_session_id: str) -> str:
        """A new ticket string."""
        self._sweep()
        value = secrets.token_urlsafe(32)
        self._tickets[value] = Ticket(user_id, login_session_id, self.clock())
        return value

    def redeem(self, value: str | None) -> Ticket | None:
        """Consume a ticket; None if unknown, used or expired (it is gone either way)."""
        if not value:
            return None
        ticket = self._tickets.pop(value, None)
        if ticket is None or self.clock() - ticket.issued_at > self.ttl:
            return None
        return ticket

    def _sweep(self) -> None:
        now = self.clock()
        for key in [k for k, t in self._tickets.items() if now - t.issued_at > self.ttl]:
            self._tickets.pop(key, None)
