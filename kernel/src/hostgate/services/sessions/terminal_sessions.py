"""Live terminal and relay sessions: one object per open backend, whatever socket watches it.

A session owns the backend (a ``Terminal`` or ``Stream`` from a pack), its
history row, recording and command log. WebSockets *attach* to it through an
``Attachment``: a bounded output queue, so a slow browser makes the reader wait
(and the backend pause) instead of the gateway buffering without bound. A
terminal opened with a client ``sessionId`` survives its socket for a grace
period and can be re-attached (the last 512 KiB of output are replayed).

One ticker per process, once a second: flushes recordings, stores command-log
entries, ends idle sessions (``security.idle_timeout_minutes`` without input),
detached sessions past their grace, and sessions whose login session ended.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ...adapters import ConnectionTarget, SessionClosed, Stream, Terminal, TerminalSize
from ...db.models.connections import Connection
from ...db.models.identity import User
from ...db.models.sessions import RemoteSession, SessionCommand
from ...db.types import new_id
from ...descriptors import ProtocolSpec
from ...errors import ApiError, RemoteError
from ...permissions import use_permission
from ...tasks import cancel_and_wait
from ...timefmt import as_utc, utcnow
from ..identity.identity import ClientInfo
from ..netpolicy import conceal
from .asciicast import CastRecorder
from .commandlog import CommandEntry, CommandTracker
from .live import (
    ACCESS_ENDED,
    CONNECTION_DELETED,
    NO_LONGER_SHARED,
    USER_DELETED,
    LiveSession,
)

if TYPE_CHECKING:
    from ...contract import KernelAPI
    from ...db.engine import Database
    from ...metrics import Metrics
    from ..audit.audit import AuditLog
    from ..connections.connections import Connections
    from ..identity.identity import Caller, Identity
    from ..lifecycle import Lifecycle
    from ..settings import Settings
    from .live import LiveSessions
    from .recordings import Recordings

log = logging.getLogger("hostgate.sessions")

OUTPUT_QUEUE_CHUNKS = 8
REPLAY_BYTES = 512 * 1024
RECENT_BYTES = 64 * 1024
"""Output every terminal keeps: what a live viewer's first screen is drawn from."""
REATTACH_GRACE = {"telnet": 30.0}
DEFAULT_REATTACH_GRACE = 120.0
TICK_SECONDS = 1.0
LOGIN_CHECK_SECONDS = 30.0
CLOSE_TIMEOUT = 5.0
LIVE_KINDS = ("terminal", "stream")
CAST_ENV_SHELL = "/bin/sh"
SHUTDOWN_WORDS = "shutting down"
ACCESS_EVENT_PREFIXES = ("role.", "user.", "connection.", "auth.account_locked")
"""Audit events after which open sessions re-check that their user may still use them."""


@dataclass(frozen=True)
class Admission:
    """Who opens what: the result of a redeemed ticket and an access check."""

    caller: Caller
    spec: ProtocolSpec
    target: ConnectionTarget
    client_session_id: str | None = None


class Attachment:
    """One WebSocket watching a session: a bounded queue of output and how it ended.

    The queue holds output (bytes) and, rarely, a text frame (str) such as the
    notice that someone is watching the session.
    """

    def __init__(self, maxsize: int = OUTPUT_QUEUE_CHUNKS) -> None:
        self.queue: asyncio.Queue[bytes | str | None] = asyncio.Queue(maxsize)
        self.finished = False
        self.ended = asyncio.Event()
        self.code = 1000
        self.reason = ""
        self._closer: asyncio.Task[None] | None = None
        self._notices: set[asyncio.Task[None]] = set()

    def notify(self, text: str) -> None:
        """Send a text frame after the output queued so far."""
        if self.finished:
            return
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            task = asyncio.ensure_future(self.queue.put(text))
            self._notices.add(task)
            task.add_done_callback(self._notices.discard)

    def finish(self, code: int, reason: str) -> None:
        """End the socket after the queued output: the sender sees ``None`` last."""
        if self.finished:
            return
        self.finished = True
        self.code, self.reason = code, reason
        self.ended.set()
        try:
            self.queue.put_nowait(None)
        except asyncio.QueueFull:
            self._closer = asyncio.ensure_future(self.queue.put(None))

    def discard(self) -> None:
        """Drop queued output (the socket is gone) so a blocked reader moves on."""
        while True:
            try:
                self.queue.get_nowait()
            except asyncio.QueueEmpty:
                return


def close_code_for(error: ApiError) -> int:
    """The WebSocket close code of an error raised while opening a session."""
    if error.status == 401:
        return 4001
    if error.status == 404:
        return 4002
    return 4003


