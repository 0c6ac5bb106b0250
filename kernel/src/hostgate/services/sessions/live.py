"""Live sessions: every open terminal/desktop socket and cached remote file session.

Whoever opens something long-lived registers it with a ``close`` callback; identity
and connection changes (revoked login session, deleted/locked user, lost permission,
unshared connection) call ``close_where`` so it ends at once, on whichever gateway
node holds it: the close is also published on the control bus, and every other
node closes its matching sessions (``close_here``).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...cluster.bus import Bus, LocalBus
from ...errors import ApiError
from ...timefmt import utcnow

log = logging.getLogger("hostgate.live")

# Why a session was closed, shared by the change that closes it at once and the
# sessions' own periodic access check, so the client reads the same reason whichever
# of the two gets there first.
CONNECTION_DELETED = "the connection was deleted"
NO_LONGER_SHARED = "the connection is no longer shared with you"
ACCESS_ENDED = "your access to this connection ended"
USER_DELETED = "user deleted"

CLOSE_TOPIC = "live.close"
"""Bus topic of ``close_where``: ``{"reason": str, "match": {attribute: value}}``."""

Closer = Callable[[str], Awaitable[None]]
"""``await close(reason)``: end the session, telling the client why."""


@dataclass
class LiveSession:
    """One open session."""

    id: str
    kind: str  # "terminal", "stream", "files"
    protocol: str
    user_id: str
    login_session_id: str | None
    connection_id: str
    close: Closer
    started_at: Any = field(default_factory=utcnow)
    info: dict[str, Any] = field(default_factory=dict)


_MATCHABLE = frozenset(LiveSession.__dataclass_fields__) - {"close"}


class LiveSessions:
    """The registry of this node's sessions (closes reach the other nodes' through the bus)."""

    def __init__(self, bus: Bus | None = None) -> None:
        self._sessions: dict[str, LiveSession] = {}
        self._bus: Bus = bus or LocalBus()
        self._bus.subscribe(CLOSE_TOPIC, self._closed_elsewhere)

    def add(self, session: LiveSession) -> None:
        """Register an open session."""
        self._sessions[session.id] = session

    def remove(self, session_id: str) -> None:
        """Forget a session (call when it ends, however it ends)."""
        self._sessions.pop(session_id, None)

    def get(self, session_id: str) -> LiveSession | None:
        """One session by id."""
        return self._sessions.get(session_id)

    def all(self) -> list[LiveSession]:
        """Every open session."""
        return list(self._sessions.values())

    def count(self, *, user_id: str | None = None, kinds: tuple[str, ...] = ()) -> int:
        """How many are open (for one user, of some kinds)."""
        return sum(
            1
            for s in self._sessions.values()
            if (user_id is None or s.user_id == user_id) and (not kinds or s.kind in kinds)
        )

    async def close_where(self, reason: str, **match: Any) -> int:
        """Close every session whose attributes equal ``match``, on every node.

        Returns how many were closed on this node. When the bus cannot reach the other
        nodes (Redis down) it logs that and returns: their sessions' periodic access
        check ends them instead.
        """
        closed = await self.close_here(reason, **match)
        try:
            await self._bus.publish(CLOSE_TOPIC, {"reason": reason, "match": match})
        except ApiError as exc:
            log.error("could not tell the other nodes to close sessions (%s): %s", match, exc)
        return closed

    async def _closed_elsewhere(self, message: dict[str, Any]) -> None:
        match = message.get("match")
        if not isinstance(match, dict) or not set(match) <= _MATCHABLE:
            log.warning("ignoring a close message with unknown attributes: %s", match)
            return
        await self.close_here(str(message.get("reason", "")), **match)

    async def close_here(self, reason: str, **match: Any) -> int:
        """Close this node's sessions whose attributes equal ``match``; return how many."""
        chosen = [
            s
            for s in list(self._sessions.values())
            if all(getattr(s, key) == value for key, value in match.items())
        ]
        for session in chosen:
            self._sessions.pop(session.id, None)
            try:
                await asyncio.wait_for(session.close(reason), 10)
            except Exception:
                log.exception("closing live session %s failed", session.id)
        return len(chosen)

    async def close_all(self, reason: str) -> int:
        """Close everything on this node (shutdown)."""
        return await self.close_here(reason)
