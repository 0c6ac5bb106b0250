"""Live nudges to the browser: "something you look at changed, fetch it again".

An open app holds one ``/ws/events`` socket (``ws/events.py``). A service that changes
something a page shows calls ``notify(topic, users=..., permission=...)``: every socket
of those users, and of every user whose role holds ``permission``, on every node, gets
``{"type": "changed", "topic": topic}``. A nudge carries no data: the page asks the API
again, which decides what this user may see. Delivery is at most once and may be late
(``cluster/bus.py``); a page fetches on open and at the moments it knows of (an access's
end), so a missed nudge costs freshness, never correctness.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import ApiError

if TYPE_CHECKING:
    from ..cluster.bus import Bus
    from ..principals import Caller

log = logging.getLogger("hostgate.events")

TOPIC = "user-events"
ACCESS_REQUESTS = "access-requests"
"""Access requests changed: asked, decided, withdrawn, revoked or expired."""


@dataclass(eq=False)
class Listener:
    """One socket's subscription: whose it is, and the topics changed since it last looked."""

    caller: Caller
    changed: set[str] = field(default_factory=set)
    ready: asyncio.Event = field(default_factory=asyncio.Event)

    def wants(self, users: frozenset[str], permission: str | None) -> bool:
        """Whether a nudge for ``users`` / holders of ``permission`` is this socket's."""
        if self.caller.user_id in users:
            return True
        return permission is not None and self.caller.can(permission)

    async def next(self) -> list[str]:
        """Wait for changed topics, and take them (several changes become one nudge each)."""
        await self.ready.wait()
        self.ready.clear()
        topics = sorted(self.changed)
        self.changed.clear()
        return topics


class UserEvents:
    """The live nudges of this node's sockets, and the bus that carries them to the others."""

    def __init__(self, bus: Bus) -> None:
        self._bus = bus
        self._listeners: set[Listener] = set()
        self._tasks: set[asyncio.Task[None]] = set()
        bus.subscribe(TOPIC, self._from_elsewhere)

    def listen(self, caller: Caller) -> Listener:
        """Start receiving the caller's nudges (``stop`` when the socket closes)."""
        listener = Listener(caller)
        self._listeners.add(listener)
        return listener

    def stop(self, listener: Listener) -> None:
        """The socket closed."""
        self._listeners.discard(listener)

    def notify(
        self, topic: str, *, users: Iterable[str] = (), permission: str | None = None
    ) -> None:
        """Tell ``users`` and ``permission`` holders, on every node, that ``topic`` changed."""
        wanted = frozenset(users)
        self._deliver(topic, wanted, permission)
        message = {"topic": topic, "users": sorted(wanted), "permission": permission}
        task = asyncio.ensure_future(self._publish(message))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _deliver(self, topic: str, users: frozenset[str], permission: str | None) -> None:
        for listener in self._listeners:
            if listener.wants(users, permission):
                listener.changed.add(topic)
                listener.ready.set()

    async def _publish(self, message: dict[str, Any]) -> None:
        try:
            await self._bus.publish(TOPIC, message)
        except ApiError as exc:
            log.warning("could not tell the other nodes about a change: %s", exc)

    async def _from_elsewhere(self, message: dict[str, Any]) -> None:
        topic = message.get("topic")
        users = message.get("users")
        permission = message.get("permission")
        if not isinstance(topic, str) or not isinstance(users, list):
            return
        wanted = frozenset(user for user in users if isinstance(user, str))
        self._deliver(topic, wanted, permission if isinstance(permission, str) else None)
