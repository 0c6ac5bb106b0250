"""Reading the audit log: filtered pages, event types, users with entries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import Text, and_, func, or_, type_coerce
from sqlmodel import col, select

from ...db.models.audit import AUDIT_COUNT_ID, AuditCount, AuditEntry
from ...db.models.identity import User
from ...pagination import Page
from .audit import to_event

if TYPE_CHECKING:
    from sqlalchemy.sql.elements import ColumnElement

    from ...db.engine import Database
    from ...descriptors import AuditEvent

SEARCH_MAX = 200
# entries read per query while an export streams
EXPORT_BATCH = 1000


@dataclass(frozen=True)
class AuditFilter:
    """What ``GET /audit`` asks for; ``user_id`` narrows to one user's entries."""

    search: str = ""
    event_types: tuple[str, ...] = ()
    user_id: str | None = None
    start: datetime | None = None
    end: datetime | None = None
    only_user: str | None = field(default=None)
    """Set for callers without ``audit.view_any``: their own entries only."""
    through_seq: int | None = None
    """Entries up to this ``seq`` only (an export: the log as it was when asked for)."""


def _like_pattern(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def conditions(flt: AuditFilter, dialect: str = "sqlite") -> list[ColumnElement[bool]]:
    """The WHERE clauses of a filter.

    ``search`` is a case-insensitive substring match: SQLite's LIKE already ignores
    (ASCII) case, so it is used as is there; other databases get ILIKE.
    """
    where: list[ColumnElement[bool]] = []
    if flt.only_user is not None:
        where.append(col(AuditEntry.user_id) == flt.only_user)
    if flt.user_id:
        where.append(col(AuditEntry.user_id) == flt.user_id)
    if flt.through_seq is not None:
        where.append(col(AuditEntry.seq) <= flt.through_seq)
    if flt.event_types:
        where.append(col(AuditEntry.event_type).in_(flt.event_types))
    if flt.start is not None:
        where.append(col(AuditEntry.timestamp) >= flt.start)
    if flt.end is not None:
        where.append(col(AuditEntry.timestamp) <= flt.end)
    if flt.search:
        pattern = _like_pattern(flt.search)
        columns = (
            col(AuditEntry.event_type),
            col(AuditEntry.target),
            type_coerce(col(AuditEntry.details), Text),
            col(AuditEntry.username),
        )
        if dialect == "sqlite":
            matches = [c.like(pattern, escape="\\") for c in columns]
        else:
            matches = [c.ilike(pattern, escape="\\") for c in columns]
        where.append(or_(*matches))
    return where


class AuditQuery:
    """Searches of the audit log: filters, pages, the event types and users it holds."""

    def __init__(
        self,
        *,
        db: Database,
    ) -> None:
        self.db = db

    async def search(self, flt: AuditFilter, page: Page) -> tuple[list[AuditEvent], int]:
        """One page of matching entries, newest first, and the number of matches.

        Indexed filters page through an index and count separately. A free-text
        search scans the entries anyway, so the page and the count come from one scan
        (a window count) instead of two. With no filter at all the count is the
        counter row every audit write keeps (``audit_count``): exact, and one row
        read instead of every entry counted.
        """
        where = conditions(flt, self.db.dialect)
        order = (col(AuditEntry.timestamp).desc(), col(AuditEntry.seq).desc())
        count_query = select(func.count()).select_from(AuditEntry).where(*where)
        async with self.db.session() as session:
            if flt.search:
                windowed = (
                    select(AuditEntry, func.count().over().label("total"))
                    .where(*where)
                    .order_by(*order)
                    .offset(page.offset)
                    .limit(page.limit)
                )
                pairs = (await session.exec(windowed)).all()
                rows = [pair[0] for pair in pairs]
                if pairs:
                    total = int(pairs[0][1])
                elif page.offset == 0:
                    total = 0
                else:
                    total = int((await session.exec(count_query)).one())
            else:
                query = select(AuditEntry).where(*where).order_by(*order)
                rows = list((await session.exec(query.offset(page.offset).limit(page.limit))).all())
                counted = None
                if not where:
                    kept = select(AuditCount.entries).where(AuditCount.id == AUDIT_COUNT_ID)
                    counted = (await session.exec(kept)).first()
                if counted is None:
                    counted = (await session.exec(count_query)).one()
                total = int(counted)
        return [to_event(row) for row in rows], total

    async def stream(
        self, flt: AuditFilter, batch: int = EXPORT_BATCH
    ) -> AsyncIterator[AuditEvent]:
        """Every matching entry, newest first.

        Read in batches, each continuing below the last entry seen (by timestamp and
        seq), so an export of a million entries never holds more than one batch and
        never counts or skips rows.
        """
        where = conditions(flt, self.db.dialect)
        order = (col(AuditEntry.timestamp).desc(), col(AuditEntry.seq).desc())
        last: tuple[datetime, int] | None = None
        while True:
            query = select(AuditEntry).where(*where)
            if last is not None:
                stamp, seq = last
                query = query.where(
                    or_(
                        col(AuditEntry.timestamp) < stamp,
                        and_(col(AuditEntry.timestamp) == stamp, col(AuditEntry.seq) < seq),
                    )
                )
            async with self.db.session() as session:
                rows = list((await session.exec(query.order_by(*order).limit(batch))).all())
            for row in rows:
                yield to_event(row)
            if len(rows) < batch:
                return
            last = (rows[-1].timestamp, int(rows[-1].seq or 0))

    async def last_seq(self) -> int:
        """The newest entry's ``seq`` (0 for an empty log)."""
        async with self.db.session() as session:
            newest = (await session.exec(select(func.max(AuditEntry.seq)))).one()
        return int(newest or 0)

    async def event_types(self, only_user: str | None = None) -> list[str]:
        """Distinct event types in the log (of one user's entries when narrowed)."""
        query = select(AuditEntry.event_type).distinct()
        if only_user is not None:
            query = query.where(col(AuditEntry.user_id) == only_user)
        async with self.db.session() as session:
            return sorted((await session.exec(query)).all())

    async def users_with_entries(self) -> list[dict[str, str]]:
        """``{id, username, displayName}`` of every user id that has entries.

        Current names come from the user table; deleted users keep the names their
        newest entry recorded.
        """
        async with self.db.session() as session:
            ids = [
                i
                for i in (
                    await session.exec(
                        select(AuditEntry.user_id)
                        .where(col(AuditEntry.user_id).is_not(None))
                        .distinct()
                    )
                ).all()
                if i
            ]
            users = {
                u.id: u
                for u in (await session.exec(select(User).where(col(User.id).in_(ids)))).all()
            }
            out = []
            for user_id in ids:
                user = users.get(user_id)
                if user is not None:
                    out.append(
                        {"id": user.id, "username": user.username, "displayName": user.display_name}
                    )
                    continue
                newest = (
                    await session.exec(
                        select(AuditEntry.username, AuditEntry.display_name)
                        .where(col(AuditEntry.user_id) == user_id)
                        .order_by(col(AuditEntry.seq).desc())
                        .limit(1)
                    )
                ).first()
                username, display = newest if newest else ("", "")
                out.append({"id": user_id, "username": username, "displayName": display})
        return sorted(out, key=lambda u: u["username"].lower())
