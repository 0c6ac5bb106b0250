"""Browser-recorded desktops (RDP): a relay whose recording upload stops is ended.

The browser records an RDP desktop and uploads the WebM in chunks (``Recordings``'
uploads); the gateway cannot see the picture, but it can see whether chunks come.
While recordings are on for the connection, a relay session that carries traffic
for longer than ``recordings.upload_grace_seconds`` after the last chunk of its
recording (or after it opened, when no upload ever began) ends with 4003 and the
reason code ``recording_missing``, an audit entry ``connection.recording_missing``,
and its recording row marked ``stopped`` (``recordingComplete: false``).

The socket names its recording with the ``recording`` query parameter (the
``sessionId`` of ``POST /sessions/rdp-session``); a missing, foreign, finished or
already-bound recording counts as no upload at all. What a hostile client can still
do is in docs/terminals.md ("RDP recordings the gateway enforces").
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...db.models.sessions import RemoteSession
from ...timefmt import utcnow

if TYPE_CHECKING:
    from .relay_session import RelaySession
    from .session_service import TerminalSessions

BROWSER_RECORDED = frozenset({"rdp"})
"""Protocols whose recording the browser makes and uploads (``POST /sessions/rdp-session``)."""
GRACE_SETTING = "recordings.upload_grace_seconds"
NOTE = "upload_stopped"
"""``recordingNote`` of a recording cut short because its upload stopped."""
GATEWAY_STOPPED = ("disk_low", "size_limit")
"""Notes of recordings the gateway itself stopped: the session is then not ended."""


def missing_reason(grace: float) -> str:
    """The close reason the user sees."""
    return f"Recording required: no recording upload for {grace:g} s; the session was ended"


class UploadGuard:
    """Watches one relay session's recording upload (ticked once a second)."""

    def __init__(self, service: TerminalSessions, recording_id: str | None) -> None:
        self.service = service
        self.recording_id = recording_id
        self.opened = time.monotonic()
        self.reference = self.opened
        """The last chunk seen, or when the session opened."""
        self.traffic_mark = 0
        """The relay's byte count at ``reference``."""
        self.armed = True

    @classmethod
    async def for_session(
        cls, service: TerminalSessions, session: RelaySession
    ) -> UploadGuard | None:
        """A guard when the session must be recorded by the browser, else None.

        None when the protocol is not browser-recorded, recordings are off (globally
        or for the connection) or the disk is low (as terminals go on unrecorded then).
        """
        if session.protocol not in BROWSER_RECORDED:
            return None
        recordings = service.recordings
        if not await service.records(session.target.connection_id):
            return None
        if not await recordings.disk_ok(force=False):
            return None
        return cls(service, await cls._bindable(service, session))

    @staticmethod
    async def _bindable(service: TerminalSessions, session: RelaySession) -> str | None:
        """The socket's recording when it is the caller's own, of this connection, open, unbound."""
        wanted = session.admission.recording_id
        if wanted is None:
            return None
        for other in service.all():
            guard = getattr(other, "guard", None)
            if other is not session and guard is not None and guard.recording_id == wanted:
                return None
        async with service.db.session() as db:
            row = await db.get(RemoteSession, wanted)
        if (
            row is None
            or row.user_id != session.caller.user_id
            or row.connection_id != session.target.connection_id
            or row.protocol != session.protocol
            or row.recording_state != "recording"
            or row.ended_at is not None
        ):
            return None
        return wanted

    @property
    def upload_seen(self) -> bool:
        """True once a chunk of the recording was seen (here or, via the row, elsewhere)."""
        return self.reference > self.opened

    def grace(self) -> float:
        """``recordings.upload_grace_seconds``."""
        return float(self.service.settings.get(GRACE_SETTING) or 30)

    def overdue(self, now: float, traffic: int) -> bool:
        """True when the relay moved bytes after the last chunk and the grace has passed."""
        if not self.armed:
            return False
        if self.recording_id is not None:
            chunk = self.service.recordings.last_chunk_at(self.recording_id)
            if chunk is not None and chunk > self.reference:
                self.reference = chunk
                self.traffic_mark = traffic
        return traffic > self.traffic_mark and now - self.reference > self.grace()

    async def excused(self, now: float, traffic: int) -> bool:
        """Whether the stored recording row clears an overdue session after all.

        Read once the local clock says overdue: a chunk that reached another gateway
        node moved the upload there (``updated_at`` says when its last chunk was
        stored), and a recording the gateway itself stopped (disk, size cap)
        disarms the guard.
        """
        if self.recording_id is None:
            return False
        async with self.service.db.session() as db:
            row = await db.get(RemoteSession, self.recording_id)
        if row is None:
            return False
        if row.recording_state == "stopped" and row.recording_note in GATEWAY_STOPPED:
            self.armed = False
            return True
        age = (utcnow() - row.updated_at).total_seconds()
        if row.recording_state == "recording" and age <= self.grace():
            self.reference = now - max(0.0, age)
            self.traffic_mark = traffic
            return True
        return False
