"""The terminal and relay session service: opens sessions, keeps them, ticks them.

The sessions themselves live beside this module: ``remote_session.py`` (what
terminals and relays share: live registration, idle and access checks, the
end), ``interactive_terminal.py`` (output pump, recording, command log, re-attach),
``relay_session.py`` (byte relays), ``attachment.py`` (a socket's output queue),
``replay_buffer.py`` (the recent output) and ``session_ledger.py`` (history
rows, audit entries and the command log they write).

One ticker per process, once a second: flushes recordings, stores command-log
entries, ends idle sessions (``security.idle_timeout_minutes`` without input),
detached sessions past their grace, and sessions whose login session ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Any

from ...adapters import RecordableStream, SessionClosed, Stream, Terminal, TerminalSize
from ...closereasons import CloseReason
from ...db.models.connections import Connection
from ...db.models.sessions import RemoteSession
from ...db.types import new_id
from ...errors import ApiError, RemoteError
from ...tasks import cancel_and_wait
from ..netpolicy import conceal
from .asciicast import CastRecorder
from .command_gate import CommandGate, check_whole_command
from .commandlog import CommandTracker
from .interactive_terminal import TerminalSession
from .output_text import OutputChunker
from .relay_session import RelaySession
from .remote_session import Admission, LiveRemoteSession, close_code_for, close_reason_for
from .session_ledger import SessionLedger, TextSink
from .stream_recording import StreamRecording
from .upload_guard import UploadGuard

if TYPE_CHECKING:
    from ...contract import KernelAPI
    from ...db.engine import Database
    from ...metrics import Metrics
    from ..audit.audit import AuditLog
    from ..command_rules.service import CommandRules
    from ..connections.connections import Connections
    from ..identity.identity import Caller, Identity
    from ..lifecycle import Lifecycle
    from ..settings import Settings
    from .live_sessions import LiveSessions
    from .recordings import Recordings

log = logging.getLogger("hostgate.sessions")

TICK_SECONDS = 1.0
LIVE_KINDS = ("terminal", "stream")
CAST_ENV_SHELL = "/bin/sh"
ACCESS_EVENT_PREFIXES = ("role.", "user.", "connection.")
"""Audit events after which open sessions re-check that their user may still use them."""


class TerminalSessions:
    """Opens sessions (caps, backend, row, audit), ticks them, and ends them."""

    def __init__(
        self,
        *,
        db: Database,
        settings: Settings,
        audit: AuditLog,
        identity: Identity,
        connections: Connections,
        live: LiveSessions,
        recordings: Recordings,
        text_sink: TextSink,
        wants_output: Callable[[], Awaitable[bool]],
        metrics: Metrics,
        api: KernelAPI,
        lifecycle: Lifecycle,
    ) -> None:
        self.db = db
        self.settings = settings
        self.audit = audit
        self.identity = identity
        self.connections = connections
        self.live = live
        self.recordings = recordings
        self.metrics = metrics
        # handed to the protocol pack that opens the terminal or stream
        self.api = api
        self._sessions: dict[str, LiveRemoteSession] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self.wants_output = wants_output
        """Whether recorded terminals' output text is collected (a pack asked for it)."""
        self.ledger = SessionLedger(db=db, audit=audit, text_sink=text_sink)
        self._ticker: asyncio.Task[None] | None = None
        self._revalidating = False
        self.command_rules: CommandRules | None = None
        """Set by the kernel: the rules each command line is checked against."""
        lifecycle.on_start(self.start)
        lifecycle.on_stop(self.stop)

    # -- registry ---------------------------------------------------------------------

    def get(self, session_id: str) -> LiveRemoteSession | None:
        """An open session by id."""
        return self._sessions.get(session_id)

    def all(self) -> list[LiveRemoteSession]:
        """Every open session."""
        return list(self._sessions.values())

    def forget(self, session: LiveRemoteSession) -> None:
        """Drop an ended session from the registry."""
        if self._sessions.get(session.id) is session:
            del self._sessions[session.id]

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> None:
        """Run a coroutine in the background, keeping a reference until it is done."""
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def find_detached(self, admission: Admission) -> TerminalSession | None:
        """A session this client may re-attach to (same user, login, connection, id)."""
        wanted = admission.client_session_id
        if not wanted:
            return None
        for session in self._sessions.values():
            if (
                isinstance(session, TerminalSession)
                and session.client_session_id == wanted
                and session.caller.user_id == admission.caller.user_id
                and session.caller.login_session_id == admission.caller.login_session_id
                and session.target.connection_id == admission.target.connection_id
                and not session.ended
            ):
                return session
        return None

    # -- opening ----------------------------------------------------------------------

    def check_caps(self, caller: Caller) -> None:
        """Refuse (4008) when the per-user or the instance cap of live sessions is reached."""
        per_user = int(self.settings.get("security.max_sessions_per_user"))
        total = int(self.settings.get("security.max_sessions_total"))
        if self.live.count(kinds=LIVE_KINDS) >= total:
            raise SessionClosed(
                4008,
                "Server session limit reached. Please try again later.",
                CloseReason.SESSION_LIMIT,
            )
        if self.live.count(user_id=caller.user_id, kinds=LIVE_KINDS) >= per_user:
            raise SessionClosed(
                4008, f"Maximum {per_user} concurrent sessions per user.", CloseReason.SESSION_LIMIT
            )

    async def _connect(self, session: LiveRemoteSession, opening: Awaitable[Any]) -> Any:
        """Reserve a live slot, then run the backend's open; map failures to close codes."""
        self.check_caps(session.caller)
        task = asyncio.ensure_future(opening)

        async def abort(reason: str, reason_code: CloseReason | None) -> None:
            session.abort_reason, session.abort_code = reason, reason_code
            task.cancel()

        entry = session.live_entry()
        entry.close = abort
        self.live.add(entry)
        try:
            return await task
        except asyncio.CancelledError:
            self.live.remove(session.id)
            if session.abort_reason is not None:
                raise SessionClosed(4003, session.abort_reason, session.abort_code) from None
            raise
        except ApiError as exc:
            self.live.remove(session.id)
            await self.ledger.record_failure(session, exc.message)
            shown = conceal(session.caller, exc)
            raise SessionClosed(
                close_code_for(shown),
                shown.message[:500],
                close_reason_for(shown),
            ) from None
        except Exception as exc:
            self.live.remove(session.id)
            log.exception("opening %s session failed", session.protocol)
            await self.ledger.record_failure(session, str(exc))
            shown = conceal(session.caller, RemoteError(f"Connection failed: {exc}"))
            raise SessionClosed(4003, shown.message[:500], close_reason_for(shown)) from None

    async def open_terminal(
        self,
        admission: Admission,
        size: TerminalSize,
        *,
        command: str | None = None,
        pty: bool = True,
    ) -> TerminalSession:
        """Connect a terminal (or run ``command``) and start its recording and command log.

        ``pty`` False (a command only) asks the pack for no PTY; ``size`` still sizes
        the recording.
        """
        spec = admission.spec
        opening: Awaitable[Terminal]
        if command is None:
            if spec.open_terminal is None:
                raise SessionClosed(4002, f"{spec.name} has no terminal", CloseReason.NOT_FOUND)
            opening = spec.open_terminal(self.api, admission.target, size)
        else:
            if spec.open_command is None:
                raise SessionClosed(4002, f"{spec.name} cannot run commands", CloseReason.NOT_FOUND)
            await self._check_command(admission, command)
            opening = spec.open_command(self.api, admission.target, command, size if pty else None)
        session = TerminalSession(self, admission, new_id(), size)
        terminal: Terminal = await self._connect(session, opening)
        row = self.ledger.new_row(session)
        try:
            if await self.records(admission.target.connection_id):
                writer = await self.recordings.create(row, "cast")
                if writer is not None:
                    session.recorder = CastRecorder(
                        writer,
                        width=size.cols,
                        height=size.rows,
                        timestamp=int(time.time()),
                        started=session.started,
                        title=admission.target.name,
                        env={
                            "TERM": str(getattr(terminal, "term_type", "xterm-256color")),
                            "SHELL": str(getattr(terminal, "shell", CAST_ENV_SHELL)),
                        },
                        limit=self.recordings.size_limit(),
                    )
                session.tracker = CommandTracker(session.elapsed_ms, columns=size.cols)
                if writer is not None and await self.wants_output():
                    session.output_index = OutputChunker()
            if command is None:
                await self._gate(session, size)
            await self._start(session, row)
        except BaseException:
            self.live.remove(session.id)
            self.forget(session)
            if session.recorder is not None:
                session.recorder.writer.discard()
            with contextlib.suppress(Exception):
                await terminal.close()
            raise
        session.start(terminal)
        return session

    async def _gate(self, session: TerminalSession, size: TerminalSize) -> None:
        """Put a shell under the command rules, when there are any."""
        rules = self.command_rules
        if rules is None or not await rules.rules():
            return
        scope = await rules.scope(session.target.connection_id, session.caller.role_id)
        session.gate = CommandGate(session, rules, scope)
        if session.tracker is None:  # the rules read the screen's line: no command log kept
            session.tracker = CommandTracker(session.elapsed_ms, columns=size.cols)
            session.log_commands = False

    async def _check_command(self, admission: Admission, command: str) -> None:
        """A command run whole (front-door ``exec``): refused, held or flagged by the rules."""
        rules = self.command_rules
        if rules is not None:
            await check_whole_command(rules, admission, command)

    async def open_relay(self, admission: Admission) -> RelaySession:
        """Connect a byte relay."""
        opener = admission.spec.open_stream
        if opener is None:
            raise SessionClosed(4002, f"{admission.spec.name} has no relay", CloseReason.NOT_FOUND)
        placeholder = LiveRemoteSession(self, admission, new_id())
        stream: Stream = await self._connect(placeholder, opener(self.api, admission.target))
        session = RelaySession(self, admission, placeholder.id, stream)
        session.abort_reason = placeholder.abort_reason
        session.abort_code = placeholder.abort_code
        row = self.ledger.new_row(session)
        try:
            session.guard = await UploadGuard.for_session(self, session)
            if isinstance(stream, RecordableStream) and await self.records(
                admission.target.connection_id
            ):
                await self._record_relay(session, stream, row)
            await self._start(session, row)
        except BaseException:
            self.live.remove(session.id)
            self.forget(session)
            if session.recording is not None:
                session.recording.discard()
            with contextlib.suppress(Exception):
                await stream.close()
            raise
        if session.recording is not None:
            session.recording.start()
        session.start()
        return session

    async def _record_relay(
        self, session: RelaySession, stream: RecordableStream, row: RemoteSession
    ) -> None:
        """Start the gateway-side recording of a relay that can be recorded (VNC)."""
        fmt = stream.recording_format
        writer = await self.recordings.create(row, fmt)
        if writer is None:
            return
        session.recording_format = fmt
        session.recording = StreamRecording(
            writer,
            started=session.started,
            meta={
                "protocol": session.protocol,
                "format": fmt,
                "timestamp": int(time.time()),
                "title": session.target.name,
            },
            limit=self.recordings.size_limit(),
        )
        stream.record_to(session.recording)

    async def records(self, connection_id: str) -> bool:
        """True when sessions of the connection are recorded (globally and for it)."""
        if not self.recordings.enabled():
            return False
        async with self.db.session() as db:
            connection = await db.get(Connection, connection_id)
        return connection is None or connection.recording_enabled

    async def _start(self, session: LiveRemoteSession, row: RemoteSession) -> None:
        if session.abort_reason is not None:
            self.live.remove(session.id)
            raise SessionClosed(4003, session.abort_reason, session.abort_code)
        self.live.add(session.live_entry())
        self._sessions[session.id] = session
        await self.ledger.record_start(session, row)

    # -- access and ending -------------------------------------------------------------

    def access_changed(self) -> None:
        """Something about users, roles or connections changed: re-check open sessions soon."""
        if self._revalidating or not self._sessions:
            return
        self._revalidating = True
        self.spawn(self._revalidate())

    async def _revalidate(self) -> None:
        try:
            await asyncio.sleep(0)
            for session in self.all():
                try:
                    await session.enforce_access()
                except Exception:
                    log.exception("re-checking session %s failed", session.id)
        finally:
            self._revalidating = False

    async def terminate(self, session_id: str, reason: str) -> bool:
        """End an open session on request; False when it is not open."""
        session = self._sessions.get(session_id)
        if session is None:
            return False
        await session.end(4003, reason, CloseReason.TERMINATED)
        return True

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Start the ticker."""
        self._ticker = asyncio.create_task(self._tick_forever(), name="terminal-sessions")

    async def stop(self) -> None:
        """End every session and stop the ticker."""
        for session in self.all():
            await session.end(1001, "Server shutting down", CloseReason.SHUTTING_DOWN)
        await cancel_and_wait(self._ticker)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.ledger.flush_commands()

    async def tick(self) -> None:
        """One round of periodic work over every session."""
        now = time.monotonic()
        for session in self.all():
            try:
                await session.tick(now)
            except Exception:
                log.exception("session %s tick failed", session.id)
        await self.ledger.flush_commands()

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            try:
                await self.tick()
            except Exception:
                log.exception("session ticker failed")
