"""The part of the shared live-session registry this node keeps (cluster/registry.py).

With several nodes (``HOSTGATE_REDIS_URL``), ``SharedSessions`` keeps the
registry in step with this node's ``LiveSessions``: one background task writes
what changed (woken at once by every open and close, so another node lists a
new session within milliseconds), beats the heart every ``dead_after / 4``
seconds, reads the other nodes' entries (``others``: what ``/sessions/active``
lists and the session caps count; read again too whenever another node says on
the bus that its sessions changed) and reaps dead nodes: the entries it is
handed are given to ``on_reaped`` (the recordings mark their rows ended and
close their recordings readable). A node that dies is therefore dealt with
within ``dead_after`` plus one beat: with the default node timeout of 30 s
(``dead_after`` 20 s, a beat every 5 s), within 25 s.

When Redis cannot be reached the task logs it and tries again at the next beat;
the sessions go on. A node reaps only once it has reached Redis for a whole
``dead_after`` (since it started, or since its last failure): after an outage
that cut every node off alike, none is declared dead for heartbeats it could
not send. When a heartbeat finds this node unknown (Redis lost its
data) every entry is written again; when the others declared this node dead
(its heartbeats did not arrive for ``dead_after``), its sessions were marked
ended elsewhere, so ``on_declared_dead`` ends them here too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING

from ...cluster.registry import Entry, SessionRegistry
from ...tasks import cancel_and_wait
from ...timefmt import iso, parse_iso, utcnow

if TYPE_CHECKING:
    from .live_sessions import Closer, LiveSession

log = logging.getLogger("hostgate.live.registry")

BEATS_PER_TIMEOUT = 4
"""Heartbeats (and reaps) per ``dead_after``."""
DECLARED_DEAD = "this gateway node lost contact with the others"
REFRESH_DELAY = 0.1
"""Seconds a node waits after hearing of another node's change before reading the
registry, so that a burst of opens and closes is read once."""

Reaped = Callable[[list[Entry]], Awaitable[object]]
"""``await on_reaped(entries)``: deal with the sessions of a dead node."""


def entry_of(session: LiveSession) -> Entry:
    """What the other nodes know of one of this node's sessions."""
    return {
        "id": session.id,
        "kind": session.kind,
        "protocol": session.protocol,
        "user_id": session.user_id,
        "login_session_id": session.login_session_id,
        "connection_id": session.connection_id,
        "started_at": iso(session.started_at),
        "info": {k: v for k, v in session.info.items() if isinstance(v, str | int | float)},
    }


def started_at(entry: Entry) -> datetime:
    """When an entry's session started (now if the entry does not say)."""
    try:
        return parse_iso(str(entry.get("started_at", "")))
    except ValueError:
        return utcnow()


