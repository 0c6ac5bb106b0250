"""Live sessions: every open terminal/desktop socket and cached remote file session.

Whoever opens something long-lived registers it with a ``close`` callback; identity
and connection changes (revoked login session, deleted user, reset password, lost
permission, unshared connection; not a lockout after failed sign-ins) call
``close_where`` so it ends at once, on whichever gateway node holds it: the close
is also published on the control bus, and every other node closes its matching
sessions (``close_here``).

With several nodes the registry is shared too (``SharedSessions``,
shared_sessions.py): ``everywhere``/``find`` see every node's sessions, ``count``
(the session caps) and ``held`` count the other nodes' as of the last heartbeat,
and a change of access (``access_changed``) makes every node re-check its
sessions at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ...closereasons import CloseReason
from ...cluster.bus import Bus, LocalBus
from ...cluster.registry import SessionRegistry
from ...errors import ApiError
from ...timefmt import utcnow
from .shared_sessions import Reaped, SharedSessions, remote_session

log = logging.getLogger("hostgate.live")

# Why a session was closed, shared by the change that closes it at once and the
# sessions' own periodic access check, so the client reads the same reason whichever
# of the two gets there first.
CONNECTION_DELETED = "the connection was deleted"
NO_LONGER_SHARED = "the connection is no longer shared with you"
ACCESS_ENDED = "your access to this connection ended"
USER_DELETED = "user deleted"

CLOSE_TOPIC = "live.close"
"""Bus topic of ``close_where``: ``{"reason": str, "code": str, "match": {attribute: value}}``
(``code`` the ``CloseReason``)."""
RECHECK_TOPIC = "live.recheck"
"""Bus topic of ``access_changed``: ``{}``."""
CHANGED_TOPIC = "live.changed"
"""Bus topic: a node's sessions changed in the shared registry (``{}``)."""
RECHECK_DELAY = 0.3
"""Seconds another node waits before re-checking: a burst of changes is checked once, and
the explicit close the same change sends (with its own reason) arrives first."""

