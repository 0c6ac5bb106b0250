"""WebSocket tickets: random, single use, short lived, bound to a user and login session.

``TicketStore`` is the interface; ``MemoryTicketStore`` serves one node,
``RedisTicketStore`` several (a ticket issued by one node is redeemed on any,
exactly once: ``GETDEL`` is atomic). A ticket may carry a ``payload`` (text the
issuer sealed, e.g. a backup download's request); each kind of ticket has its own
store (``namespace``), so one kind is never redeemed as another. Both are
asynchronous because the shared one talks to Redis; when Redis is down both calls
raise the 503 ``SharedStateUnavailable``.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from ..cluster.shared import KEY_PREFIX, reaching

if TYPE_CHECKING:
    from redis.asyncio import Redis

TICKET_TTL_SECONDS = 30.0
MAX_TICKET_LENGTH = 128


@dataclass(frozen=True)
class Ticket:
    """What a redeemed ticket proves."""

    user_id: str
    login_session_id: str
    issued_at: float
    payload: str = ""


class TicketStore(Protocol):
    """Issues tickets and redeems each one once, within ``ttl`` seconds."""

    ttl: float

    async def issue(self, user_id: str, login_session_id: str, payload: str = "") -> str:
        """A new ticket string."""

    async def redeem(self, value: str | None) -> Ticket | None:
        """Consume a ticket; None if unknown, used or expired (it is gone either way)."""


class MemoryTicketStore(TicketStore):
    """Tickets in this process's memory (one node)."""

    def __init__(
        self, ttl: float = TICKET_TTL_SECONDS, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.ttl = ttl
        self.clock = clock
        self._tickets: dict[str, Ticket] = {}

    async def issue(self, user_id: str, login_session_id: str, payload: str = "") -> str:
        """A new ticket string."""
        return self.issue_sync(user_id, login_session_id, payload)

    def issue_sync(self, user_id: str, login_session_id: str, payload: str = "") -> str:
        """``issue`` without an await (this store does no I/O): for synchronous test helpers."""
        self._sweep()
        value = secrets.token_urlsafe(32)
        self._tickets[value] = Ticket(user_id, login_session_id, self.clock(), payload)
        return value

    async def redeem(self, value: str | None) -> Ticket | None:
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


class RedisTicketStore(TicketStore):
    """Tickets in the shared Redis: Redis expires them, ``GETDEL`` redeems once."""

    prefix = f"{KEY_PREFIX}ticket:"

    def __init__(
        self, client: Redis, ttl: float = TICKET_TTL_SECONDS, namespace: str = "ticket"
    ) -> None:
        self.ttl = ttl
        self._client = client
        self.prefix = f"{KEY_PREFIX}{namespace}:"

    async def issue(self, user_id: str, login_session_id: str, payload: str = "") -> str:
        """A new ticket string, stored for ``ttl`` seconds."""
        value = secrets.token_urlsafe(32)
        body = json.dumps({"u": user_id, "l": login_session_id, "t": time.time(), "p": payload})
        with reaching():
            await self._client.set(self.prefix + value, body, px=max(1, int(self.ttl * 1000)))
        return value

    async def redeem(self, value: str | None) -> Ticket | None:
        """Consume a ticket on whichever node; None if unknown, used or expired."""
        if not value or len(value) > MAX_TICKET_LENGTH:
            return None
        with reaching():
            raw = await self._client.getdel(self.prefix + value)
        if raw is None:
            return None
        try:
            body = json.loads(raw)
            return Ticket(str(body["u"]), str(body["l"]), float(body["t"]), str(body.get("p", "")))
        except (ValueError, KeyError, TypeError):
            return None


def ticket_store(
    client: Redis | None, *, namespace: str = "ticket", ttl: float = TICKET_TTL_SECONDS
) -> TicketStore:
    """The shared store when the nodes share a Redis, else the in-memory one.

    Stores of different ``namespace`` never see each other's tickets.
    """
    if client is None:
        return MemoryTicketStore(ttl)
    return RedisTicketStore(client, ttl, namespace)
