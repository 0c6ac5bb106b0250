"""What every live remote session shares, terminal or relay.

A session owns its backend (a ``Terminal`` or ``Stream`` from a pack) and its
history row; WebSockets *attach* to it (``attachment.py``). It registers in the
live-session registry so identity and connection changes can close it, checks
once a second that it is not idle and its user may still use it, and ends once:
socket, backend, recording and history row.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from ...adapters import ConnectionTarget, SessionClosed
from ...closereasons import CloseReason, reason_for_error
from ...descriptors import ProtocolSpec
from ...errors import ApiError
from .attachment import Attachment
from .live_sessions import LiveSession
from .session_access import access_problem

if TYPE_CHECKING:
    from ..identity.identity import Caller
    from .session_service import TerminalSessions

log = logging.getLogger("hostgate.sessions")

T = TypeVar("T")

LOGIN_CHECK_SECONDS = 30.0
CLOSE_TIMEOUT = 5.0
INPUT_FAILURE_GRACE = 2.0
"""How long a failed write to the server waits for the read side to say why it ended."""


@dataclass(frozen=True)
class Admission:
    """Who opens what: the result of a redeemed ticket and an access check."""

    caller: Caller
    spec: ProtocolSpec
    target: ConnectionTarget
    client_session_id: str | None = None
    recording_id: str | None = None
    """The browser's own recording of this session (RDP: the ``sessionId`` of
    ``POST /sessions/rdp-session``, the ``recording`` query parameter)."""
    details: Mapping[str, Any] = field(default_factory=dict)
    """Extra fields for the ``connection.session_started`` entry (the SSH front door's
    ``via``, client address and key fingerprint)."""
    notice: Callable[[str], None] | None = None
    """Tells the user something while the session opens (the front door's stderr): a
    front-door ``exec`` held by a command rule says that it waits, and how long."""


def close_code_for(error: ApiError) -> int:
    """The WebSocket close code of an error raised while opening a session."""
    if error.status == 401:
        return 4001
    if error.status == 404:
        return 4002
    return 4003


def close_reason_for(error: ApiError) -> CloseReason:
    """The reason code of an error raised while opening a session (from its ``code``)."""
    return reason_for_error(error.code, error.status)


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
        self.abort_code: CloseReason | None = None
        self.bytes_out = 0
        self.bytes_in = 0
        self._reader: asyncio.Task[None] | None = None
        self._input_failed = False

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

    async def _close_from_registry(self, reason: str, reason_code: CloseReason | None) -> None:
        if reason_code is CloseReason.SHUTTING_DOWN:
            await self.end(1001, "Server shutting down", reason_code)
            return
        login = self.caller.login_session_id
        live = login is not None and await self.service.identity.check_login_session(login)
        await self.end(4003 if live else 4001, reason, reason_code)

    # -- sockets ----------------------------------------------------------------------

    def attach(self, attachment: Attachment) -> None:
        """Make a socket the session's output sink (the previous one is closed)."""
        previous = self.attachment
        if previous is not None and previous is not attachment:
            previous.finish(4003, "Session opened in another window", CloseReason.OPENED_ELSEWHERE)
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
            self.service.spawn(self.end(1000, "Client disconnected", None))

    async def _pump(
        self, read: Callable[[], Awaitable[bytes]], closed: str, closed_code: CloseReason
    ) -> None:
        """Hand the backend's output on until it ends (``closed``) or fails; then end."""
        code, reason = 1000, closed
        reason_code: CloseReason | None = closed_code
        try:
            while True:
                data = await read()
                if not data:
                    break
                self._received(data)
                await self._deliver(data)
        except asyncio.CancelledError:
            raise
        except SessionClosed as failure:
            code, reason, reason_code = failure.code, failure.reason[:500], failure.reason_code
        except Exception as exc:
            code, reason = 4003, f"Connection lost: {exc}"[:500]
            reason_code = CloseReason.CONNECTION_LOST
        self.service.spawn(self.end(code, reason, reason_code))

    async def _forward(self, send: Callable[[T], Awaitable[None]], value: T) -> None:
        """Hand browser input to the backend; a failure ends the session, never the socket.

        A server that goes away is usually seen by the write first (a reset), a moment
        before the read side gets its end of file. The session then ends with the read
        side's reason ("Connection closed") when it comes within ``INPUT_FAILURE_GRACE``,
        else as a lost connection; input after a failure is dropped.
        """
        if self._input_failed:
            return
        try:
            await send(value)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self._input_failed = True
            log.info("session %s: input to the server failed: %s", self.id, exc)
            self.service.spawn(self._end_after_input_failure(exc))

    async def _end_after_input_failure(self, exc: Exception) -> None:
        reader = self._reader
        if reader is not None and not reader.done():
            await asyncio.wait({reader}, timeout=INPUT_FAILURE_GRACE)
        # a no-op when the read side has ended the session meanwhile
        await self.end(4003, f"Connection lost: {exc}"[:500], CloseReason.CONNECTION_LOST)

    def _received(self, data: bytes) -> None:
        """Output from the backend, before it goes to the socket."""
        self.bytes_out += len(data)

    async def _deliver(self, data: bytes) -> None:
        attachment = self.attachment
        if attachment is not None and not attachment.finished:
            await attachment.queue.put(data)

    # -- lifecycle --------------------------------------------------------------------

    async def tick(self, now: float) -> None:
        """Once a second: idle, grace and login-session checks."""
        idle_minutes = int(self.service.settings.get("security.idle_timeout_minutes") or 0)
        if idle_minutes > 0 and now - self.last_input > idle_minutes * 60:
            reason = f"Closed after {idle_minutes} minute(s) without input"
            await self.end(4003, reason, CloseReason.IDLE_TIMEOUT)
            return
        if self.detached_at is not None and now - self.detached_at > self.reattach_grace:
            await self.end(1000, "Client did not come back", None)
            return
        if now - self.last_login_check >= LOGIN_CHECK_SECONDS:
            self.last_login_check = now
            await self.enforce_access()

    async def access_problem(self) -> tuple[int, str, CloseReason] | None:
        """Why the user may no longer use this session (close code, reason, its code), or None.

        The target and every jump host the session goes through (``target.via``) are
        checked, as when it was opened.
        """
        service = self.service
        return await access_problem(
            service.db, service.identity, service.connections, self.caller, self.target
        )

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

    async def end(self, code: int, reason: str, reason_code: CloseReason | None) -> None:
        """End the session once: close the socket and the backend, store the history.

        ``reason`` is the close frame's text, ``reason_code`` the ``error`` frame's code
        (None when no socket is left to tell).
        """
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
            await self.service.ledger.record_end(
                self, reason=reason, state=state, size=size, note=note
            )
        finally:
            if self.attachment is not None:
                self.attachment.finish(code, reason, reason_code)
