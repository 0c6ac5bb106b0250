"""Access requests: time-boxed use of connections that need approval.

A connection marked ``approvalRequired`` can be seen as usual (owner, shares), but only
its owner and holders of ``connections.edit_any`` use it freely; anyone else asks for
access for a number of minutes with a reason. A holder of ``access.approve`` (not the
requester) approves (the access starts at once and ends by itself) or denies; an
approved access can be revoked early. When access ends, revoked or expired, the user's
open sessions on the connection close, and those going through it as a jump host.
Every step is an audit event (``access.*``), so notification rules can send requests
to a channel. The kernel asks :meth:`AccessRequests.granted` through the
``grant_connection_access`` hook whenever a session opens or re-checks its access.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Sequence
from datetime import timedelta

from hostgate import (
    Caller,
    CloseReason,
    Conflict,
    InvalidInput,
    KernelAPI,
    NotFound,
    PermissionDenied,
    StoredConnection,
    as_utc,
    utcnow,
)
from sqlmodel import col, select

from .models import AccessRequest

log = logging.getLogger("hostgate.access")

APPROVE = "access.approve"
MAX_MINUTES = 7 * 24 * 60
SWEEP_SECONDS = 15.0
ACCESS_ENDED = "your access to this connection ended"
"""What a session's socket says when it closes because the access ended."""


