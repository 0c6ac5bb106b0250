"""Work that must happen once however many nodes run: one node at a time holds a lease.

The once-only jobs (the notification retry scheduler, digests and delivery-log
retention, the re-sending of deliveries a dead node left pending, recording
retention) run only on the node that holds the ``housekeeping`` lease; the
other nodes check ``held()`` at each turn and skip.

``LocalLease`` is one node's: always held. ``RedisLease`` is a Redis key set
with ``SET NX PX`` (the holder's node id, an expiry of ``seconds``) that the
holder renews every third of that; a holder that dies stops renewing and the
key expires, and the next node to try takes it (within ``seconds`` plus one
renewal interval). A holder that cannot reach Redis stops believing it holds
the lease after two thirds of ``seconds``, before the key expires in Redis, so
two nodes never both run the jobs (see docs/cluster.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from .shared import KEY_PREFIX, reaching

if TYPE_CHECKING:
    from redis.asyncio import Redis

log = logging.getLogger("hostgate.cluster.lease")

LEASE_PREFIX = f"{KEY_PREFIX}lease:"
DEFAULT_SECONDS = 15.0

# renew only when the key still holds our id; release likewise
_RENEW = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

Acquired = Callable[[], Awaitable[None]]
"""``await hook()``: this node has just become the holder."""


class Lease(Protocol):
    """Who runs the once-only work: ``held()`` is true on exactly one node at a time."""

    name: str
    passive: bool
    """Set before ``start``: never take the lease (a command-line process)."""

    def held(self) -> bool:
        """True while this node holds the lease (check before each turn of a job)."""

    def on_acquired(self, hook: Acquired) -> None:
        """Run ``hook`` each time this node becomes the holder."""

    async def start(self) -> None:
        """Try to take the lease now, then keep trying / renewing in the background."""

    async def stop(self) -> None:
        """Stop renewing and hand the lease back at once."""


class LocalLease(Lease):
    """One node: always the holder."""

    def __init__(self, name: str = "housekeeping") -> None:
        self.name = name
        self.passive = False
        self._hooks: list[Acquired] = []

    def held(self) -> bool:
        """Nobody else to share with (unless passive)."""
        return not self.passive

    def on_acquired(self, hook: Acquired) -> None:
        """Run at start (the one node becomes the holder then)."""
        self._hooks.append(hook)

    async def start(self) -> None:
        """The hooks run once: this node holds the lease from now on."""
        if self.passive:
            return
        for hook in self._hooks:
            await hook()

    async def stop(self) -> None:
        """Nothing to hand back."""


class RedisLease(Lease):
    """A Redis key with an expiry, renewed by its holder."""

    def __init__(
        self, client: Redis, node_id: str, name: str = "housekeeping", seconds: float = 0.0
    ) -> None:
        self.name = name
        self.passive = False
        self.node_id = node_id
        self.seconds = seconds or DEFAULT_SECONDS
        self.key = LEASE_PREFIX + name
        self._client = client
        self._until = 0.0
        self._announced = False
        self._hooks: list[Acquired] = []
        self._task: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()
        """Set whenever this node takes or loses the lease (tests wait for it)."""

    def held(self) -> bool:
        """True until two thirds of the expiry after the last successful renewal."""
        return time.monotonic() < self._until

    def on_acquired(self, hook: Acquired) -> None:
        """Run ``hook`` each time this node takes the lease."""
        self._hooks.append(hook)

    async def holder(self) -> str | None:
        """The node id that holds the lease in Redis now (None: nobody)."""
        value = await self._client.get(self.key)
        return value.decode() if isinstance(value, bytes) else value

    async def start(self) -> None:
        """One attempt now (so a lone node runs its jobs from the start), then the loop."""
        if self.passive:
            return
        await self._turn()
        self._task = asyncio.create_task(self._run(), name=f"hostgate-lease-{self.name}")

    async def stop(self) -> None:
        """Stop renewing; delete the key if it is still ours (another node takes over)."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self.held():
            self._until = 0.0
            with contextlib.suppress(Exception):
                await self._client.eval(_RELEASE, 1, self.key, self.node_id)  # type: ignore[misc]
            log.info("handed back the %s lease", self.name)

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.seconds / 3)
            await self._turn()

    async def _turn(self) -> None:
        was = self.held()
        started = time.monotonic()
        ms = int(self.seconds * 1000)
        try:
            if was:
                kept = await self._client.eval(_RENEW, 1, self.key, self.node_id, ms)  # type: ignore[misc]
                self._until = started + self.seconds * 2 / 3 if kept else 0.0
            elif await self._client.set(self.key, self.node_id, nx=True, px=ms):
                self._until = started + self.seconds * 2 / 3
        except Exception as exc:  # Redis down: keep what we had until it runs out
            log.warning("could not reach Redis for the %s lease: %s", self.name, exc)
        await self._announce()

    async def _announce(self) -> None:
        """Log, signal and run the hooks when this node took or lost the lease."""
        now_held = self.held()
        if now_held == self._announced:
            return
        self._announced = now_held
        self.changed.set()
        if not now_held:
            log.warning("this node no longer holds the %s lease", self.name)
            return
        log.info("node %s now runs the once-only work (%s lease)", self.node_id, self.name)
        for hook in self._hooks:
            try:
                await hook()
            except Exception:
                log.exception("taking the %s lease: a hook failed", self.name)


CLAIM_PREFIX = f"{KEY_PREFIX}claim:"


class Claims(Protocol):
    """Short claims on one piece of work (a notification delivery): one node at a time.

    ``claim`` is atomic: of the nodes that try at once, one gets it. A claim
    expires after ``seconds`` (its holder died) unless released before.
    """

    async def claim(self, name: str, seconds: float) -> bool:
        """True when this node now holds ``name``; False when another node does.

        Raises ``SharedStateUnavailable`` (503) when the claim cannot be checked.
        """

    async def release(self, name: str) -> None:
        """Give ``name`` back (only if this node still holds it)."""


class LocalClaims(Claims):
    """One node: claims among this process's own tasks."""

    def __init__(self) -> None:
        self._held: dict[str, float] = {}

    async def claim(self, name: str, seconds: float) -> bool:
        """Held by nobody here (or expired): taken."""
        now = time.monotonic()
        if self._held.get(name, 0.0) > now:
            return False
        self._held[name] = now + seconds
        return True

    async def release(self, name: str) -> None:
        """Forget it."""
        self._held.pop(name, None)


class RedisClaims(Claims):
    """A Redis key per claim, ``SET NX PX`` with this node's id, deleted when released."""

    def __init__(self, client: Redis, node_id: str) -> None:
        self._client = client
        self.node_id = node_id

    async def claim(self, name: str, seconds: float) -> bool:
        """One ``SET NX PX``: the first node to set the key holds the claim."""
        with reaching():
            taken = await self._client.set(
                CLAIM_PREFIX + name, self.node_id, nx=True, px=int(seconds * 1000)
            )
        return bool(taken)

    async def release(self, name: str) -> None:
        """Delete the key if it is still this node's (errors ignored: it expires anyway)."""
        with contextlib.suppress(Exception):
            await self._client.eval(_RELEASE, 1, CLAIM_PREFIX + name, self.node_id)  # type: ignore[misc]
