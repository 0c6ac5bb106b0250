"""What a live session leaves behind: its history row, audit entries, command log, its text.

The text (commands and output) goes to packs through the ``session_text`` hook.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from ...contract import SessionText
from ...db.models.sessions import RemoteSession, SessionCommand
from ...timefmt import utcnow
from .commandlog import REDACTED, CommandEntry
from .output_text import OutputChunk

if TYPE_CHECKING:
    from ...db.engine import Database
    from ..audit.audit import AuditLog
    from .remote_session import LiveRemoteSession

TextSink = Callable[[list[SessionText]], Awaitable[None]]
"""Where the text of sessions goes once stored (the kernel: the ``session_text`` hook)."""


class SessionLedger:
    """Writes the start, failure and end of sessions, and their queued command-log entries."""

    def __init__(self, *, db: Database, audit: AuditLog, text_sink: TextSink) -> None:
        self.db = db
        self.audit = audit
        self.text_sink = text_sink
        self._commands: list[tuple[LiveRemoteSession, CommandEntry]] = []
        self._output: list[tuple[str, list[OutputChunk]]] = []

    @staticmethod
    def new_row(session: LiveRemoteSession) -> RemoteSession:
        """The history row of a session about to start (not stored yet)."""
        return RemoteSession(
            id=session.id,
            user_id=session.caller.user_id,
            username=session.caller.username,
            connection_id=session.target.connection_id,
            connection_name=session.target.name,
            protocol=session.protocol,
            client_ip=session.caller.ip_address,
            via=str(session.admission.details.get("via") or "")[:16],
        )

    async def record_start(self, session: LiveRemoteSession, row: RemoteSession) -> None:
        """Store the history row and audit ``connection.session_started``."""
        async with self.db.session() as db:
            db.add(row)
            await db.commit()
        await self._audit(
            "connection.session_started",
            session,
            connectionName=session.target.name,
            sessionId=session.id,
            protocol=session.protocol,
            recording=row.recording_state == "recording",
            **({"route": session.target.chain} if session.target.via else {}),
            **session.admission.details,
        )

    async def record_failure(self, session: LiveRemoteSession, message: str) -> None:
        """Audit ``connection.session_failed``: the backend could not be opened."""
        await self._audit(
            "connection.session_failed",
            session,
            connectionName=session.target.name,
            protocol=session.protocol,
            error=message[:500],
            **session.admission.details,
        )

    def queue_commands(self, session: LiveRemoteSession, entries: list[CommandEntry]) -> None:
        """Command-log entries to store on the next flush."""
        self._commands.extend((session, entry) for entry in entries)

    def queue_output(self, session: LiveRemoteSession, chunks: list[OutputChunk]) -> None:
        """Output chunks for the ``session_text`` hook, handed over on the next flush."""
        if chunks:
            self._output.append((session.id, chunks))

    async def flush_commands(self) -> None:
        """Store queued command-log entries, each with its ``session.command`` audit entry.

        The audit entry lets notification rules and SIEM forwarding react to commands;
        it holds what the command log holds (``[password]`` for what was typed at a
        password prompt), never the output. Once stored, the commands (not those typed
        at a password prompt) and the queued output chunks go to ``text_sink``.
        """
        if not self._commands and not self._output:
            return
        queued, self._commands = self._commands, []
        output, self._output = self._output, []
        texts = [
            SessionText(session_id, "output", c.offset_ms, c.text, c.marks)
            for session_id, chunks in output
            for c in chunks
        ]
        if queued:
            async with self.audit.atomic() as batch:
                for session, entry in queued:
                    batch.session.add(
                        SessionCommand(
                            session_id=session.id,
                            timestamp=entry.timestamp,
                            elapsed=entry.elapsed,
                            command=entry.command,
                            output_preview=entry.output_preview,
                            typed_by=list(entry.typed_by) or None,
                        )
                    )
                    batch.record(
                        "session.command",
                        actor=session.caller,
                        target=f"{session.target.host}:{session.target.port}",
                        details={
                            "sessionId": session.id,
                            "connectionId": session.target.connection_id,
                            "connectionName": session.target.name,
                            "protocol": session.protocol,
                            "command": entry.command,
                            "elapsedMs": entry.elapsed,
                            **({"typedBy": list(entry.typed_by)} if entry.typed_by else {}),
                        },
                    )
            texts.extend(
                SessionText(session.id, "command", entry.elapsed, entry.command)
                for session, entry in queued
                if entry.command != REDACTED and entry.command.strip()
            )
        if texts:
            await self.text_sink(texts)

    async def record_end(
        self,
        session: LiveRemoteSession,
        *,
        reason: str,
        state: str | None,
        size: int,
        note: str,
    ) -> None:
        """Write the end of a session to its row and the audit log."""
        await self.flush_commands()
        async with self.db.session() as db:
            row = await db.get(RemoteSession, session.id)
            if row is not None:
                row.ended_at = utcnow()
                row.end_reason = reason[:200]
                if state is not None:
                    row.recording_state = state
                    row.recording_size = size
                    row.recording_note = note
                row.updated_at = utcnow()
                db.add(row)
                await db.commit()
        await self._audit(
            "connection.session_ended",
            session,
            sessionId=session.id,
            protocol=session.protocol,
            reason=reason,
            durationMs=session.elapsed_ms(),
            bytesIn=session.bytes_in,
            bytesOut=session.bytes_out,
            recordingBytes=size,
        )

    async def _audit(self, action: str, session: LiveRemoteSession, **details: object) -> None:
        """An audit entry about a session: its caller, its host:port, its connection id first."""
        await self.audit.record(
            action,
            actor=session.caller,
            target=f"{session.target.host}:{session.target.port}",
            details={"connectionId": session.target.connection_id, **details},
        )