class AccessRequests:
    """Requests, decisions, and the check sessions make while they run."""

    def __init__(self, kernel: KernelAPI) -> None:
        self.kernel = kernel
        self._sweeper: asyncio.Task[None] | None = None

    async def granted(self, user_id: str, connection_id: str) -> bool:
        """True while the user holds an approved access to the connection."""
        now = utcnow()
        async with self.kernel.db.session() as session:
            rows = await session.exec(
                select(AccessRequest.ends_at).where(
                    col(AccessRequest.user_id) == user_id,
                    col(AccessRequest.connection_id) == connection_id,
                    col(AccessRequest.status) == "approved",
                )
            )
            return any(end is not None and as_utc(end) > now for end in rows.all())

    async def request(
        self, caller: Caller, connection: StoredConnection, minutes: int, reason: str
    ) -> AccessRequest:
        """Ask for access (the caller sees the connection; checked by the caller of this)."""
        if not connection.approval_required:
            raise InvalidInput("This connection needs no approval", code="no_approval_needed")
        if not 1 <= minutes <= MAX_MINUTES:
            raise InvalidInput(f"Ask for 1 to {MAX_MINUTES} minutes")
        if not reason.strip():
            raise InvalidInput("Say why you need access")
        async with self.kernel.audit.atomic() as batch:
            open_ = await batch.session.exec(
                select(AccessRequest.id).where(
                    col(AccessRequest.user_id) == caller.user_id,
                    col(AccessRequest.connection_id) == connection.id,
                    col(AccessRequest.status) == "pending",
                )
            )
            if open_.first() is not None:
                raise Conflict(
                    "You already asked for access to this connection", code="request_pending"
                )
            request = AccessRequest(
                user_id=caller.user_id,
                connection_id=connection.id,
                reason=reason.strip()[:1000],
                minutes=minutes,
            )
            batch.session.add(request)
            batch.record(
                "access.requested",
                actor=caller,
                target=connection.name,
                details=self._details(request, connection),
            )
        return request

    async def listing(
        self, caller: Caller, *, everyone: bool, status: str | None
    ) -> list[AccessRequest]:
        """Requests, newest first (at most 500): the caller's, or everyone's for approvers."""
        if everyone and not caller.can(APPROVE):
            raise PermissionDenied(f"Insufficient permissions: requires {APPROVE}")
        query = select(AccessRequest).order_by(col(AccessRequest.created_at).desc()).limit(500)
        if not everyone:
            query = query.where(col(AccessRequest.user_id) == caller.user_id)
        if status is not None:
            query = query.where(col(AccessRequest.status) == status)
        async with self.kernel.db.session() as session:
            return list((await session.exec(query)).all())

    async def decide(
        self, caller: Caller, request_id: str, action: str, note: str = ""
    ) -> AccessRequest:
        """``approve``, ``deny`` or ``revoke`` (approvers) or ``cancel`` (the requester)."""
        async with self.kernel.audit.atomic() as batch:
            request = await batch.session.get(AccessRequest, request_id)
            if request is None:
                raise NotFound("No such access request", code="access_request_not_found")
            own = request.user_id == caller.user_id
            if action == "cancel":
                if not own:
                    raise NotFound("No such access request", code="access_request_not_found")
            elif not caller.can(APPROVE):
                raise PermissionDenied(f"Insufficient permissions: requires {APPROVE}")
            elif own:
                raise PermissionDenied(
                    "Someone else must decide on your own request", code="own_request"
                )
            wanted = {"approve": "pending", "deny": "pending", "cancel": "pending"}
            expected = wanted.get(action, "approved")
            live = request.status == "approved" and (
                request.ends_at is not None and as_utc(request.ends_at) > utcnow()
            )
            if request.status != expected or (action == "revoke" and not live):
                raise Conflict(
                    f"The request is {request.status}; it cannot be {action}d now",
                    code="request_not_" + expected,
                )
            now = utcnow()
            request.status = {
                "approve": "approved", "deny": "denied", "cancel": "cancelled",
                "revoke": "revoked",
            }[action]  # fmt: skip
            request.decided_by = caller.user_id if action != "cancel" else request.decided_by
            request.decided_at = now if action != "cancel" else request.decided_at
            request.note = note.strip()[:1000] or request.note
            if action == "approve":
                request.starts_at = now
                request.ends_at = now + timedelta(minutes=request.minutes)
            if action == "revoke":
                request.ends_at = now
            batch.session.add(request)
            connection = await self.kernel.connections.get(request.connection_id)
            assert connection is not None  # the request goes with its connection
            batch.record(
                f"access.{request.status}",
                actor=caller,
                target=connection.name,
                details=self._details(request, connection),
            )
        if action == "revoke":
            await self._end_sessions([request])
        return request

    @staticmethod
    def _details(request: AccessRequest, connection: StoredConnection) -> dict[str, object]:
        return {
            "requestId": request.id,
            "connectionId": connection.id,
            "requesterId": request.user_id,
            "minutes": request.minutes,
            "reason": request.reason,
            **({"note": request.note} if request.note else {}),
            **({"endsAt": as_utc(request.ends_at).isoformat()} if request.ends_at else {}),
        }

    async def _end_sessions(self, requests: Sequence[AccessRequest]) -> None:
        for request in requests:
            await self.kernel.live.close_where(
                ACCESS_ENDED,
                reason_code=CloseReason.ACCESS_ENDED,
                user_id=request.user_id,
                connection_id=request.connection_id,
            )
        if requests:
            # sessions that only go *through* the connection (a jump host) are not
            # matched above: every node re-checks its sessions' hops
            self.kernel.live.access_changed()

    async def sweep(self) -> int:
        """Mark approved accesses that ran out as expired (audited), closing their sessions."""
        now = utcnow()
        async with self.kernel.audit.atomic() as batch:
            rows = await batch.session.exec(
                select(AccessRequest).where(col(AccessRequest.status) == "approved")
            )
            ended = [r for r in rows.all() if r.ends_at is not None and as_utc(r.ends_at) <= now]
            for request in ended:
                # the row goes with its connection (a foreign key that cascades)
                connection = await self.kernel.connections.get(request.connection_id)
                request.status = "expired"
                batch.session.add(request)
                if connection is None:
                    continue
                batch.record(
                    "access.expired",
                    target=connection.name,
                    username="(system)",
                    details=self._details(request, connection),
                )
        await self._end_sessions(ended)
        return len(ended)

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(SWEEP_SECONDS)
            try:
                await self.sweep()
            except Exception:
                log.exception("expiring access requests failed")

    def start(self) -> None:
        """Start expiring accesses that ran out, every ``SWEEP_SECONDS``."""
        self._sweeper = asyncio.create_task(self._sweep_forever(), name="access-requests")

    async def stop(self) -> None:
        """Stop the sweeper and wait for it to end."""
        sweeper, self._sweeper = self._sweeper, None
        if sweeper is not None:
            sweeper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await sweeper