Closer = Callable[[str, CloseReason | None], Awaitable[None]]
"""``await close(reason, code)``: end the session, telling the client why (in words, as a
code; None from a node of an older version, which sent none)."""


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

    def __init__(self, bus: Bus | None = None, registry: SessionRegistry | None = None) -> None:
        self._sessions: dict[str, LiveSession] = {}
        self._bus: Bus = bus or LocalBus()
        self._bus.subscribe(CLOSE_TOPIC, self._closed_elsewhere)
        self._bus.subscribe(RECHECK_TOPIC, self._recheck_here)
        self._bus.subscribe(CHANGED_TOPIC, self._changed_elsewhere)
        self._recheckers: list[Callable[[], None]] = []
        self._recheck_pending = False
        self._tasks: set[asyncio.Task[Any]] = set()
        self.shared: SharedSessions | None = None
        """The shared registry (several nodes), or None (one node)."""
        if registry is not None:
            self.shared = SharedSessions(
                registry, lambda: self._sessions, self._declared_dead, self._announce_change
            )

    async def _declared_dead(self, reason: str) -> int:
        return await self.close_here(reason, reason_code=CloseReason.UNAVAILABLE)

    @property
    def node_id(self) -> str:
        """The id of this node (in the shared registry and on the bus)."""
        return self.shared.node_id if self.shared is not None else self._bus.node_id

    def add(self, session: LiveSession) -> None:
        """Register an open session."""
        self._sessions[session.id] = session
        if self.shared is not None:
            self.shared.changed()

    def remove(self, session_id: str) -> None:
        """Forget a session (call when it ends, however it ends)."""
        if self._sessions.pop(session_id, None) is not None and self.shared is not None:
            self.shared.changed()

    def get(self, session_id: str) -> LiveSession | None:
        """One of this node's sessions by id."""
        return self._sessions.get(session_id)

    def all(self) -> list[LiveSession]:
        """Every open session of this node."""
        return list(self._sessions.values())

    def _others(self) -> list[LiveSession]:
        if self.shared is None:
            return []
        return [self._remote(entry) for entry in self.shared.others().values()]

    def held(self, session_id: str) -> bool:
        """Whether a node holds the session open (the others' as of the last heartbeat)."""
        if session_id in self._sessions:
            return True
        return self.shared is not None and session_id in self.shared.others()

    def count(self, *, user_id: str | None = None, kinds: tuple[str, ...] = ()) -> int:
        """How many are open on every node (for one user, of some kinds)."""
        return sum(
            1
            for s in [*self._sessions.values(), *self._others()]
            if (user_id is None or s.user_id == user_id) and (not kinds or s.kind in kinds)
        )

    async def everywhere(self) -> list[LiveSession]:
        """Every node's open sessions, read now (503 when Redis cannot be reached)."""
        if self.shared is not None:
            await self.shared.refresh()
        return [*self._sessions.values(), *self._others()]

    async def find(self, session_id: str) -> LiveSession | None:
        """One session by id, whichever node holds it (read now)."""
        local = self._sessions.get(session_id)
        if local is not None or self.shared is None:
            return local
        entry = await self.shared.registry.get(session_id)
        if entry is None or entry.get("node") == self.shared.node_id:
            return None
        return self._remote(entry)

    def _remote(self, entry: dict[str, Any]) -> LiveSession:
        session_id = str(entry["id"])

        async def close(reason: str, code: CloseReason | None) -> None:
            await self.close_where(
                reason, reason_code=code or CloseReason.TERMINATED, id=session_id
            )

        return remote_session(entry, close)

    async def _announce_change(self) -> None:
        # when it cannot be sent, the others read the registry at their next heartbeat
        with contextlib.suppress(ApiError):
            await self._bus.publish(CHANGED_TOPIC, {})

    async def _changed_elsewhere(self, message: dict[str, Any]) -> None:
        if self.shared is not None:
            await self.shared.refresh_soon()

    def on_reaped(self, handler: Reaped) -> None:
        """Run ``handler`` with the sessions of every dead node this node reaps."""
        if self.shared is not None:
            self.shared.on_reaped(handler)

    async def start(self) -> None:
        """Join the shared registry (several nodes)."""
        if self.shared is not None:
            await self.shared.start()

    async def stop(self) -> None:
        """Leave the shared registry."""
        if self.shared is not None:
            await self.shared.stop()

    async def settled(self) -> None:
        """Wait until the shared registry has what changed so far (several nodes)."""
        if self.shared is not None:
            await self.shared.settled()

    # -- access changes -------------------------------------------------------------------

    def on_access_changed(self, recheck: Callable[[], None]) -> None:
        """Call ``recheck`` whenever users, roles or connections changed, on any node."""
        self._recheckers.append(recheck)

    def access_changed(self) -> None:
        """Something about access changed here: re-check sessions on every node."""
        self._run_recheckers()
        task = asyncio.ensure_future(self._publish_recheck())
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _publish_recheck(self) -> None:
        try:
            await self._bus.publish(RECHECK_TOPIC, {})
        except ApiError as exc:
            log.error("could not tell the other nodes to re-check their sessions: %s", exc)

    async def _recheck_here(self, message: dict[str, Any]) -> None:
        if self._recheck_pending:
            return
        self._recheck_pending = True
        try:
            await asyncio.sleep(RECHECK_DELAY)
        finally:
            self._recheck_pending = False
        self._run_recheckers()

    def _run_recheckers(self) -> None:
        for recheck in self._recheckers:
            try:
                recheck()
            except Exception:
                log.exception("re-checking sessions failed")

    async def close_where(self, reason: str, *, reason_code: CloseReason, **match: Any) -> int:
        """Close every session whose attributes equal ``match``, on every node.

        ``reason`` is what the client reads, ``reason_code`` the stable code. Returns
        how many were closed on this node. When the bus cannot reach the other
        nodes (Redis down) it logs that and returns: their sessions' periodic access
        check ends them instead.
        """
        closed = await self.close_here(reason, reason_code=reason_code, **match)
        message = {"reason": reason, "code": reason_code.value, "match": match}
        try:
            await self._bus.publish(CLOSE_TOPIC, message)
        except ApiError as exc:
            log.error("could not tell the other nodes to close sessions (%s): %s", match, exc)
        return closed

    async def _closed_elsewhere(self, message: dict[str, Any]) -> None:
        match = message.get("match")
        if not isinstance(match, dict) or not set(match) <= _MATCHABLE:
            log.warning("ignoring a close message with unknown attributes: %s", match)
            return
        try:
            code: CloseReason | None = CloseReason(str(message.get("code")))
        except ValueError:  # a node of an older version
            code = None
        await self.close_here(str(message.get("reason", "")), reason_code=code, **match)

    async def close_here(
        self, reason: str, *, reason_code: CloseReason | None, **match: Any
    ) -> int:
        """Close this node's sessions whose attributes equal ``match``; return how many."""
        chosen = [
            s
            for s in list(self._sessions.values())
            if all(getattr(s, key) == value for key, value in match.items())
        ]
        for session in chosen:
            self._sessions.pop(session.id, None)
            try:
                await asyncio.wait_for(session.close(reason, reason_code), 10)
            except Exception:
                log.exception("closing live session %s failed", session.id)
        return len(chosen)

    async def close_all(self, reason: str, reason_code: CloseReason) -> int:
        """Close everything on this node (shutdown)."""
        return await self.close_here(reason, reason_code=reason_code)

    async def close_everywhere(self, reason: str, reason_code: CloseReason) -> int:
        """Close everything on every node (a restore replaces what they belong to)."""
        return await self.close_where(reason, reason_code=reason_code)
