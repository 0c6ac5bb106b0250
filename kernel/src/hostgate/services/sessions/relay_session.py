"""A byte relay (VNC, RDP): the server's bytes to the socket and back."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ...adapters import Stream
from ...closereasons import CloseReason
from .remote_session import Admission, LiveRemoteSession
from .upload_guard import NOTE, missing_reason

if TYPE_CHECKING:
    from .session_service import TerminalSessions
    from .upload_guard import UploadGuard


class RelaySession(LiveRemoteSession):
    """A byte relay (VNC, RDP): no recording, the same caps, idle and audit rules."""

    kind = "stream"

    def __init__(
        self, service: TerminalSessions, admission: Admission, session_id: str, stream: Stream
    ) -> None:
        super().__init__(service, admission, session_id)
        self.stream = stream
        self.guard: UploadGuard | None = None
        """Set when the browser must upload the session's recording (RDP)."""

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
        """The shared checks, then the recording upload's (``upload_guard.py``)."""
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

    async def _close_backend(self) -> None:
        await self.stream.close()
