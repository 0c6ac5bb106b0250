"""Session history for ``/sessions``: listing, access, command log, input events, purge."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, func, or_
from sqlmodel import col, select

from ...contract import SessionListFilter, SessionRecord
from ...db.models.sessions import (
    RecordingKeyFrame,
    RemoteSession,
    SessionCommand,
    SessionInputEvent,
)
from ...errors import Conflict, InvalidInput, NotFound, PermissionDenied
from ...pagination import Page
from ...permissions import use_permission
from ...timefmt import iso, parse_iso
from .file_sessions import FileSessionLog
from .interactive_terminal import TerminalSession
from .relay_session import RelaySession
from .session_service import TerminalSessions

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..audit.audit import AuditLog
    from ..connections.connections import Connections
    from ..identity.identity import Caller
    from .live_sessions import LiveSession, LiveSessions
    from .recordings import Recordings

VIEW_ANY = "sessions.view_any"
DELETE_BATCH = 500
RECORDED_STATES = ("recording", "complete", "stopped")


@dataclass(frozen=True)
class SessionFilter:
    """What ``GET /sessions`` narrows the list to (every field optional)."""

    protocols: tuple[str, ...] = ()
    user_id: str | None = None
    search: str = ""
    """A substring of the connection name or the username (case-insensitive)."""
    start: datetime | None = None
    """Sessions started at or after this time."""
    end: datetime | None = None
    """Sessions started at or before this time."""
    recorded: bool | None = None
    connection_id: str | None = None

    def conditions(self) -> list[Any]:
        """The WHERE clauses."""
        where: list[Any] = []
        if self.protocols:
            where.append(col(RemoteSession.protocol).in_(self.protocols))
        if self.user_id:
            where.append(col(RemoteSession.user_id) == self.user_id)
        if self.connection_id:
            where.append(col(RemoteSession.connection_id) == self.connection_id)
        if self.search:
            escaped = self.search.lower().replace("\\", "\\\\").replace("%", "\\%")
            pattern = "%" + escaped.replace("_", "\\_") + "%"
            where.append(
                or_(
                    func.lower(col(RemoteSession.connection_name)).like(pattern, escape="\\"),
                    func.lower(col(RemoteSession.username)).like(pattern, escape="\\"),
                )
            )
        if self.start is not None:
            where.append(col(RemoteSession.started_at) >= self.start)
        if self.end is not None:
            where.append(col(RemoteSession.started_at) <= self.end)
        if self.recorded is True:
            where.append(col(RemoteSession.recording_state).in_(RECORDED_STATES))
        elif self.recorded is False:
            where.append(col(RemoteSession.recording_state).not_in(RECORDED_STATES))
        return where


def _time(args: Mapping[str, str], name: str) -> datetime | None:
    raw = args.get(name, "").strip()
    if not raw:
        return None
    try:
        return parse_iso(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be an ISO 8601 timestamp") from None


def recording_complete(state: str | None) -> bool | None:
    """``recordingComplete`` of a session with this ``recording_state``."""
    if state in (None, "none", "purged"):
        return None
    return state == "complete"


def _batches(items: Sequence[str], size: int = DELETE_BATCH) -> Iterable[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


class SessionHistory:
    """Reads and maintains session rows; every read is checked against the caller."""

    def __init__(
        self,
        *,
        db: Database,
        audit: AuditLog,
        connections: Connections,
        recordings: Recordings,
        terminal_sessions: TerminalSessions,
        live: LiveSessions,
    ) -> None:
        self.db = db
        self.audit = audit
        self.connections = connections
        self.recordings = recordings
        self.terminal_sessions = terminal_sessions
        self.live = live

    # -- shaping ----------------------------------------------------------------------

    def has_recording(self, row: RemoteSession) -> bool:
        """True when the session has a readable recording file."""
        return row.recording_state in (
            "recording",
            "complete",
            "stopped",
        ) and self.recordings.has_file(row)

    def recording_size(self, row: RemoteSession, recorded: bool) -> int:
        """Plaintext bytes recorded so far (a live terminal's recorder knows best)."""
        if not recorded:
            return 0
        live = self.terminal_sessions.get(row.id)
        if isinstance(live, TerminalSession) and live.recorder is not None:
            return live.recorder.size
        if isinstance(live, RelaySession) and live.recording is not None:
            return live.recording.size
        return row.recording_size

    def record(self, row: RemoteSession) -> SessionRecord:
        """The spec's session list entry (plus ``connectionId``, ``recordingState``, ``via``).

        ``recordingComplete`` is a hostgate choice too (docs/terminals.md).
        """
        recorded = self.has_recording(row)
        return {
            "id": row.id,
            "userId": row.user_id,
            "protocol": row.protocol,
            "startedAt": iso(row.started_at),
            "endedAt": iso(row.ended_at),
            "hasRecording": recorded,
            "fileSize": self.recording_size(row, recorded),
            "connectionName": row.connection_name,
            "username": row.username,
            "connectionId": row.connection_id,
            "recordingState": row.recording_state,
            "recordingComplete": recording_complete(row.recording_state),
            "via": row.via,
        }

    # -- the list as packs see it (contract.SessionHistoryAPI) ---------------------------

    @property
    def table(self) -> Any:
        """The ``sessions`` table."""
        return RemoteSession.__table__  # type: ignore[attr-defined]

    @staticmethod
    def filter_from(args: Mapping[str, str]) -> SessionFilter:
        """The list's filters from ``GET /sessions`` query arguments; InvalidInput when bad."""
        recorded = args.get("recorded", "")
        return SessionFilter(
            protocols=tuple(p.strip() for p in args.get("protocol", "").split(",") if p.strip()),
            user_id=args.get("userId", "").strip() or None,
            search=args.get("search", "").strip(),
            start=_time(args, "from"),
            end=_time(args, "to"),
            recorded=None if recorded == "" else recorded == "true",
            connection_id=args.get("connectionId", "").strip() or None,
        )

    @staticmethod
    def sees_all(caller: Caller) -> bool:
        """True when ``caller`` may see every user's sessions (``sessions.view_any``)."""
        return caller.can(VIEW_ANY)

    def conditions(self, caller: Caller, flt: SessionListFilter) -> list[Any]:
        """WHERE clauses on the sessions table: ``flt``, and only what ``caller`` may see."""
        if not isinstance(flt, SessionFilter):
            raise TypeError("conditions() takes a filter made by filter_from()")
        where = flt.conditions()
        if not self.sees_all(caller):
            where.append(col(RemoteSession.user_id) == caller.user_id)
        return where

    async def records(self, session_ids: Sequence[str]) -> dict[str, SessionRecord]:
        """The sessions that exist among ``session_ids``, as the session list shows them."""
        rows: list[RemoteSession] = []
        async with self.db.session() as db:
            for chunk in _batches(list(dict.fromkeys(session_ids))):
                query = select(RemoteSession).where(col(RemoteSession.id).in_(chunk))
                rows.extend((await db.exec(query)).all())
        return {row.id: self.record(row) for row in rows}

    # -- reading ----------------------------------------------------------------------

    async def page(
        self, caller: Caller, page: Page, flt: SessionFilter | None = None
    ) -> tuple[list[RemoteSession], int]:
        """Matching sessions newest first, and how many match.

        The caller's own, or everyone's with ``sessions.view_any``.
        """
        where = self.conditions(caller, flt or SessionFilter())
        query = (
            select(RemoteSession)
            .where(*where)
            .order_by(col(RemoteSession.started_at).desc(), col(RemoteSession.id))
            .offset(page.offset)
            .limit(page.limit)
        )
        counting = select(func.count()).select_from(RemoteSession).where(*where)
        async with self.db.session() as db:
            rows = list((await db.exec(query)).all())
            total = int((await db.exec(counting)).one())
        return rows, total

    async def visible(self, caller: Caller, session_id: str) -> RemoteSession:
        """A session the caller owns or may view (``sessions.view_any``)."""
        async with self.db.session() as db:
            row = await db.get(RemoteSession, session_id)
        if row is None:
            raise NotFound("Session not found")
        if row.user_id != caller.user_id and not caller.can(VIEW_ANY):
            raise PermissionDenied("Forbidden")
        return row

    async def owned(self, caller: Caller, session_id: str) -> RemoteSession:
        """A session the caller owns (uploads and input events are the owner's alone)."""
        async with self.db.session() as db:
            row = await db.get(RemoteSession, session_id)
        if row is None:
            raise NotFound("Session not found")
        if row.user_id != caller.user_id:
            raise PermissionDenied("Forbidden")
        return row

    async def commands(self, session_id: str) -> list[SessionCommand]:
        """The command log, in order (``elapsed`` in milliseconds)."""
        query = (
            select(SessionCommand)
            .where(SessionCommand.session_id == session_id)
            .order_by(col(SessionCommand.elapsed), col(SessionCommand.timestamp))
        )
        async with self.db.session() as db:
            return list((await db.exec(query)).all())

    async def input_events(self, session_id: str) -> list[SessionInputEvent]:
        """Recorded input events, in order."""
        query = (
            select(SessionInputEvent)
            .where(SessionInputEvent.session_id == session_id)
            .order_by(col(SessionInputEvent.elapsed))
        )
        async with self.db.session() as db:
            return list((await db.exec(query)).all())

    async def key_frames(self, session_id: str) -> list[RecordingKeyFrame]:
        """The key frame index of a gateway-recorded relay session, in order."""
        query = (
            select(RecordingKeyFrame)
            .where(RecordingKeyFrame.session_id == session_id)
            .order_by(col(RecordingKeyFrame.elapsed))
        )
        async with self.db.session() as db:
            return list((await db.exec(query)).all())

    # -- RDP sessions recorded by the browser ---------------------------------------------

    async def create_rdp(self, caller: Caller, connection_id: str) -> tuple[str, bool]:
        """A session row for a browser RDP session; ``shouldRecord`` from the settings."""
        connection = await self.connections.visible(caller, connection_id)
        if connection.protocol != "rdp":
            raise InvalidInput("Connection is not an RDP connection", code="wrong_protocol")
        permission = use_permission("rdp")
        if not caller.can(permission):
            raise PermissionDenied(f"Insufficient permissions: requires {permission}")
        row = RemoteSession(
            user_id=caller.user_id,
            username=caller.username,
            connection_id=connection.id,
            connection_name=connection.name,
            protocol="rdp",
            client_ip=caller.ip_address,
        )
        if connection.recording_enabled:
            writer = await self.recordings.create(row, "webm")
            if writer is not None:
                writer.close()
        async with self.db.session() as db:
            db.add(row)
            await db.commit()
        return row.id, row.recording_state == "recording"

    async def add_input_events(
        self, row: RemoteSession, events: Sequence[tuple[float, str]]
    ) -> int:
        """Store input events of a recorded session; Conflict when it is not recorded."""
        if row.recording_state == "none":
            raise Conflict("This session is not being recorded", code="not_recording")
        async with self.db.session() as db:
            for elapsed, kind in events:
                db.add(SessionInputEvent(session_id=row.id, elapsed=elapsed, event_type=kind))
            await db.commit()
        return len(events)

    # -- live sessions ------------------------------------------------------------------

    async def active(self, caller: Caller) -> list[LiveSession]:
        """Every node's open sessions, newest first: own, or all with ``sessions.view_any``."""
        visible = [
            live
            for live in await self.live.everywhere()
            if live.user_id == caller.user_id or caller.can(VIEW_ANY)
        ]
        return sorted(visible, key=lambda live: live.started_at, reverse=True)

    # -- purge --------------------------------------------------------------------------

    async def purge(self, *, actor: Caller) -> dict[str, int]:
        """Delete every session that is not open, all their recordings, and file sessions.

        The rows go in one commit with the ``sessions.purged`` entry; the recording
        files are deleted once that commit succeeded.
        """
        recordings = self.recordings
        await self.live.everywhere()  # the other nodes' sessions as of now
        async with self.db.session() as db:
            rows = (await db.exec(select(RemoteSession))).all()
        busy = {row.id for row in rows if self.live.held(row.id) or recordings.uploading(row.id)}
        doomed = [row for row in rows if row.id not in busy]
        ids = [row.id for row in doomed]
        keep_files = {
            Path(row.recording_file).name for row in rows if row.id in busy and row.recording_file
        }
        files = [name for name in await recordings.store.sizes() if name not in keep_files]
        async with self.audit.atomic() as batch:
            db = batch.session
            for chunk in _batches(ids):
                await db.exec(
                    delete(SessionCommand).where(col(SessionCommand.session_id).in_(chunk))
                )
                await db.exec(
                    delete(SessionInputEvent).where(col(SessionInputEvent.session_id).in_(chunk))
                )
                await db.exec(
                    delete(RecordingKeyFrame).where(col(RecordingKeyFrame.session_id).in_(chunk))
                )
                await db.exec(delete(RemoteSession).where(col(RemoteSession.id).in_(chunk)))
            counts = {
                "deletedSessions": len(ids),
                "deletedRecordings": len(files),
                "deletedFileSessions": await FileSessionLog.delete_all(db),
            }
            batch.record("sessions.purged", actor=actor, target="all", details=counts)
        await recordings.store.delete(files)
        return counts
