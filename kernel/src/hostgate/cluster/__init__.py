"""Several gateway nodes: the Redis they share, and control messages between them.

Without ``HOSTGATE_REDIS_URL`` there is one node and nothing here talks to anyone
(``Cluster.redis`` is None, the bus a ``LocalBus``). With it, the kernel's
tickets and rate limits live in Redis and the live sessions hear about closes
decided on other nodes through the ``RedisBus``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .bus import Bus, LocalBus, RedisBus
from .lease import Claims, Lease, LocalClaims, LocalLease, RedisClaims, RedisLease
from .registry import RedisRegistry, SessionRegistry
from .shared import (
    ClusterSetupError,
    check_server,
    claim_database,
    claim_sqlite_host,
    connect,
    machine_id,
    refusal,
)

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from ..config import Config

__all__ = [
    "Bus",
    "Claims",
    "Cluster",
    "ClusterSetupError",
    "Lease",
    "LocalBus",
    "LocalLease",
    "RedisBus",
    "RedisLease",
]

DEAD_SHARE = 2 / 3
"""A node is dead when its heartbeat is this share of ``node_timeout_seconds`` old: the
rest of the timeout covers the beat at which another node notices."""


class Cluster:
    """What this node shares with the others: the Redis client, the bus, the registry."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.redis: Redis | None = connect(config.redis_url) if config.redis_url else None
        self.bus: Bus = LocalBus() if self.redis is None else RedisBus(self.redis)
        self.registry: SessionRegistry | None = None
        """Which node holds which live session (None: one node, nothing to share)."""
        if self.redis is not None:
            dead_after = config.node_timeout_seconds * DEAD_SHARE
            self.registry = RedisRegistry(self.redis, self.bus.node_id, dead_after)
        # the once-only work (notification retries, retention) runs where this is held
        self.lease: Lease = (
            LocalLease()
            if self.redis is None
            else RedisLease(self.redis, self.bus.node_id, seconds=config.lease_seconds)
        )
        # one node at a time on one piece of work (a notification delivery)
        self.claims: Claims = (
            LocalClaims() if self.redis is None else RedisClaims(self.redis, self.bus.node_id)
        )

    @property
    def several_nodes(self) -> bool:
        """True when the nodes share state through Redis; False for a single gateway."""
        return self.redis is not None

    def standby(self) -> None:
        """A command-line process: never hold the lease (the serving nodes run that work)."""
        self.lease.passive = True

    async def start(self) -> None:
        """Refuse a set-up that cannot work, check Redis, start listening to the bus."""
        why = refusal(self.config)
        if why:
            raise ClusterSetupError(why)
        if self.redis is not None:
            await check_server(self.redis, self.config.redis_url)
        await self.bus.start()

    async def claim_database(self, database_id: str, *, replace: bool = False) -> None:
        """Refuse to join nodes that share this Redis but use another database."""
        if self.redis is None:
            return
        await claim_database(self.redis, self.config.redis_url, database_id, replace=replace)
        if self.config.is_sqlite and not replace:  # SQLite: the workers of one machine only
            await claim_sqlite_host(self.redis, self.config.redis_url, machine_id())

    async def stop(self) -> None:
        """Hand the lease back, stop the bus and close the Redis connections."""
        await self.lease.stop()
        await self.bus.stop()
        if self.redis is not None:
            await self.redis.aclose()
