"""The delivery queue: a worker sends pending log entries; failures retry as new entries.

Every attempt is its own log entry, ``pending`` while in flight and ``sent`` or
``failed`` (with the error text) the moment it ends. A failed attempt whose
error may pass (a remote or network failure) schedules an automatic retry by
setting ``next_attempt_at``; when it is due the scheduler writes a new pending
entry and queues it. Pending entries and scheduled retries live in the
database, so they survive a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hostgate import (
    ApiError,
    InvalidInput,
    NotificationMessage,
    RemoteError,
    RemoteTimeout,
    cancel_and_wait,
    redact,
    utcnow,
)
from sqlalchemy import update
from sqlmodel import col, select

from .channels import secret_values, validate
from .models import NotificationLogEntry

if TYPE_CHECKING:
    from hostgate import BusAPI, ChannelSpec, ClaimsAPI, ClusterAPI, KernelAPI, LeaseAPI
    from hostgate import DatabaseAPI as Database
    from hostgate import MetricsAPI as Metrics

    from .service import Notifications

log = logging.getLogger("hostgate.notifications")

CLAIM_MARGIN = 30.0
"""A delivery's claim lasts the send timeout plus this (recipients, storing the outcome)."""
WAKE_TOPIC = "notifications.wake"
"""Bus topic: a node scheduled a retry; the holder of the lease looks at the schedule."""

#: Set while a delivery runs: events it causes (e.g. a network-policy refusal)
#: never trigger notifications themselves, so a rule cannot feed itself.
delivering: ContextVar[bool] = ContextVar("hostgate_notification_delivering", default=False)


def _failure(exc: BaseException) -> ApiError:
    if isinstance(exc, ApiError):
        return exc
    if isinstance(exc, TimeoutError):
        return RemoteTimeout("the channel did not finish in time")
    text = str(exc).strip()
    return RemoteError(f"{type(exc).__name__}: {text}" if text else type(exc).__name__)