class LiveRemoteSession:
    """What terminals and relays share: the row, live registration, idle and login checks."""

    kind = "terminal"
    recording_format = ""

    def __init__(self, service: TerminalSessions, admission: Admission, session_id: str) -> None:
        self.service = service
        self.id = session_id
        self.admission = admission
        self.caller = admission.caller
        self.target = admission.target
        self.protocol = admission.spec.name
        self.client_session_id = admission.client_session_id
        self.started = time.monotonic()
        self.last_input = self.started
        self.last_login_check = self.started
        self.attachment: Attachment | None = None
        self.detached_at: float | None = None
        self.ended = False
        self.abort_reason: str | None = None
        self.bytes_out = 0
        self.bytes_in = 0
        self._reader: asyncio.Task[None] | None = None

    @property
    def reattach_grace(self) -> float:
        """Seconds a detached session waits for its socket to come back (0: none)."""
        return 0.0

    def elapsed_ms(self) -> int:
        """Milliseconds since the session started."""
        return int((time.monotonic() - self.started) * 1000)

    def live_entry(self) -> LiveSession:
        """The registry entry that lets identity and connection changes close us."""
        return LiveSession(
            id=self.id,
            kind=self.kind,
            protocol=self.protocol,
            user_id=self.caller.user_id,
            login_session_id=self.caller.login_session_id,
            connection_id=self.target.connection_id,
            close=self._close_from_registry,
            info={
                "username": self.caller.username,
                "connectionName": self.target.name,
                "clientIp": self.caller.ip_address,
            },
        )

    async def _close_from_registry(self, reason: str) -> None:
        if SHUTDOWN_WORDS in reason.lower():
            await self.end(1001, "Server shutting down")
            return
        login = self.caller.login_session_id
        live = login is not None and await self.service.identity.check_login_session(login)
        await self.end(4003 if live else 4001, reason)

    # -- sockets ----------------------------------------------------------------------

    def attach(self, attachment: Attachment) -> None:
        """Make a socket the session's output sink (the previous one is closed)."""
        previous = self.attachment
        if previous is not None and previous is not attachment:
            previous.finish(4003, "Session opened in another window")
            previous.discard()
        self.attachment = attachment
        self.detached_at = None

    def detach(self, attachment: Attachment) -> None:
        """The socket went away: wait for a re-attach, or end."""
        if self.attachment is not attachment:
            return
        self.attachment = None
        attachment.discard()
        if self.ended:
            return
        if self.reattach_grace > 0:
            self.detached_at = time.monotonic()
        else:
            self.service.spawn(self.end(1000, "Client disconnected"))

    async def _deliver(self, data: bytes) -> None:
        attachment = self.attachment
        if attachment is not None and not attachment.finished:
            await attachment.queue.put(data)

    # -- lifecycle --------------------------------------------------------------------

    async def tick(self, now: float) -> None:
        """Once a second: idle, grace and login-session checks."""
        idle_minutes = int(self.service.settings.get("security.idle_timeout_minutes") or 0)
        if idle_minutes > 0 and now - self.last_input > idle_minutes * 60:
            await self.end(4003, f"Closed after {idle_minutes} minute(s) without input")
            return
        if self.detached_at is not None and now - self.detached_at > self.reattach_grace:
            await self.end(1000, "Client did not come back")
            return
        if now - self.last_login_check >= LOGIN_CHECK_SECONDS:
            self.last_login_check = now
            await self.enforce_access()

    async def access_problem(self) -> tuple[int, str] | None:
        """Why the user may no longer use this session (close code, reason), or None."""
        service = self.service
        login = self.caller.login_session_id
        if login is not None and not await service.identity.check_login_session(login):
            return 4001, "Session has been revoked"
        async with service.db.session() as db:
            user = await db.get(User, self.caller.user_id)
        if user is None:
            return 4001, USER_DELETED
        if user.locked_until is not None and as_utc(user.locked_until) > utcnow():
            return 4003, "The account is locked"
        caller = await service.identity.caller_for_user(
            user.id, login, ClientInfo(ip_address=self.caller.ip_address)
        )
        if caller is None:
            return 4001, USER_DELETED
        try:
            connection = await service.connections.visible(caller, self.target.connection_id)
        except ApiError:
            async with service.db.session() as db:
                gone = await db.get(Connection, self.target.connection_id) is None
            return 4003, CONNECTION_DELETED if gone else NO_LONGER_SHARED
        permission = use_permission(connection.protocol)
        if not caller.can(permission):
            return 4003, f"Permission {permission} was withdrawn"
        if await service.connections.approval_problem(caller, connection) is not None:
            return 4003, ACCESS_ENDED
        return None

    async def enforce_access(self) -> None:
        """End the session when its user may no longer use it."""
        if self.ended:
            return
        problem = await self.access_problem()
        if problem is not None:
            await self.end(*problem)

    async def _close_backend(self) -> None:
        """Close whatever the session holds (nothing before it is connected)."""
        return None

    async def _finish_recording(self) -> tuple[str | None, int, str]:
        """(recording state, size, note) to store at the end; None leaves the row as is."""
        return None, 0, ""

    async def end(self, code: int, reason: str) -> None:
        """End the session once: close the socket and the backend, store the history."""
        if self.ended:
            return
        self.ended = True
        self.service.live.remove(self.id)
        self.service.metrics.session_ended(self.protocol, self.bytes_in, self.bytes_out)
        self.service.forget(self)
        reader = self._reader
        if reader is not None and reader is not asyncio.current_task():
            reader.cancel()
        try:
            try:
                await asyncio.wait_for(self._close_backend(), CLOSE_TIMEOUT)
            except Exception:
                log.debug("closing the backend of session %s failed", self.id, exc_info=True)
            state, size, note = await self._finish_recording()
            if state in ("complete", "stopped"):
                self.service.metrics.recording_written(self.recording_format)
            await self.service.store_end(self, reason=reason, state=state, size=size, note=note)
        finally:
            if self.attachment is not None:
                self.attachment.finish(code, reason)


