"""File-transfer sessions: every successful file operation, grouped per user and connection.

A session is found or started by the browser's ``X-File-Session-Id`` (bound to
the user and the connection, so nobody can append to another user's session),
or, without that header, by the user's most recent session on the connection
that saw activity within ``IMPLICIT_GAP``. ``endedAt`` is the last activity.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from ...db.models.files import FileEvent, FileSession
from ...errors import NotFound
from ...pagination import Page
from ...timefmt import utcnow

if TYPE_CHECKING:
    from sqlmodel.ext.asyncio.session import AsyncSession

    from ...db.engine import Database
    from ..audit.audit import AuditLog
    from ..identity.identity import Caller

IMPLICIT_GAP = timedelta(minutes=30)
"""Without a client session id, activity after a longer pause starts a new session."""

CLIENT_KEY_MAX = 128
ACTIONS = frozenset({"browse", "download", "upload", "mkdir", "delete", "rename", "chmod", "copy"})
_CLIENT_KEY = re.compile(r"^[\x21-\x7e]{1,128}$")
_EXPORT_BATCH = 500


def human_size(size: int) -> str:
    """``512 B``, ``1.0 KiB``, ``4.2 MiB``..."""
    if size < 1024:
        return f"{size} B"
    value = float(size)
    for unit in ("KiB", "MiB", "GiB", "TiB"):
        value /= 1024
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}"
    return f"{size} B"  # pragma: no cover - the loop always returns


def entries_detail(count: int) -> str:
    """``1 entry``, ``12 entries``."""
    return f"{count} entry" if count == 1 else f"{count} entries"


def client_key_of(header: str | None) -> str | None:
    """The usable client session id from the header, or None (then the session is implicit)."""
    if header is None:
        return None
    value = header.strip()
    return value if _CLIENT_KEY.match(value) else None


@dataclass(frozen=True)
class SessionRef:
    """Where an operation is logged: who, on which connection, with which file protocol."""

    user_id: str
    username: str
    connection_id: str
    connection_name: str
    protocol: str
    client_key: str | None


class FileSessionLog:
    """Records file events and serves the file-session history."""

    def __init__(self, *, db: Database, audit: AuditLog) -> None:
        self.db = db
        self.audit = audit
        self._locks: dict[tuple[str, str, str | None], asyncio.Lock] = {}

    def _lock(self, key: tuple[str, str, str | None]) -> asyncio.Lock:
        lock = self._locks.get(key)
        if lock is None:
            if len(self._locks) > 10_000:
                self._locks = {k: v for k, v in self._locks.items() if v.locked()}
            lock = self._locks[key] = asyncio.Lock()
        return lock

    async def record(
        self, ref: SessionRef, action: str, path: str, detail: str = "", *, actor: Caller
    ) -> str:
        """Append one event (after the operation succeeded); returns the session id."""
        if action not in ACTIONS:
            raise ValueError(f"unknown file action {action!r}")
        key = (ref.user_id, ref.connection_id, ref.client_key)
        async with self._lock(key):
            session_id, started = await self._find_or_start(ref)
            now = utcnow()
            async with self.db.session() as db:
                db.add(
                    FileEvent(
                        session_id=session_id,
                        timestamp=now,
                        action=action,
                        path=path,
                        detail=detail,
                    )
                )
                await db.exec(
                    update(FileSession)
                    .where(col(FileSession.id) == session_id)
                    .values(event_count=FileSession.event_count + 1, ended_at=now)
                )
                await db.commit()
        if started:
            await self._started(ref, session_id, actor, {})
        return session_id

    async def _started(
        self, ref: SessionRef, session_id: str, actor: Caller, details: Mapping[str, Any]
    ) -> None:
        """``connection.session_started`` of a new file session."""
        await self.audit.record(
            "connection.session_started",
            actor=actor,
            target=ref.connection_id,
            details={
                **details,
                "protocol": ref.protocol,
                "connectionName": ref.connection_name,
                "fileSessionId": session_id,
            },
        )

    async def open(
        self, ref: SessionRef, *, actor: Caller, details: Mapping[str, Any] | None = None
    ) -> str:
        """Start (or find) the session of ``ref`` before any event; returns its id.

        For a door's channel, which is a session from its first byte:
        ``connection.session_started`` carries ``details`` beside the usual fields.
        """
        async with self._lock((ref.user_id, ref.connection_id, ref.client_key)):
            session_id, started = await self._find_or_start(ref)
        if started:
            await self._started(ref, session_id, actor, details or {})
        return session_id

    async def _find_or_start(self, ref: SessionRef) -> tuple[str, bool]:
        async with self.db.session() as db:
            query = select(FileSession).where(
                FileSession.user_id == ref.user_id,
                FileSession.connection_id == ref.connection_id,
            )
            if ref.client_key is not None:
                query = query.where(FileSession.client_key == ref.client_key)
            else:
                query = query.where(
                    col(FileSession.client_key).is_(None),
                    FileSession.protocol == ref.protocol,
                    col(FileSession.ended_at) >= utcnow() - IMPLICIT_GAP,
                ).order_by(col(FileSession.ended_at).desc())
            found = (await db.exec(query.limit(1))).first()
            if found is not None:
                return found.id, False
            row = FileSession(
                user_id=ref.user_id,
                username=ref.username,
                client_key=ref.client_key,
                connection_id=ref.connection_id,
                connection_name=ref.connection_name,
                protocol=ref.protocol,
            )
            db.add(row)
            try:
                await db.commit()
            except IntegrityError:
                await db.rollback()
                again = (await db.exec(query.limit(1))).first()
                if again is None:
                    raise
                return again.id, False
            return row.id, True

    async def page(self, caller: Caller, page: Page) -> list[FileSession]:
        """Sessions newest first: every user's with ``sessions.view_any``, else the caller's."""
        query = select(FileSession)
        if not caller.can("sessions.view_any"):
            query = query.where(FileSession.user_id == caller.user_id)
        query = query.order_by(col(FileSession.started_at).desc(), col(FileSession.id))
        async with self.db.session() as db:
            return list((await db.exec(query.offset(page.offset).limit(page.limit))).all())

    async def visible(self, caller: Caller, session_id: str) -> FileSession:
        """One session the caller may see, else NotFound."""
        async with self.db.session() as db:
            row = await db.get(FileSession, session_id)
        if row is None or (row.user_id != caller.user_id and not caller.can("sessions.view_any")):
            raise NotFound("File session not found")
        return row

    async def events(self, session_id: str) -> AsyncIterator[FileEvent]:
        """Every event of a session in order, read in batches (an export streams them)."""
        after = 0
        while True:
            async with self.db.session() as db:
                rows = (
                    await db.exec(
                        select(FileEvent)
                        .where(FileEvent.session_id == session_id, col(FileEvent.seq) > after)
                        .order_by(col(FileEvent.seq))
                        .limit(_EXPORT_BATCH)
                    )
                ).all()
            for row in rows:
                yield row
            if len(rows) < _EXPORT_BATCH:
                return
            after = rows[-1].seq or after

    async def purge(self) -> int:
        """Delete every file session and event; returns how many sessions were deleted."""
        async with self.db.session() as db:
            count = await self.delete_all(db)
            await db.commit()
        return count

    @staticmethod
    async def delete_all(db: AsyncSession) -> int:
        """``purge`` in an open session, not committed (a history purge commits it)."""
        count = (await db.exec(select(func.count()).select_from(FileSession))).one()
        await db.exec(delete(FileEvent))
        await db.exec(delete(FileSession))
        return int(count)