class SharedSessions:
    """Writes this node's sessions to the registry; reads and reaps the others'."""

    def __init__(
        self,
        registry: SessionRegistry,
        local: Callable[[], dict[str, LiveSession]],
        on_declared_dead: Callable[[str], Awaitable[object]],
        announce: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.registry = registry
        self._local = local
        self._on_declared_dead = on_declared_dead
        self._announce = announce
        self._refresh_pending = False
        self._reaped: list[Reaped] = []
        self._written: dict[str, str] = {}
        self._others: dict[str, Entry] = {}
        self._changed = asyncio.Event()
        self._synced = asyncio.Condition()
        self._requested = 0
        """How many ``settled`` calls asked for a write so far."""
        self._covered = 0
        """How many of them the last finished write covered (it read the sessions after)."""
        self._task: asyncio.Task[None] | None = None
        self._healthy_since: float | None = None
        """Since when (loop time) every beat reached Redis; None after a failure."""

    @property
    def node_id(self) -> str:
        """The id of this node in the registry."""
        return self.registry.node_id

    @property
    def beat_seconds(self) -> float:
        """Seconds between heartbeats."""
        return self.registry.dead_after / BEATS_PER_TIMEOUT

    def on_reaped(self, handler: Reaped) -> None:
        """Run ``handler`` with the entries of every dead node this node reaps."""
        self._reaped.append(handler)

    def changed(self) -> None:
        """A local session opened or ended: write it soon."""
        self._changed.set()

    def others(self) -> dict[str, Entry]:
        """The other nodes' entries, as of the last beat or ``refresh``."""
        return dict(self._others)

    # -- lifecycle ----------------------------------------------------------------------

    async def start(self) -> None:
        """Join (first heartbeat and write), then keep in step in the background."""
        try:
            await self.beat()
        except Exception as exc:  # Redis went away since the start-up check: retried
            self._healthy_since = None
            log.warning("live-session registry: %s", exc)
        self._task = asyncio.create_task(self._run(), name="live-registry")

    async def stop(self) -> None:
        """Stop, and leave the registry (this node's entries go with it)."""
        await cancel_and_wait(self._task)
        self._task = None
        try:
            await self.registry.leave()
        except Exception as exc:
            log.warning("could not leave the live-session registry: %s", exc)

    async def settled(self, timeout: float = 5.0) -> bool:
        """Wait until what changed so far is written; False when ``timeout`` passed first.

        A write covers the calls made before it began (it reads the sessions after), so
        a call waits for the first write that begins after it, however many run meanwhile.
        """
        if self._task is None:
            return True
        self._requested += 1
        wanted = self._requested
        self._changed.set()
        async with self._synced:
            try:
                await asyncio.wait_for(
                    self._synced.wait_for(lambda: self._covered >= wanted), timeout
                )
            except TimeoutError:
                return False
        return True

    # -- work ---------------------------------------------------------------------------

    async def beat(self) -> None:
        """Heartbeat, write, read the others, reap the dead (raises when Redis is down)."""
        state = await self.registry.heartbeat()
        now = asyncio.get_running_loop().time()
        if self._healthy_since is None:
            self._healthy_since = now
        if state != "ok":
            self._written.clear()
        if state == "reaped":
            log.warning("the other gateway nodes declared this node dead; ending its sessions")
            await self._on_declared_dead(DECLARED_DEAD)
        await self.write()
        await self.refresh()
        if now - self._healthy_since < self.registry.dead_after:
            # Only a node that has reached Redis for a whole dead_after judges the
            # others: after an outage every node was cut off alike, and each gets
            # that long to beat again before anyone is declared dead.
            return
        taken = await self.registry.reap()
        if taken:
            nodes = sorted({str(entry.get("node")) for entry in taken})
            log.warning("%d session(s) of dead node(s) %s marked ended", len(taken), nodes)
            for handler in self._reaped:
                try:
                    await handler(taken)
                except Exception:
                    log.exception("ending the sessions of a dead node failed")

    async def write(self) -> None:
        """Write what changed since the last write."""
        current = {key: json.dumps(entry_of(s)) for key, s in self._local().items()}
        put = {
            key: json.loads(value)
            for key, value in current.items()
            if self._written.get(key) != value
        }
        drop = [key for key in self._written if key not in current]
        await self.registry.write(put, drop)
        self._written = current
        if (put or drop) and self._announce is not None:
            await self._announce()

    async def refresh_soon(self) -> None:
        """Another node's sessions changed: read them again (once for a burst)."""
        if self._refresh_pending:
            return
        self._refresh_pending = True
        try:
            await asyncio.sleep(REFRESH_DELAY)
        finally:
            self._refresh_pending = False
        try:
            await self.refresh()
        except Exception as exc:
            log.warning("live-session registry: %s", exc)

    async def refresh(self) -> None:
        """Read the other nodes' entries now."""
        entries = await self.registry.entries()
        self._others = {
            str(e["id"]): e for e in entries if e.get("node") != self.node_id and "id" in e
        }

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        next_beat = loop.time() + self.beat_seconds
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(), max(0.0, next_beat - loop.time()))
            self._changed.clear()
            covering = self._requested
            try:
                if loop.time() >= next_beat:
                    next_beat = loop.time() + self.beat_seconds
                    await self.beat()
                else:
                    await self.write()
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                self._healthy_since = None
                log.warning("live-session registry: %s", exc)
            async with self._synced:
                self._covered = covering
                self._synced.notify_all()


def remote_session(entry: Entry, close: Closer) -> LiveSession:
    """Another node's entry as a ``LiveSession`` whose ``close`` reaches that node."""
    from .live_sessions import LiveSession

    info = entry.get("info")
    return LiveSession(
        id=str(entry["id"]),
        kind=str(entry.get("kind", "")),
        protocol=str(entry.get("protocol", "")),
        user_id=str(entry.get("user_id", "")),
        login_session_id=entry.get("login_session_id"),
        connection_id=str(entry.get("connection_id", "")),
        close=close,
        started_at=started_at(entry),
        info={**(info if isinstance(info, dict) else {}), "node": str(entry.get("node", ""))},
    )
