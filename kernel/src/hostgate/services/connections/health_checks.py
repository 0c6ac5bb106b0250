"""``POST /connections/health-check``: whether each connection's target answers over TCP.

Only connections the caller may use are probed; every other id (unknown, not
shared with the caller, a protocol their role may not use, one that needs an
approved access request the caller does not hold now) answers unreachable
without any network traffic, as does a target the network policy refuses. A
probe is a plain TCP connect to the policy-approved address with a short
timeout, closed at once; nothing is sent. Each caller may ask a few times a
minute (the kernel's rate limiter).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import ApiError
from ...permissions import use_permission
from ...security.ratelimit import Limit

if TYPE_CHECKING:
    from ...security.ratelimit import RateLimiter
    from ..identity.identity import Caller
    from ..netpolicy import NetworkPolicy
    from .connections import Connections

BUCKET = "connections.health_check"
PER_USER = Limit(12, 60)
MAX_CHECKS = 200
TIMEOUT_SECONDS = 3.0
PARALLEL = 16


async def probe(address: str, port: int, timeout: float = TIMEOUT_SECONDS) -> float | None:
    """Milliseconds a TCP connect to ``address:port`` took, or None when it failed."""
    started = time.monotonic()
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(address, port), timeout)
    except (OSError, TimeoutError):
        return None
    elapsed = (time.monotonic() - started) * 1000
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return elapsed


@dataclass(frozen=True)
class Reachability:
    """What a health check found: the connect latency in ms, None when unreachable."""

    connection_id: str
    latency_ms: int | None
    # why it is unreachable: target_denied (the network policy refused the target), no_answer
    # (probed, or its name did not resolve), not_usable (not a connection the caller may use)
    reason: str | None = None

    @property
    def reachable(self) -> bool:
        """Whether the target answered."""
        return self.latency_ms is not None


class HealthChecks:
    """Reachability checks of stored connections, under the network policy and a rate limit."""

    def __init__(
        self,
        *,
        connections: Connections,
        limits: RateLimiter,
        netpolicy: NetworkPolicy,
    ) -> None:
        self.connections = connections
        self.limits = limits
        self.netpolicy = netpolicy

    async def check(self, caller: Caller, ids: Sequence[str]) -> list[Reachability]:
        """The reachability of each distinct id, in the order asked."""
        await self.limits.hit(
            BUCKET, caller.user_id, PER_USER, "Too many health checks; try again in a minute"
        )
        gate = asyncio.Semaphore(PARALLEL)

        async def one(connection_id: str) -> Reachability:
            latency = None
            reason = "not_usable"
            try:
                connection = await self.connections.visible(caller, connection_id)
                # an approval-required connection is as closed to a check as to a session
                usable = caller.can(use_permission(connection.protocol)) and (
                    await self.connections.approval_problem(caller, connection) is None
                )
                if usable:
                    reason = "no_answer"
                    address = await self.netpolicy.resolve_allowed(
                        connection.host,
                        connection.port,
                        actor=caller,
                        purpose="health check",
                        audit=False,
                    )
                    async with gate:
                        latency = await probe(address, connection.port)
            except ApiError as exc:
                latency = None
                if reason == "no_answer" and exc.code == "target_denied":
                    reason = "target_denied"
            if latency is not None:
                return Reachability(connection_id, round(latency))
            return Reachability(connection_id, None, reason)

        return list(await asyncio.gather(*(one(i) for i in dict.fromkeys(ids))))