class TerminalSession(LiveRemoteSession):
    """An interactive terminal with recording, command log and optional re-attach."""

    kind = "terminal"
    recording_format = "cast"

    def __init__(
        self,
        service: TerminalSessions,
        admission: Admission,
        session_id: str,
        size: TerminalSize,
    ) -> None:
        super().__init__(service, admission, session_id)
        self.size = size
        self.terminal: Terminal | None = None
        self.recorder: CastRecorder | None = None
        self.tracker: CommandTracker | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._input_decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._replay: deque[bytes] = deque()
        self._replay_size = 0
        self.viewers: list[Callable[[bytes], None]] = []
        """Live viewers (services/live_view.py), handed every output chunk."""
        self.notice: str | None = None
        """A text frame for every socket that attaches (who is watching), or None."""

    @property
    def reattach_grace(self) -> float:
        """Grace for a client that gave a ``sessionId``; none otherwise."""
        if not self.client_session_id:
            return 0.0
        return REATTACH_GRACE.get(self.protocol, DEFAULT_REATTACH_GRACE)

    def start(self, terminal: Terminal) -> None:
        """Begin pumping the backend's output."""
        self.terminal = terminal
        self._reader = asyncio.create_task(self._read_loop(), name=f"terminal-{self.id}")

    async def _read_loop(self) -> None:
        assert self.terminal is not None
        code, reason = 1000, "Shell closed"
        try:
            while True:
                data = await self.terminal.read()
                if not data:
                    break
                self._output(data)
                await self._deliver(data)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            code, reason = 4003, f"Connection lost: {exc}"[:500]
        self.service.spawn(self.end(code, reason))

    def _output(self, data: bytes) -> None:
        self.bytes_out += len(data)
        if self.recorder is not None:
            self.recorder.output(data, time.monotonic())
        if self.tracker is not None:
            self.tracker.output(self._decoder.decode(data))
        self._replay.append(data)
        self._replay_size += len(data)
        keep = REPLAY_BYTES if self.reattach_grace > 0 else RECENT_BYTES
        while self._replay_size > keep and len(self._replay) > 1:
            self._replay_size -= len(self._replay.popleft())
        for viewer in self.viewers:
            viewer(data)

    def replay(self) -> bytes:
        """The recent output: a re-attaching socket is shown it first, live viewers its screen."""
        return b"".join(self._replay)

    async def write(self, data: bytes) -> None:
        """Keystrokes from the socket."""
        if self.terminal is None or self.ended or not data:
            return
        self.last_input = time.monotonic()
        self.bytes_in += len(data)
        if self.tracker is not None:
            self.tracker.input(self._input_decoder.decode(data))
        await self.terminal.write(data)

    async def resize(self, size: TerminalSize) -> None:
        """A window size change from the socket."""
        if self.terminal is None or self.ended or size == self.size:
            return
        self.size = size
        if self.recorder is not None:
            self.recorder.resize(size.cols, size.rows, time.monotonic())
        if self.tracker is not None:
            self.tracker.resize(size.cols)
        await self.terminal.resize(size)

    async def tick(self, now: float) -> None:
        """Flush the recording, collect command-log entries, then the common checks."""
        if self.recorder is not None:
            if not await self.service.recordings.disk_ok(force=False):
                self.recorder.stop("disk_low")
            self.recorder.writer.flush()
        if self.tracker is not None:
            self.tracker.tick()
            self.service.queue_commands(self, self.tracker.drain())
        await super().tick(now)

    async def _close_backend(self) -> None:
        if self.terminal is not None:
            await self.terminal.close()

    async def _finish_recording(self) -> tuple[str | None, int, str]:
        if self.tracker is not None:
            self.tracker.finish()
            self.service.queue_commands(self, self.tracker.drain())
        recorder = self.recorder
        if recorder is None:
            return None, 0, ""
        recorder.finish(time.monotonic())
        await asyncio.to_thread(recorder.writer.close)
        if recorder.stopped:
            return "stopped", recorder.size, recorder.stopped
        return "complete", recorder.size, ""


