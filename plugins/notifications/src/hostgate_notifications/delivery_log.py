"""The delivery log: listing, deleting, and retention."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from hostgate import InvalidInput, NotFound, Page, parse_iso, utcnow
from sqlalchemy import delete, func
from sqlmodel import col, select

from .models import NotificationLogEntry

if TYPE_CHECKING:
    from hostgate import AuditAPI as AuditLog
    from hostgate import Caller
    from hostgate import DatabaseAPI as Database
    from sqlmodel.ext.asyncio.session import AsyncSession

STATUSES = ("sent", "failed", "pending")


def check_status(status: str | None) -> str | None:
    """``sent``, ``failed``, ``pending`` or nothing; anything else is a 400."""
    if status in (None, ""):
        return None
    if status not in STATUSES:
        raise InvalidInput(f"status must be one of: {', '.join(STATUSES)}")
    return status


class Logbook:
    """Queries over the delivery log."""

    def __init__(self, *, db: Database, audit: AuditLog) -> None:
        self.db = db
        self.audit = audit

    @staticmethod
    def _filters(
        status: str | None, rule_id: str | None, before: datetime | None = None
    ) -> list[Any]:
        where: list[Any] = []
        if status:
            where.append(NotificationLogEntry.status == status)
        if rule_id:
            where.append(NotificationLogEntry.rule_id == rule_id)
        if before is not None:
            where.append(col(NotificationLogEntry.sent_at) < before)
        return where

    async def page(
        self, page: Page, *, status: str | None = None, rule_id: str | None = None
    ) -> tuple[list[NotificationLogEntry], int]:
        """One page of entries, newest first, and the total matching the filters."""
        where = self._filters(check_status(status), rule_id)
        async with self.db.session() as session:
            count_query = select(func.count()).select_from(NotificationLogEntry).where(*where)
            total = int((await session.exec(count_query)).one())
            query = (
                select(NotificationLogEntry)
                .where(*where)
                .order_by(
                    col(NotificationLogEntry.sent_at).desc(),
                    col(NotificationLogEntry.created_at).desc(),
                    col(NotificationLogEntry.id),
                )
                .offset(page.offset)
                .limit(page.limit)
            )
            rows = (await session.exec(query)).all()
        return list(rows), total

    async def get(self, entry_id: str) -> NotificationLogEntry:
        """One entry or 404."""
        async with self.db.session() as session:
            entry = await session.get(NotificationLogEntry, entry_id)
        if entry is None:
            raise NotFound("Log entry not found")
        return entry

    async def delete_one(self, entry_id: str, *, actor: Caller) -> NotificationLogEntry:
        """Delete one entry, audited as ``notifications.log_entry_deleted``; returns it."""
        async with self.audit.atomic() as batch:
            entry = await batch.session.get(NotificationLogEntry, entry_id)
            if entry is None:
                raise NotFound("Log entry not found")
            await batch.session.delete(entry)
            batch.record(
                "notifications.log_entry_deleted",
                actor=actor,
                target=f"{entry.rule_name} ({entry.channel})",
                details={"entryId": entry.id},
            )
        return entry

    async def delete_matching(
        self, *, status: str | None, rule_id: str | None, before: str | None, actor: Caller
    ) -> int:
        """Delete every entry matching the filters (all of them when none is given).

        ``before`` is an ISO 8601 timestamp. Audited as ``notifications.log_cleared``;
        returns how many entries went.
        """
        cutoff = None
        if before is not None:
            try:
                cutoff = parse_iso(before)
            except ValueError:
                raise InvalidInput("before must be an ISO 8601 timestamp") from None
        where = self._filters(check_status(status), rule_id, cutoff)
        filters = {k: v for k, v in (("status", status), ("rule_id", rule_id)) if v}
        if before is not None:
            filters["before"] = before
        async with self.audit.atomic() as batch:
            statement = delete(NotificationLogEntry).where(*where)
            result = await batch.session.exec(statement)
            deleted = int(result.rowcount or 0)
            batch.record(
                "notifications.log_cleared",
                actor=actor,
                details={"deleted": deleted, "filters": filters},
            )
        return deleted

    @staticmethod
    async def purge_older_than(
        session: AsyncSession, days: int, now: datetime | None = None
    ) -> int:
        """Retention: delete finished entries older than ``days`` days in ``session``.

        Not committed: the caller commits it with its audit entry.
        """
        cutoff = (now or utcnow()) - timedelta(days=days)
        statement = delete(NotificationLogEntry).where(
            col(NotificationLogEntry.sent_at) < cutoff,
            col(NotificationLogEntry.status) != "pending",
            col(NotificationLogEntry.next_attempt_at).is_(None),
        )
        result = await session.exec(statement)  # type: ignore[call-overload]
        return int(result.rowcount or 0)