class DeliveryQueue:
    """Queue, worker and retry scheduler for notification deliveries."""

    def __init__(
        self,
        service: Notifications,
        *,
        db: Database,
        metrics: Metrics,
        specs: Mapping[str, ChannelSpec],
        api: KernelAPI,
        cluster: ClusterAPI,
    ) -> None:
        self.service = service
        self.db = db
        self.metrics = metrics
        self.specs = specs
        # handed to the channel pack that sends
        self.api = api
        self.retry_delays: tuple[float, ...] = (30.0, 300.0, 1800.0)
        self.concurrency = 4
        self.send_timeout = 60.0
        self.scheduler_tick = 30.0  # the holder also looks when a node publishes a wake
        self.stop_grace = 2.0
        self._queue: asyncio.Queue[str] | None = None
        self._wake: asyncio.Event | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._inflight: set[asyncio.Task[None]] = set()
        self._mine: set[str] = set()  # pending entries this node queued and has not finished
        self.lease: LeaseAPI = cluster.lease
        self.claims: ClaimsAPI = cluster.claims
        self.several_nodes = cluster.several_nodes
        # a retry scheduled here wakes the holder's scheduler (several nodes only)
        self.bus: BusAPI | None = cluster.bus if cluster.several_nodes else None
        self.orphan_seconds = 120.0  # several nodes: pending this long = left by a dead node

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        """Start the worker and the retry scheduler (the lease re-queues left-over entries)."""
        self._queue = asyncio.Queue()
        self._wake = asyncio.Event()
        self._tasks = [
            asyncio.create_task(self._dispatch(), name="notifications-dispatch"),
            asyncio.create_task(self._schedule(), name="notifications-retries"),
        ]

    async def requeue_left_over(self, older_than: float = 0.0) -> int:
        """Queue pending entries nobody is sending: run by the holder of the lease.

        One node (``older_than`` 0): at start every pending entry was left by the
        last run. Several nodes: the holder takes entries pending for longer than
        ``older_than`` seconds (a node that died left them; a live node sends its
        own within ``send_timeout``), except those it has queued itself.
        """
        if self._queue is None:
            return 0
        cutoff = utcnow() - timedelta(seconds=older_than)
        async with self.db.session() as session:
            query = (
                select(NotificationLogEntry.id)
                .where(NotificationLogEntry.status == "pending")
                .where(col(NotificationLogEntry.created_at) <= cutoff)
                .order_by(col(NotificationLogEntry.created_at))
            )
            pending = [i for i in (await session.exec(query)).all() if i not in self._mine]
        for entry_id in pending:
            self._mine.add(entry_id)
            self._queue.put_nowait(entry_id)
        if pending:
            log.info("re-queued %d pending notification deliveries", len(pending))
        return len(pending)

    async def stop(self) -> None:
        """Stop taking work; in-flight sends get a short grace, then stay pending."""
        await cancel_and_wait(*self._tasks)
        self._tasks = []
        if self._inflight:
            done, still = await asyncio.wait(set(self._inflight), timeout=self.stop_grace)
            for task in still:
                task.cancel()
            for task in still:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task

    def enqueue(self, entry_ids: Sequence[str]) -> None:
        """Queue pending entries (already stored) for the worker."""
        if self._queue is None:
            return
        for entry_id in entry_ids:
            self._mine.add(entry_id)
            self._queue.put_nowait(entry_id)

    def idle(self) -> bool:
        """True when nothing is queued or in flight."""
        queued = self._queue is not None and not self._queue.empty()
        return not queued and not self._inflight

    async def _retry_scheduled(self) -> None:
        """Wake the scheduler that will turn the retry into an entry (maybe another node's)."""
        self.wake()
        if self.bus is not None and not self.lease.held():
            try:
                await self.bus.publish(WAKE_TOPIC, {})
            except Exception:  # the holder still finds it at its next tick
                log.warning("could not tell the other nodes about a scheduled retry")

    def wake(self) -> None:
        """Make the retry scheduler look again now."""
        if self._wake is not None:
            self._wake.set()

    # -- the worker ----------------------------------------------------------------

    async def _dispatch(self) -> None:
        assert self._queue is not None
        slots = asyncio.Semaphore(self.concurrency)
        while True:
            entry_id = await self._queue.get()
            await slots.acquire()
            task = asyncio.create_task(self._run(entry_id, slots))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

    async def _run(self, entry_id: str, slots: asyncio.Semaphore) -> None:
        try:
            await self.attempt(entry_id)
        except Exception:
            log.exception("notification delivery %s crashed", entry_id)
        finally:
            self._mine.discard(entry_id)
            slots.release()

    async def attempt(
        self, entry_id: str, *, config: Mapping[str, Any] | None = None
    ) -> tuple[NotificationLogEntry | None, ApiError | None]:
        """Send one pending entry now; store ``sent`` or ``failed``; return it and the error.

        ``config`` replaces the stored channel configuration (channel tests).
        """
        token = delivering.set(True)
        claim = f"delivery:{entry_id}"
        claimed = False
        try:
            async with self.db.session() as session:
                entry = await session.get(NotificationLogEntry, entry_id)
            if entry is None or entry.status != "pending":
                return entry, None
            # one node at a time sends an entry: the node that stored it, or the lease
            # holder re-queuing one left pending (see requeue_left_over); the claim
            # outlives the send's timeout, so it only expires for a node that died
            try:
                claimed = await self.claims.claim(claim, self.send_timeout + CLAIM_MARGIN)
            except ApiError as exc:  # Redis unreachable: left pending for a later turn
                log.warning("notification %s not sent now: %s", entry_id, exc.message)
                return entry, exc
            if not claimed:
                log.info("notification %s is being sent by another node", entry_id)
                return entry, None
            async with self.db.session() as session:  # finished meanwhile by another node?
                entry = await session.get(NotificationLogEntry, entry_id)
            if entry is None or entry.status != "pending":
                return entry, None
            error = await self._send(entry, config)
            now = utcnow()
            async with self.db.session() as session:
                current = await session.get(NotificationLogEntry, entry_id)
                if current is None:
                    return None, error
                current.sent_at = now
                if error is None:
                    current.status, current.error = "sent", None
                else:
                    current.status, current.error = "failed", error.message[:4000]
                    retriable = error.status >= 500 and current.automatic_retries
                    if retriable and current.attempt <= len(self.retry_delays):
                        delay = self.retry_delays[current.attempt - 1]
                        current.next_attempt_at = now + timedelta(seconds=delay)
                session.add(current)
                await session.commit()
            self.metrics.delivery(current.channel, current.status)
            if current.next_attempt_at is not None:
                await self._retry_scheduled()
            return current, error
        finally:
            if claimed:
                await self.claims.release(claim)
            delivering.reset(token)

    async def _send(
        self, entry: NotificationLogEntry, override: Mapping[str, Any] | None
    ) -> ApiError | None:
        spec = self.specs.get(entry.channel)
        if spec is None:
            return InvalidInput(f'Channel "{entry.channel}" is not installed')
        if override is not None:
            config = dict(override)
        else:
            state = await self.service.channels.state(entry.channel)
            if not state.enabled:
                return InvalidInput(f'Channel "{entry.channel}" is disabled')
            if not state.config:
                return InvalidInput(f'Channel "{entry.channel}" is not configured')
            try:
                config = validate(spec, state.config)
            except ApiError as exc:
                return exc
        payload = entry.payload or {}
        raw = [str(r) for r in payload.get("recipients") or []]
        recipients = await self.resolve_recipients(entry.channel, raw)
        if entry.channel == "smtp" and not recipients:
            return InvalidInput(
                "No e-mail recipients: the rule's smtp action names no address, or its "
                "users and roles have no e-mail address"
            )
        message = NotificationMessage(
            subject=str(payload.get("subject", "")),
            text=str(payload.get("text", "")),
            event=dict(payload.get("event") or {}),
            recipients=tuple(recipients),
            rule_name=entry.rule_name,
        )
        try:
            await asyncio.wait_for(spec.send(self.api, config, message), self.send_timeout)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = _failure(exc)
            failure.message = redact(failure.message, secret_values(spec, config))
            log.info("notification %s via %s failed: %s", entry.id, entry.channel, failure.message)
            return failure
        return None

    async def resolve_recipients(self, channel: str, recipients: Sequence[str]) -> list[str]:
        """smtp: addresses as given, user ids and role ids to their users' e-mails."""
        if channel != "smtp":
            return list(recipients)
        out: list[str] = []
        names = {r for r in recipients if "@" not in r}
        by_user: dict[str, str] = {}
        by_role: dict[str, list[str]] = {}
        if names:
            users = await self.service.directory.users()
            by_user = {u.id: u.email for u in users if u.id in names}
            for role in await self.service.directory.roles():
                if role.id in names or role.name in names:
                    emails = [u.email for u in users if u.role_id == role.id and u.email]
                    by_role[role.id] = emails
                    by_role[role.name] = emails
        for item in recipients:
            found = [item] if "@" in item else ([by_user[item]] if item in by_user else [])
            found += by_role.get(item, []) if "@" not in item else []
            for address in found:
                if address and address.lower() not in (o.lower() for o in out):
                    out.append(address)
        return out

    # -- automatic retries ---------------------------------------------------------

    async def _schedule(self) -> None:
        assert self._wake is not None
        while True:
            self._wake.clear()
            try:
                next_due = None
                if self.lease.held():  # one node at a time turns retries into entries
                    next_due = await self.run_due_retries()
                    if self.several_nodes:
                        await self.requeue_left_over(self.orphan_seconds)
            except Exception:
                log.exception("notification retry scheduler failed")
                next_due = None
            wait = self.scheduler_tick
            if next_due is not None:
                wait = min(wait, max(0.0, (next_due - utcnow()).total_seconds()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), wait)

    async def run_due_retries(self, now: datetime | None = None) -> datetime | None:
        """Turn every due scheduled retry into a new pending entry; return the next due time."""
        now = now or utcnow()
        created: list[str] = []
        async with self.db.session() as session:
            query = select(NotificationLogEntry).where(
                col(NotificationLogEntry.next_attempt_at).is_not(None)
            )
            scheduled = (await session.exec(query)).all()
            upcoming: list[datetime] = []
            for entry in scheduled:
                assert entry.next_attempt_at is not None
                if entry.next_attempt_at > now:
                    upcoming.append(entry.next_attempt_at)
                    continue
                # taken atomically: of two nodes doing this at once (a lease that just
                # moved), one clears the schedule and makes the retry, the other skips
                taken = await session.exec(  # type: ignore[call-overload]
                    update(NotificationLogEntry)
                    .where(col(NotificationLogEntry.id) == entry.id)
                    .where(col(NotificationLogEntry.next_attempt_at).is_not(None))
                    .values(next_attempt_at=None)
                    .execution_options(synchronize_session=False)
                )
                if taken.rowcount != 1:
                    continue
                retry = NotificationLogEntry(
                    rule_id=entry.rule_id,
                    rule_name=entry.rule_name,
                    channel=entry.channel,
                    payload=entry.payload,
                    attempt=entry.attempt + 1,
                    retry_of=entry.id,
                    automatic_retries=True,
                )
                session.add(retry)
                created.append(retry.id)
            await session.commit()
        self.enqueue(created)
        return min(upcoming) if upcoming else None
