"""``kernel.notifications``: rules, matching, intake, digests, retention, channel tests."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hostgate import (
    AuditEvent,
    Caller,
    Conflict,
    InvalidInput,
    KernelAPI,
    NotFound,
    cancel_and_wait,
    iso,
    utcnow,
)
from sqlalchemy import delete
from sqlmodel import col, select

from .channels import ChannelStore
from .delivery import WAKE_TOPIC, DeliveryQueue, delivering
from .delivery_log import Logbook
from .models import (
    NotificationDigestItem,
    NotificationLogEntry,
    NotificationRule,
)
from .render import channel_test_event, render_digest, render_event
from .rule_matching import EMAIL_PATTERN, rule_matches
from .rule_store import RuleBook

if TYPE_CHECKING:
    from hostgate import AuditBatchAPI

log = logging.getLogger("hostgate.notifications")

RETENTION_KEY = "notifications.log_retention_days"
TEST_RULE_ID = "test"
TEST_RULE_NAME = "Test Notification"
PERIODS = {"hourly": timedelta(hours=1), "daily": timedelta(days=1)}
RULES_TOPIC = "notifications.rules"
"""Bus topic: a rule was stored or deleted on a node; the others re-read the rules."""
INTAKE_LIMIT = 10_000


def period_of(cadence: str, moment: datetime) -> tuple[datetime, datetime]:
    """The UTC hour or day a moment falls in."""
    if cadence == "daily":
        start = moment.replace(hour=0, minute=0, second=0, microsecond=0)
    else:
        start = moment.replace(minute=0, second=0, microsecond=0)
    return start, start + PERIODS[cadence]


def _entries_for(
    rule: NotificationRule, payload_base: Mapping[str, Any]
) -> list[NotificationLogEntry]:
    """One pending entry per action (telegram: one per chat id)."""
    entries: list[NotificationLogEntry] = []
    for action in rule.actions:
        channel = str(action.get("channel", ""))
        recipients = [str(r) for r in action.get("recipients") or []]
        groups = [[r] for r in recipients] if channel == "telegram" and recipients else [recipients]
        for group in groups:
            entries.append(
                NotificationLogEntry(
                    rule_id=rule.id,
                    rule_name=rule.name,
                    channel=channel,
                    payload={**payload_base, "recipients": group},
                )
            )
    return entries


class Notifications:
    """Rules and their matching, the delivery log, digests and retention."""

    def __init__(self, kernel: KernelAPI, options: Mapping[str, Any]) -> None:
        self.kernel = kernel
        self.db = kernel.db
        cluster = kernel.cluster
        # several nodes: retries, digests and retention run where the lease is held
        self.lease = cluster.lease
        self.several_nodes = cluster.several_nodes
        self.settings = kernel.settings
        self.audit = kernel.audit
        self.directory = kernel.directory
        specs = kernel.channels
        self.channels = ChannelStore(
            db=self.db, secrets=kernel.secrets, audit=self.audit, specs=specs
        )
        self.log = Logbook(db=self.db, audit=self.audit)
        self.delivery = DeliveryQueue(
            self, db=self.db, metrics=kernel.metrics, specs=specs, api=kernel, cluster=cluster
        )
        self.lease.on_acquired(self._took_lease)
        self._bus = cluster.bus if cluster.several_nodes else None
        self._announcing: set[asyncio.Task[None]] = set()
        if self._bus is not None:  # a retry scheduled here wakes the holder's scheduler
            self._bus.subscribe(WAKE_TOPIC, self._woken)
            # a rule changed on another node: match events against it here too
            self._bus.subscribe(RULES_TOPIC, self._rules_changed_elsewhere)
        self.housekeeping_seconds = float(options.get("housekeeping_seconds", 60.0))
        self.first_housekeeping_delay = float(options.get("first_housekeeping_delay", 5.0))
        self.purge_interval = float(options.get("purge_interval_seconds", 6 * 3600.0))
        # several nodes: how long a delivery stays pending before the lease holder takes
        # it as left by a dead node, and the retry scheduler's turn (tests shorten both)
        self.delivery.orphan_seconds = float(options.get("orphan_seconds", 120.0))
        self.delivery.scheduler_tick = float(options.get("retry_scheduler_seconds", 30.0))
        if "retry_delays" in options:
            self.delivery.retry_delays = tuple(float(d) for d in options["retry_delays"])
        self.rules = RuleBook(
            self.channels.types, db=self.db, audit=self.audit, directory=self.directory
        )
        self.rules.changed = self._rules_changed
        self._intake: asyncio.Queue[tuple[AuditEvent, list[str]]] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._last_purge = 0.0
        self._busy = False

    # -- lifecycle -----------------------------------------------------------------

    async def start(self) -> None:
        """Load the rules, resume pending deliveries, start the workers."""
        await self.reload_rules()
        self._intake = asyncio.Queue(maxsize=INTAKE_LIMIT)
        await self.delivery.start()
        self._last_purge = time.monotonic() - self.purge_interval
        self._tasks = [
            asyncio.create_task(self._intake_worker(), name="notifications-intake"),
            asyncio.create_task(self._housekeeping(), name="notifications-housekeeping"),
        ]

    def _rules_changed(self) -> None:
        """A rule changed here: tell the other nodes (if any) to re-read the rules."""
        if self._bus is None:
            return
        task = asyncio.create_task(self._announce_rules())
        self._announcing.add(task)
        task.add_done_callback(self._announcing.discard)

    async def _announce_rules(self) -> None:
        assert self._bus is not None
        try:
            await self._bus.publish(RULES_TOPIC, {})
        except Exception:  # the others re-read the rules at their next housekeeping
            log.warning("could not tell the other nodes that a notification rule changed")

    async def _rules_changed_elsewhere(self, message: dict[str, Any]) -> None:
        await self.reload_rules()

    async def _woken(self, message: dict[str, Any]) -> None:
        """Another node scheduled a retry: look at the schedule now (if this node runs it)."""
        self.delivery.wake()

    async def _took_lease(self) -> None:
        """Taken the lease: send what nobody is sending (all pending entries on one node)."""
        one_node = not self.several_nodes
        await self.delivery.requeue_left_over(0.0 if one_node else self.delivery.orphan_seconds)
        self.delivery.wake()

    async def stop(self) -> None:
        """Store what is still in the intake as pending deliveries, then stop."""
        await cancel_and_wait(*self._tasks)
        self._tasks = []
        if self._intake is not None:
            while not self._intake.empty():
                event, rule_ids = self._intake.get_nowait()
                try:
                    await self._accept(event, rule_ids)
                except Exception:
                    log.exception("could not store a notification at shut-down")
        await self.delivery.stop()

    def idle(self) -> bool:
        """True when no event waits in the intake and no delivery is queued or in flight."""
        intake_empty = self._intake is None or self._intake.empty()
        return intake_empty and not self._busy and self.delivery.idle()

    async def reload_rules(self) -> None:
        """Re-read every rule into the in-memory matcher (after a restore, at start)."""
        await self.rules.reload()

    # -- events --------------------------------------------------------------------

    def on_event(self, event: AuditEvent) -> None:
        """Match an audit event against the enabled rules; queue matches (never blocks)."""
        if delivering.get():
            return
        matched = [
            rule.id
            for rule in self.rules.cache.values()
            if rule.enabled
            and rule_matches(rule.events, rule.condition_logic, rule.conditions, event)
        ]
        if matched and self._intake is not None:
            try:
                self._intake.put_nowait((event, matched))
            except asyncio.QueueFull:
                log.warning(
                    "notification intake full (%d events waiting): %s not notified",
                    INTAKE_LIMIT,
                    event.event_type,
                )

    async def _intake_worker(self) -> None:
        assert self._intake is not None
        while True:
            event, rule_ids = await self._intake.get()
            self._busy = True
            try:
                created = await self._accept(event, rule_ids)
            except Exception:
                log.exception("could not queue notifications for %s", event.event_type)
                continue
            finally:
                self._busy = False
            self.delivery.enqueue(created)

    async def _accept(self, event: AuditEvent, rule_ids: Sequence[str]) -> list[str]:
        """Store pending entries (instant rules) or digest items; stamp lastTriggeredAt."""
        app_name = str(self.settings.get("app.name"))
        event_json = event.to_json()
        created: list[str] = []
        now = utcnow()
        async with self.db.session() as session:
            for rule_id in rule_ids:
                rule = await session.get(NotificationRule, rule_id)
                if rule is None:
                    continue
                rule.last_triggered_at = now
                session.add(rule)
                if rule.cadence in PERIODS:
                    start, end = period_of(rule.cadence, event.timestamp)
                    session.add(
                        NotificationDigestItem(
                            rule_id=rule.id,
                            cadence=rule.cadence,
                            period_start=start,
                            period_end=end,
                            event=event_json,
                        )
                    )
                    continue
                subject, text = render_event(app_name, rule.name, event_json)
                base = {"subject": subject, "text": text, "event": event_json}
                for entry in _entries_for(rule, base):
                    session.add(entry)
                    created.append(entry.id)
            await session.commit()
        for rule_id in rule_ids:
            cached = self.rules.cache.get(rule_id)
            if cached is not None:
                cached.last_triggered_at = now
        return created

    # -- digests and retention -----------------------------------------------------

    async def flush_digests(self, now: datetime | None = None) -> int:
        """Send one message per rule for every digest period that has ended; return the count."""
        now = now or utcnow()
        app_name = str(self.settings.get("app.name"))
        created: list[str] = []
        messages = 0
        async with self.db.session() as session:
            query = (
                select(NotificationDigestItem)
                .where(col(NotificationDigestItem.period_end) <= now)
                .order_by(
                    col(NotificationDigestItem.rule_id),
                    col(NotificationDigestItem.period_start),
                    col(NotificationDigestItem.created_at),
                )
            )
            items = (await session.exec(query)).all()
            groups: dict[tuple[str, datetime], list[NotificationDigestItem]] = {}
            for item in items:
                groups.setdefault((item.rule_id, item.period_start), []).append(item)
            for (rule_id, start), group in groups.items():
                rule = await session.get(NotificationRule, rule_id)
                # taken atomically: a node flushing the same items at once (a lease that
                # just moved) deletes none of them (it waits for this transaction) and skips
                ids = [item.id for item in group]
                taken = await session.exec(  # type: ignore[call-overload]
                    delete(NotificationDigestItem)
                    .where(col(NotificationDigestItem.id).in_(ids))
                    .execution_options(synchronize_session=False)
                )
                if rule is None or taken.rowcount != len(ids):
                    continue
                events = [item.event for item in group]
                end = group[0].period_end
                subject, text = render_digest(
                    app_name, rule.name, group[0].cadence, start, end, events
                )
                digest = {
                    "digest": True,
                    "cadence": group[0].cadence,
                    "periodStart": iso(start),
                    "periodEnd": iso(end),
                    "count": len(events),
                    "events": events,
                }
                base = {"subject": subject, "text": text, "event": digest}
                for entry in _entries_for(rule, base):
                    session.add(entry)
                    created.append(entry.id)
                messages += 1
            await session.commit()
        self.delivery.enqueue(created)
        return messages

    def retention_days(self) -> int:
        """The delivery log's retention in days."""
        return int(self.settings.get(RETENTION_KEY))

    async def purge(self, now: datetime | None = None) -> int:
        """Delete log entries older than the retention; audited when anything went."""
        async with self.audit.atomic() as batch:
            deleted = await self._purge(batch, self.retention_days(), now)
        self._last_purge = time.monotonic()
        return deleted

    async def _purge(self, batch: AuditBatchAPI, days: int, now: datetime | None = None) -> int:
        """The retention's deletes and their ``notifications.log_purged`` entry, in ``batch``."""
        deleted = await self.log.purge_older_than(batch.session, days, now)
        if deleted:
            batch.record(
                "notifications.log_purged",
                username="system",
                details={"deleted": deleted, "retentionDays": days},
            )
        return deleted

    async def _housekeeping(self) -> None:
        await asyncio.sleep(self.first_housekeeping_delay)
        while True:
            try:
                if self._bus is not None:
                    await self.reload_rules()  # a missed bus message is caught up here
                if self.lease.held():  # one node at a time (several nodes share the log)
                    await self._housekeep()
            except Exception:
                log.exception("notification housekeeping failed")
            await asyncio.sleep(self.housekeeping_seconds)

    async def _housekeep(self) -> None:
        await self.flush_digests()
        if time.monotonic() - self._last_purge >= self.purge_interval:
            await self.purge()

    async def set_retention(self, days: int, *, actor: Caller) -> tuple[int, int]:
        """Change the retention, apply it at once; return ``(before, after)``.

        The setting, the entries it purges and their audit entries commit together.
        """
        before = self.retention_days()
        async with self.audit.atomic() as batch:
            await self.settings.change_in(batch, {RETENTION_KEY: days})
            await self._purge(batch, days)
            batch.record(
                "notifications.retention_changed",
                actor=actor,
                details={"from": before, "to": days},
            )
        self._last_purge = time.monotonic()
        return before, days

    # -- channel tests and manual retries ------------------------------------------

    async def test_channel(
        self,
        channel_type: str,
        overrides: Mapping[str, Any],
        recipients: Sequence[str] | None,
        caller: Caller,
    ) -> dict[str, Any]:
        """Send a real test message with the stored config plus ``overrides``; raise on failure."""
        config = await self.channels.effective(channel_type, overrides)
        event = channel_test_event(caller.username, caller.ip_address, utcnow())
        app_name = str(self.settings.get("app.name"))
        subject, text = render_event(app_name, TEST_RULE_NAME, event)
        targets = [r.strip() for r in recipients or [] if r.strip()]
        if channel_type == "smtp":
            for target in targets:
                if not EMAIL_PATTERN.match(target):
                    raise InvalidInput(f"recipients: {target!r} is not an e-mail address")
            if not targets:
                user = await self.kernel.logins.get_user(caller.user_id)
                own = user.email if user is not None else ""
                targets = [own or str(config.get("from") or "")]
        entry = NotificationLogEntry(
            rule_id=TEST_RULE_ID,
            rule_name=TEST_RULE_NAME,
            channel=channel_type,
            payload={"subject": subject, "text": text, "event": event, "recipients": targets},
            automatic_retries=False,
        )
        async with self.db.session() as session:
            session.add(entry)
            await session.commit()
        done, error = await self.delivery.attempt(entry.id, config=config)
        if error is not None:
            raise error
        assert done is not None
        return {"id": done.id, "status": done.status}

    async def retry(self, entry_id: str) -> NotificationLogEntry:
        """Re-send a failed delivery now, with the channel's current config, as a new entry."""
        async with self.db.session() as session:
            old = await session.get(NotificationLogEntry, entry_id)
            if old is None:
                raise NotFound("Log entry not found")
            if old.status != "failed":
                raise Conflict(f"Only failed deliveries can be retried (this one is {old.status})")
            if not old.payload:
                raise InvalidInput("No action payload to retry")
            retry = NotificationLogEntry(
                rule_id=old.rule_id,
                rule_name=old.rule_name,
                channel=old.channel,
                payload=old.payload,
                attempt=old.attempt + 1,
                retry_of=old.id,
                automatic_retries=False,
            )
            old.next_attempt_at = None
            session.add(old)
            session.add(retry)
            await session.commit()
        done, error = await self.delivery.attempt(retry.id)
        if error is not None:
            raise error
        assert done is not None
        return done


STATE_KEY = "notifications"
"""Where the pack keeps its service in ``kernel.state``."""


def service(kernel: KernelAPI) -> Notifications:
    """The notification service of a started kernel."""
    found: Notifications = kernel.state[STATE_KEY]
    return found
