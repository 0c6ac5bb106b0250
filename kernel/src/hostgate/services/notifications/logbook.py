"""The delivery log: listing, deleting, and retention."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func
from sqlmodel import col, select

from ...db.models.notifications import NotificationLogEntry
from ...errors import InvalidInput, NotFound
from ...pagination import Page
from ...timefmt import iso, utcnow

if TYPE_CHECKING:
    from ...kernel import Kernel

STATUSES = ("sent", "failed", "pending")


def entry_json(entry: NotificationLogEntry) -> dict[str, Any]:
    """The spec's log entry shape (plus ``attempt`` and ``retryOf``)."""
    return {
        "id": entry.id,
        "ruleId": entry.rule_id,
        "ruleName": entry.rule_name,
        "channel": entry.channel,
        "status": entry.status,
        "sentAt": iso(entry.sent_at),
        "error": entry.error,
        "attempt": entry.attempt,
        "retryOf": entry.retry_of,
    }


def check_status(status: str | None) -> str | None:
    """``sent``, ``failed``, ``pending`` or nothing; anything else is a 400."""
    if status in (None, ""):
        return None
    if status not in STATUSES:
        raise InvalidInput(f"status must be one of: {', '.join(STATUSES)}")
    return status


class Logbook:
    """Queries over the delivery log."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel

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
    ) -> tuple[list[dict[str, Any]], int]:
        """One page of entries, newest first, and the total matching the filters."""
        where = self._filters(check_status(status), rule_id)
        async with self.kernel.db.session() as session:
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
        return [entry_json(row) for row in rows], total

    async def get(self, entry_id: str) -> NotificationLogEntry:
        """One entry or 404."""
        async with self.kernel.db.session() as session:
            entry = await session.get(NotificationLogEntry, entry_id)
        if entry is None:
            raise NotFound("Log entry not found")
        return entry

    async def delete_one(self, entry_id: str) -> NotificationLogEntry:
        """Delete one entry; returns it."""
        async with self.kernel.db.session() as session:
            entry = await session.get(NotificationLogEntry, entry_id)
            if entry is None:
                raise NotFound("Log entry not found")
            await session.delete(entry)
            await session.commit()
        return entry

    async def delete_matching(
        self, *, status: str | None, rule_id: str | None, before: datetime | None
    ) -> int:
        """Delete every entry matching the filters (all of them when none is given)."""
        where = self._filters(check_status(status), rule_id, before)
        async with self.kernel.db.session() as session:
            result = await session.exec(delete(NotificationLogEntry).where(*where))  # type: ignore[call-overload]
            await session.commit()
        return int(result.rowcount or 0)

    async def purge_older_than(self, days: int, now: datetime | None = None) -> int:
        """Retention: delete finished entries older than ``days`` days."""
        cutoff = (now or utcnow()) - timedelta(days=days)
        async with self.kernel.db.session() as session:
            statement = delete(NotificationLogEntry).where(
                col(NotificationLogEntry.sent_at) < cutoff,
                col(NotificationLogEntry.status) != "pending",
                col(NotificationLogEntry.next_attempt_at).is_(None),
            )
            result = await session.exec(statement)  # type: ignore[call-overload]
            await session.commit()
        return int(result.rowcount or 0)
