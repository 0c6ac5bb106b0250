"""A byte relay (VNC, RDP): the server's bytes to the socket and back, recorded when it can be."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ...adapters import Stream
from ...closereasons import CloseReason
from ...db.models.sessions import RecordingKeyFrame, SessionInputEvent
from .remote_session import Admission, LiveRemoteSession
from .upload_guard import NOTE, missing_reason

if TYPE_CHECKING:
    from .session_service import TerminalSessions
    from .stream_recording import StreamRecording
    from .upload_guard import UploadGuard


class RelaySession(LiveRemoteSession):
    """A byte relay with the same caps, idle and audit rules as terminals.

    A ``RecordableStream`` (VNC) records itself into ``recording`` (handed to it
    before it starts); its key frames and input events are stored once a second.
    """

    kind = "stream"

    def __init__(
        self, service: TerminalSessions, admission: Admission, session_id: str, stream: Stream
    ) -> None:
        super().__init__(service, admission, session_id)
        self.stream = stream
        self.guard: UploadGuard | None = None
        """Set when the browser must upload the session's recording (RDP)."""
        self.recording: StreamRecording | None = None

    def start(self) -> None:
        """Begin pumping the server's bytes."""
        self._reader = asyncio.create_task(self._read_loop(), name=f"relay-{self.id}")

    async def _read_loop(self) -> None:
        await self._pump(self.stream.read, "Connection closed", CloseReason.CONNECTION_CLOSED)

    async def write(self, data: bytes) -> None:
        """Bytes from the browser."""
        if self.ended or not data:
            return
        self.last_input = time.monotonic()
        self.bytes_in += len(data)
        await self._forward(self.stream.write, data)

    async def tick(self, now: float) -> None:
        """Store the recording's marks, then the shared checks and the upload guard's.

        The gateway's own recording (VNC) stores its key frames and input events and
        stops when the disk is low; a browser-made one (RDP) is held to its upload
        (``upload_guard.py``).
        """
        if self.recording is not None:
            if not await self.service.recordings.disk_ok(force=False):
                self.recording.stop("disk_low")
            await self._store_marks()
        await super().tick(now)
        guard = self.guard
        if self.ended or guard is None:
            return
        if not guard.overdue(now, self.bytes_in + self.bytes_out):
            return
        if await guard.excused(now, self.bytes_in + self.bytes_out):
            return
        grace = guard.grace()
        reason = missing_reason(grace)
        await self.service.audit.record(
            "connection.recording_missing",
            user_id=self.caller.user_id,
            username=self.caller.username,
            ip_address=self.caller.ip_address,
            target=self.target.name,
            details={
                "sessionId": self.id,
                "recordingSessionId": guard.recording_id,
                "protocol": self.protocol,
                "connectionId": self.target.connection_id,
                "graceSeconds": grace,
                "uploadStarted": guard.upload_seen,
            },
        )
        if guard.recording_id is not None:
            await self.service.recordings.end_incomplete(
                guard.recording_id, reason=reason, note=NOTE
            )
        await self.end(4003, reason, CloseReason.RECORDING_MISSING)

    async def _store_marks(self) -> None:
        assert self.recording is not None
        frames, events = self.recording.drain_marks()
        if not frames and not events:
            return
        async with self.service.db.session() as db:
            for offset, elapsed in frames:
                db.add(RecordingKeyFrame(session_id=self.id, elapsed=elapsed, offset=offset))
            for elapsed, kind in events:
                db.add(SessionInputEvent(session_id=self.id, elapsed=elapsed, event_type=kind))
            await db.commit()

    async def _close_backend(self) -> None:
        await self.stream.close()

    async def _finish_recording(self) -> tuple[str | None, int, str]:
        if self.recording is None:
            return None, 0, ""
        state, size, note = await self.recording.close()
        await self._store_marks()
        return state, size, note