class RelaySession(LiveRemoteSession):
    """A byte relay (VNC, RDP): no recording, the same caps, idle and audit rules."""

    kind = "stream"

    def __init__(
        self, service: TerminalSessions, admission: Admission, session_id: str, stream: Stream
    ) -> None:
        super().__init__(service, admission, session_id)
        self.stream = stream

    def start(self) -> None:
        """Begin pumping the server's bytes."""
        self._reader = asyncio.create_task(self._read_loop(), name=f"relay-{self.id}")

    async def _read_loop(self) -> None:
        code, reason = 1000, "Connection closed"
        try:
            while True:
                data = await self.stream.read()
                if not data:
                    break
                self.bytes_out += len(data)
                await self._deliver(data)
        except asyncio.CancelledError:
            raise
        except SessionClosed as closed:
            code, reason = closed.code, closed.reason[:500]
        except Exception as exc:
            code, reason = 4003, f"Connection lost: {exc}"[:500]
        self.service.spawn(self.end(code, reason))

    async def write(self, data: bytes) -> None:
        """Bytes from the browser."""
        if self.ended or not data:
            return
        self.last_input = time.monotonic()
        self.bytes_in += len(data)
        await self.stream.write(data)

    async def _close_backend(self) -> None:
        await self.stream.close()


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
        self._commands: list[tuple[LiveRemoteSession, CommandEntry]] = []
        self._ticker: asyncio.Task[None] | None = None
        self._revalidating = False
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
            raise SessionClosed(4008, "Server session limit reached. Please try again later.")
        if self.live.count(user_id=caller.user_id, kinds=LIVE_KINDS) >= per_user:
            raise SessionClosed(4008, f"Maximum {per_user} concurrent sessions per user.")

    async def _connect(self, session: LiveRemoteSession, opening: Awaitable[Any]) -> Any:
        """Reserve a live slot, then run the backend's open; map failures to close codes."""
        self.check_caps(session.caller)
        task = asyncio.ensure_future(opening)

        async def abort(reason: str) -> None:
            session.abort_reason = reason
            task.cancel()

        entry = session.live_entry()
        entry.close = abort
        self.live.add(entry)
        try:
            return await task
        except asyncio.CancelledError:
            self.live.remove(session.id)
            if session.abort_reason is not None:
                raise SessionClosed(4003, session.abort_reason) from None
            raise
        except ApiError as exc:
            self.live.remove(session.id)
            await self._audit_failure(session, exc.message)
            shown = conceal(session.caller, exc)
            raise SessionClosed(close_code_for(shown), shown.message[:500]) from None
        except Exception as exc:
            self.live.remove(session.id)
            log.exception("opening %s session failed", session.protocol)
            await self._audit_failure(session, str(exc))
            shown = conceal(session.caller, RemoteError(f"Connection failed: {exc}"))
            raise SessionClosed(4003, shown.message[:500]) from None

    async def _audit_failure(self, session: LiveRemoteSession, message: str) -> None:
        await self.audit.record(
            "connection.session_failed",
            actor=session.caller,
            target=f"{session.target.host}:{session.target.port}",
            details={
                "connectionId": session.target.connection_id,
                "connectionName": session.target.name,
                "protocol": session.protocol,
                "error": message[:500],
            },
        )

    async def open_terminal(self, admission: Admission, size: TerminalSize) -> TerminalSession:
        """Connect a terminal and start its recording and command log."""
        opener = admission.spec.open_terminal
        if opener is None:
            raise SessionClosed(4002, f"{admission.spec.name} has no terminal")
        session = TerminalSession(self, admission, new_id(), size)
        terminal: Terminal = await self._connect(session, opener(self.api, admission.target, size))
        row = self._new_row(session)
        try:
            if await self._records(admission.target.connection_id):
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
            await self._start(session, row)
        except BaseException:
            self.live.remove(session.id)
            self.forget(session)
            if session.recorder is not None:
                session.recorder.writer.close()
            with contextlib.suppress(Exception):
                await terminal.close()
            raise
        session.start(terminal)
        return session

    async def open_relay(self, admission: Admission) -> RelaySession:
        """Connect a byte relay."""
        opener = admission.spec.open_stream
        if opener is None:
            raise SessionClosed(4002, f"{admission.spec.name} has no relay")
        placeholder = LiveRemoteSession(self, admission, new_id())
        stream: Stream = await self._connect(placeholder, opener(self.api, admission.target))
        session = RelaySession(self, admission, placeholder.id, stream)
        session.abort_reason = placeholder.abort_reason
        try:
            await self._start(session, self._new_row(session))
        except BaseException:
            self.live.remove(session.id)
            self.forget(session)
            with contextlib.suppress(Exception):
                await stream.close()
            raise
        session.start()
        return session

    async def _records(self, connection_id: str) -> bool:
        if not self.recordings.enabled():
            return False
        async with self.db.session() as db:
            connection = await db.get(Connection, connection_id)
        return connection is None or connection.recording_enabled

    def _new_row(self, session: LiveRemoteSession) -> RemoteSession:
        return RemoteSession(
            id=session.id,
            user_id=session.caller.user_id,
            username=session.caller.username,
            connection_id=session.target.connection_id,
            connection_name=session.target.name,
            protocol=session.protocol,
            client_ip=session.caller.ip_address,
        )

    async def _start(self, session: LiveRemoteSession, row: RemoteSession) -> None:
        if session.abort_reason is not None:
            self.live.remove(session.id)
            raise SessionClosed(4003, session.abort_reason)
        self.live.add(session.live_entry())
        self._sessions[session.id] = session
        async with self.db.session() as db:
            db.add(row)
            await db.commit()
        await self.audit.record(
            "connection.session_started",
            actor=session.caller,
            target=f"{session.target.host}:{session.target.port}",
            details={
                "connectionId": session.target.connection_id,
                "connectionName": session.target.name,
                "sessionId": session.id,
                "protocol": session.protocol,
                "recording": row.recording_state == "recording",
                **({"route": session.target.chain} if session.target.via else {}),
            },
        )

    # -- ending -----------------------------------------------------------------------

    def queue_commands(self, session: LiveRemoteSession, entries: list[CommandEntry]) -> None:
        """Command-log entries to store on the next flush."""
        self._commands.extend((session, entry) for entry in entries)

    async def flush_commands(self) -> None:
        """Store queued command-log entries, each with its ``session.command`` audit entry.

        The audit entry lets notification rules and SIEM forwarding react to commands;
        it holds what the command log holds (``[password]`` for what was typed at a
        password prompt), never the output.
        """
        if not self._commands:
            return
        queued, self._commands = self._commands, []
        async with self.audit.atomic() as batch:
            for session, entry in queued:
                batch.session.add(
                    SessionCommand(
                        session_id=session.id,
                        timestamp=entry.timestamp,
                        elapsed=entry.elapsed,
                        command=entry.command,
                        output_preview=entry.output_preview,
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
                    },
                )

    async def store_end(
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
        await self.audit.record(
            "connection.session_ended",
            actor=session.caller,
            target=f"{session.target.host}:{session.target.port}",
            details={
                "connectionId": session.target.connection_id,
                "sessionId": session.id,
                "protocol": session.protocol,
                "reason": reason,
                "durationMs": session.elapsed_ms(),
                "bytesIn": session.bytes_in,
                "bytesOut": session.bytes_out,
                "recordingBytes": size,
            },
        )

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
        await session.end(4003, reason)
        return True

    # -- lifecycle --------------------------------------------------------------------

    async def start(self) -> None:
        """Start the ticker."""
        self._ticker = asyncio.create_task(self._tick_forever(), name="terminal-sessions")

    async def stop(self) -> None:
        """End every session and stop the ticker."""
        for session in self.all():
            await session.end(1001, "Server shutting down")
        await cancel_and_wait(self._ticker)
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.flush_commands()

    async def tick(self) -> None:
        """One round of periodic work over every session."""
        now = time.monotonic()
        for session in self.all():
            try:
                await session.tick(now)
            except Exception:
                log.exception("session %s tick failed", session.id)
        await self.flush_commands()

    async def _tick_forever(self) -> None:
        while True:
            await asyncio.sleep(TICK_SECONDS)
            try:
                await self.tick()
            except Exception:
                log.exception("session ticker failed")
