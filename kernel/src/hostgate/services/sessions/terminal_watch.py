"""Live view: a read-only copy of a running terminal for users with ``sessions.view_any``.

``LiveView.watch`` checks the caller, taps the session's output
(``TerminalSession.viewers``) and returns a :class:`Watch`: the current screen
first (:mod:`.terminal_screen`), then the output as it comes. A viewer never
slows the session down: its output waits in a bounded buffer, and a viewer that
falls more than ``BEHIND_BYTES`` behind gets a fresh screen instead of the bytes
it missed. The watched user is told who is watching (a ``watchers`` text frame
on their terminal socket, repeated to a socket that re-attaches), and every
watch is audited when it starts and when it ends.

A watch is in the live registry too (kind ``watch``, no connection of its own):
it shows in ``/sessions/active``, can be ended from there, and ends at once
when the viewer's login session is revoked or the viewer is deleted. The viewer's
node re-checks its watches when access changes anywhere (``LiveSessions.on_access_changed``)
and every ``CHECK_SECONDS``: a viewer who lost ``sessions.view_any`` (role edited,
role changed, a token's owner lost it) is closed 4003 ``permission_withdrawn``.

With several nodes a terminal held by another node is watched through Redis
(``relay``, terminal_watch_relay.py): the viewer's node gets a ``RemoteWatch`` with
the same interface (``Watching``), the holder taps its session for it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from ...closereasons import CloseReason
from ...db.types import new_id
from ...errors import InvalidInput, NotFound, PermissionDenied
from ...principals import ClientInfo
from ...tasks import Rerun, cancel_and_wait
from ...timefmt import iso
from .interactive_terminal import TerminalSession
from .invitations import DEFAULT_MINUTES, SessionInvitations
from .live_sessions import USER_DELETED, LiveSession
from .moderation import MODERATE, Moderation
from .terminal_screen import repaint

if TYPE_CHECKING:
    from ...db.models.invitations import SessionInvitation
    from ..audit.audit import AuditLog
    from ..identity.identity import Caller, Identity
    from ..lifecycle import Lifecycle
    from .live_sessions import LiveSessions
    from .session_service import TerminalSessions
    from .terminal_watch_relay import WatchRelay

log = logging.getLogger("hostgate.live_view")

VIEW_ANY = "sessions.view_any"
JOIN = "sessions.join"
WATCH, OBSERVER, PARTICIPANT = "watch", "observer", "participant"
MODES = (WATCH, OBSERVER, PARTICIPANT)
"""How a watch sees a session: ``watch`` is the live view (``sessions.view_any``); an
``observer`` or ``participant`` joined it (``sessions.join`` or the owner's invitation),
and a participant may type."""
KIND = "watch"
BEHIND_BYTES = 1024 * 1024
ENDED_POLL_SECONDS = 1.0
"""How often a viewer with nothing to send checks that the session still runs."""
CHECK_SECONDS = 30.0
"""How often the viewers' access is re-checked besides on every change (as for sessions)."""
WITHDRAWN = f"Permission {VIEW_ANY} was withdrawn"
JOIN_WITHDRAWN = f"Permission {JOIN} was withdrawn"

Closing = tuple[int, str, CloseReason | None]
"""Why a watch was ended from outside: close code, reason, its ``CloseReason``."""


@dataclass(frozen=True)
class Frame:
    """One frame for the viewer's socket: output (bytes) or a JSON message (str)."""

    data: bytes | str


class Watching(Protocol):
    """What the watch socket reads: a local ``Watch`` or a ``RemoteWatch``."""

    id: str
    caller: Caller
    closing: Closing | None

    def hello(self) -> str:
        """The first frame: what is being watched."""

    async def screen(self) -> bytes:
        """The session's current screen."""

    async def next(self) -> list[Frame] | None:
        """The frames to send next; None once the session has ended."""

    async def end(self, reason: str, reason_code: CloseReason | None) -> None:
        """Close the watch from outside: the socket closes with ``reason``."""


class Watch(Watching):
    """One viewer of one terminal session."""

    def __init__(
        self,
        service: LiveView,
        caller: Caller,
        session: TerminalSession,
        mode: str = WATCH,
        invitation_id: str = "",
    ) -> None:
        self.id = new_id()
        self.service = service
        self.caller = caller
        self.session = session
        self.mode = mode
        self.invitation_id = invitation_id
        """The invitation this join used (empty: a permission allowed it)."""
        self.removed_by = ""
        """Who removed the joiner from the session (the owner), else empty."""
        self.closing: Closing | None = None
        """Why the watch was ended from outside (close code, reason, its code), or None."""
        self.started = time.monotonic()
        self._pending: deque[bytes] = deque()
        self._pending_size = 0
        self._behind = False
        self._wakeup = asyncio.Event()
        self._size = (session.size.cols, session.size.rows)
        self.stopped = False

    # -- fed by the session ----------------------------------------------------------

    def feed(self, data: bytes) -> None:
        """An output chunk of the session (called for every chunk: keep it cheap)."""
        if self._behind:
            return
        self._pending.append(data)
        self._pending_size += len(data)
        if self._pending_size > BEHIND_BYTES:
            self._pending.clear()
            self._pending_size = 0
            self._behind = True
        self._wakeup.set()

    def remove(self, by: str, reason: str) -> None:
        """The owner removed the joiner: the socket closes 4003 with ``reason``."""
        self.removed_by = by
        self.closing = (4003, reason, CloseReason.TERMINATED)
        self._wakeup.set()

    async def type(self, data: bytes) -> None:
        """A participant's keys for the session (an observer's and a viewer's go nowhere)."""
        if self.mode == PARTICIPANT and self.closing is None:
            await self.session.write(data, self.caller.username)

    async def end(self, reason: str, reason_code: CloseReason | None) -> None:
        """Close the watch (the live registry's ``close``): the socket closes with a reason."""
        if reason_code is CloseReason.SHUTTING_DOWN:
            code = 1001
        else:
            login = self.caller.login_session_id
            alive = login is not None and await self.service.identity.check_login_session(login)
            code = 4003 if alive else 4001
        self.closing = (code, reason, reason_code)
        self._wakeup.set()

    # -- read by the socket ----------------------------------------------------------

    def hello(self) -> str:
        """The first frame: what is being watched."""
        session = self.session
        return json.dumps(
            {
                "type": "watch",
                "mode": self.mode,
                "sessionId": session.id,
                "userId": session.caller.user_id,
                "username": session.caller.username,
                "connectionId": session.target.connection_id,
                "connectionName": session.target.name,
                "protocol": session.protocol,
                "cols": session.size.cols,
                "rows": session.size.rows,
            }
        )

    async def screen(self) -> bytes:
        """The session's current screen, drawn from its recent output."""
        recent = self.session.replay()[-self.service.recent_bytes :]
        cols, rows = self.session.size.cols, self.session.size.rows
        self._size = (cols, rows)
        return await asyncio.to_thread(repaint, recent, cols, rows)

    async def next(self) -> list[Frame] | None:
        """The frames to send next (waits for output); None once the session has ended."""
        while not self._pending and not self._behind:
            if self.session.ended or self.closing is not None:
                return None
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), ENDED_POLL_SECONDS)
            except TimeoutError:
                continue
        frames: list[Frame] = []
        size = (self.session.size.cols, self.session.size.rows)
        if size != self._size:
            self._size = size
            frames.append(Frame(json.dumps({"type": "resize", "cols": size[0], "rows": size[1]})))
        if self._behind:
            self._behind = False
            self._pending.clear()
            self._pending_size = 0
            frames.append(Frame(await self.screen()))
            return frames
        data = b"".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        frames.append(Frame(data))
        return frames


class LiveView:
    """Starts and ends watches; keeps who watches which session."""

    def __init__(
        self,
        *,
        audit: AuditLog,
        terminal_sessions: TerminalSessions,
        live: LiveSessions,
        identity: Identity,
        lifecycle: Lifecycle,
        invitations: SessionInvitations,
        recent_bytes: int = 64 * 1024,
    ) -> None:
        self.audit = audit
        self.terminal_sessions = terminal_sessions
        self.live = live
        self.identity = identity
        self.recent_bytes = recent_bytes
        self._watches: dict[str, list[Watch]] = {}
        self.moderation = Moderation()
        """Holds and opens the input of sessions that need a moderator."""
        self.invitations = invitations
        """The owners' invitations (in the database: every node sees them)."""
        self._viewing: dict[str, Watching] = {}
        """The watches whose viewer is on this node (local or relayed), by id."""
        self._tasks: set[asyncio.Task[Any]] = set()
        self._checker: asyncio.Task[None] | None = None
        self._access_changes = Rerun(self.recheck, self._tasks)
        self.relay: WatchRelay | None = None
        """Watches of terminals other nodes hold (several nodes), or None."""
        live.on_access_changed(self.access_changed)
        lifecycle.on_start(self._start)
        lifecycle.on_stop(self._stop)
        lifecycle.on_stop(self.drain)

    def watchers(self, session_id: str) -> list[Watch]:
        """The open watches of a session."""
        return list(self._watches.get(session_id, ()))

    async def watch(self, caller: Caller, session_id: str, mode: str = WATCH) -> Watching:
        """Start watching (``mode`` watch) or join (observer, participant) a running terminal.

        Watching needs ``sessions.view_any``; joining needs ``sessions.join`` or the
        owner's invitation, and a session this node holds (403, 404 otherwise).
        """
        if mode not in MODES:
            raise InvalidInput(f"mode must be one of {', '.join(MODES)}")
        if mode == WATCH and not caller.can(VIEW_ANY):
            raise PermissionDenied(f"Insufficient permissions: requires {VIEW_ANY}")
        session = self.terminal_sessions.get(session_id)
        if session is None and self.relay is not None and mode == WATCH:
            remote = await self.relay.watch(caller, session_id)
            self._viewing[remote.id] = remote
            return remote
        if session is None or session.ended:
            raise NotFound("Session not found or not running on this gateway")
        if not isinstance(session, TerminalSession) or session.terminal is None:
            raise NotFound("Only terminal sessions (SSH, telnet) can be watched")
        invitation_id = await self._check_join(caller, session, mode) if mode != WATCH else ""
        watch = Watch(self, caller, session, mode, invitation_id)
        self.tap(watch)
        self._viewing[watch.id] = watch
        self.live.add(
            LiveSession(
                id=watch.id,
                kind=KIND,
                protocol=session.protocol,
                user_id=caller.user_id,
                login_session_id=caller.login_session_id,
                connection_id="",  # the viewer needs no access to the watched connection
                close=watch.end,
                info={
                    "username": caller.username,
                    "connectionName": session.target.name,
                    "clientIp": caller.ip_address,
                    "watching": session.id,
                },
            )
        )
        await self.audit.record(
            "session.live_view_started" if mode == WATCH else "session.joined",
            actor=caller,
            target=session.target.name,
            details=self._details(watch),
        )
        return watch

    # -- joining ---------------------------------------------------------------------

    async def _check_join(self, caller: Caller, session: TerminalSession, mode: str) -> str:
        """403 unless ``caller`` may join ``session`` as ``mode``; the invitation used, if any.

        A permission needs no invitation; an invitation is used up by the join.
        """
        if session.caller.user_id == caller.user_id:
            raise InvalidInput("This is your own session: open it from your terminal tabs")
        if caller.can(JOIN) or caller.can(MODERATE):
            return ""
        standing = await self.invitations.standing(session.id, caller.user_id)
        invited = standing.mode if standing is not None else None
        if standing is not None and invited in (PARTICIPANT, mode):
            if await self.invitations.use(standing):
                return standing.id
            invited = None  # taken by another join at the same moment
        raise PermissionDenied(
            f"Insufficient permissions: requires {JOIN}, {MODERATE} or an invitation from the"
            " session's owner" + (" to take part" if invited == OBSERVER else "")
        )

    def _own_session(self, caller: Caller, session_id: str) -> TerminalSession:
        """The running terminal ``caller`` owns (404 for anyone else's, as for a stranger)."""
        session = self.terminal_sessions.get(session_id)
        if (
            session is None
            or session.ended
            or not isinstance(session, TerminalSession)
            or session.caller.user_id != caller.user_id
        ):
            raise NotFound("Session not found or not running on this gateway")
        return session

    async def invite(
        self,
        caller: Caller,
        session_id: str,
        user_id: str,
        username: str,
        mode: str,
        minutes: int = DEFAULT_MINUTES,
    ) -> SessionInvitation:
        """The owner invites a user to join as ``mode``: once, within ``minutes``; audited.

        The invited user's ``/ws/events`` sockets are nudged (``session-invitations``).
        """
        if mode not in (OBSERVER, PARTICIPANT):
            raise InvalidInput(f"mode must be {OBSERVER} or {PARTICIPANT}")
        session = self._own_session(caller, session_id)
        if user_id == caller.user_id:
            raise InvalidInput("You cannot invite yourself")
        invitation = await self.invitations.create(
            session_id=session.id,
            owner_id=caller.user_id,
            owner_username=caller.username,
            user_id=user_id,
            username=username,
            mode=mode,
            connection_name=session.target.name,
            protocol=session.protocol,
            minutes=minutes,
        )
        await self.audit.record(
            "session.invited",
            actor=caller,
            target=session.target.name,
            details={
                **self._session_details(session),
                "userId": user_id,
                "username": username,
                "mode": mode,
                "invitationId": invitation.id,
                "expiresAt": iso(invitation.expires_at),
            },
        )
        return invitation

    async def revoke_invitation(self, caller: Caller, invitation_id: str) -> SessionInvitation:
        """The owner revokes an invitation (a join it allowed ends too); audited.

        404 for another user's invitation and for one already revoked.
        """
        invitation = await self.invitations.owned(caller.user_id, invitation_id)
        if not await self.invitations.revoke(invitation):
            raise NotFound("Invitation not found")
        if invitation.used_at is not None:
            self.live.access_changed()  # the node holding the join ends it
        await self.audit.record(
            "session.invitation_revoked",
            actor=caller,
            target=invitation.connection_name,
            details={
                "sessionId": invitation.session_id,
                "protocol": invitation.protocol,
                "ownerId": invitation.owner_id,
                "ownerUsername": invitation.owner_username,
                "userId": invitation.user_id,
                "username": invitation.username,
                "mode": invitation.mode,
                "invitationId": invitation.id,
            },
        )
        return invitation

    def joinable(self, caller: Caller) -> list[TerminalSession]:
        """The running terminals of this node ``caller`` could join with ``sessions.join``."""
        return [
            s
            for s in self.terminal_sessions.all()
            if isinstance(s, TerminalSession)
            and not s.ended
            and s.terminal is not None
            and s.caller.user_id != caller.user_id
        ]

    def moderates(self, caller: Caller, session_id: str) -> bool:
        """Whether ``caller`` has joined the session as a moderator (and may end it)."""
        return any(
            w.caller.user_id == caller.user_id and self._moderator(w)
            for w in self._watches.get(session_id, [])
        )

    @staticmethod
    def _moderator(watch: Watch) -> bool:
        return watch.mode != WATCH and watch.caller.can(MODERATE)

    async def remove(self, caller: Caller, session_id: str, user_id: str) -> int:
        """The owner removes a joiner (every watch of theirs, and their invitation); audited.

        Returns how many sockets were closed; 404 when the user had not joined and was not
        invited. A viewer watching with ``sessions.view_any`` is not the owner's to remove.
        """
        session = self._own_session(caller, session_id)
        revoked = await self.invitations.revoke_for(session.id, user_id)
        invited = revoked[-1].mode if revoked else None
        chosen = [
            w
            for w in self._watches.get(session.id, [])
            if w.caller.user_id == user_id and w.mode != WATCH
        ]
        if not chosen and invited is None:
            raise NotFound("That user has not joined this session")
        reason = f"Removed from the session by {caller.display_name or caller.username}"
        for watch in chosen:
            watch.remove(caller.username, reason)
        await self.audit.record(
            "session.participant_removed",
            actor=caller,
            target=session.target.name,
            details={
                **self._session_details(session),
                "userId": user_id,
                "username": chosen[0].caller.username if chosen else "",
                "mode": chosen[0].mode if chosen else invited,
            },
        )
        return len(chosen)

    def tap(self, watch: Watch) -> None:
        """Hand the watch its session's output and tell the watched user."""
        session = watch.session
        session.viewers.append(watch.feed)
        self._watches.setdefault(session.id, []).append(watch)
        session.shared_input = session.shared_input or watch.mode == PARTICIPANT
        self._announce(
            session, f"{self._name(watch)} joined as {watch.mode}" if watch.mode != WATCH else ""
        )
        self._moderate(session)

    def untap(self, watch: Watch) -> None:
        """Stop handing the watch output; tell the watched user."""
        session = watch.session
        if watch.feed in session.viewers:
            session.viewers.remove(watch.feed)
        watches = self._watches.get(session.id, [])
        if watch in watches:
            watches.remove(watch)
        if not watches:
            self._watches.pop(session.id, None)
        session.shared_input = any(w.mode == PARTICIPANT for w in watches)
        if not session.ended:
            change = ""
            if watch.mode != WATCH:
                change = f"{self._name(watch)} " + (
                    f"was removed by {watch.removed_by}" if watch.removed_by else "left"
                )
            self._announce(session, change)
            self._moderate(session)

    def stop(self, watch: Watching) -> None:
        """A watch ended (socket closed, or the session ended): untap, tell, audit.

        Synchronous, so a socket task being cancelled cannot skip it; the audit
        entry is written in the background.
        """
        self._viewing.pop(watch.id, None)
        if not isinstance(watch, Watch):
            if self.relay is not None:
                self.relay.stop(watch)
            return
        if watch.stopped:
            return
        watch.stopped = True
        self.live.remove(watch.id)
        self.untap(watch)
        session = watch.session
        details = self._details(watch)
        details["durationMs"] = int((time.monotonic() - watch.started) * 1000)
        if watch.mode != WATCH:
            details["mode"] = watch.mode
            details["removedBy"] = watch.removed_by
        task = asyncio.ensure_future(
            self.audit.record(
                "session.live_view_ended" if watch.mode == WATCH else "session.left",
                actor=watch.caller,
                target=session.target.name,
                details=details,
            )
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the viewers' access ---------------------------------------------------------

    async def viewer_problem(
        self, caller: Caller, joined: Watch | None = None
    ) -> tuple[str, CloseReason] | None:
        """Why a viewer may no longer watch (reason, its code), or None.

        Read now, as a terminal session re-checks its user: the user, the login
        session (or API token) and ``sessions.view_any`` (a token's: as cut down by
        the owner's role); for a watch that ``joined`` the session instead,
        ``sessions.join``, ``sessions.moderate`` or the invitation it used, not revoked.
        """
        identity = self.identity
        login = caller.login_session_id
        current = await identity.caller_for_user(
            caller.user_id, login, ClientInfo(ip_address=caller.ip_address)
        )
        if current is None:
            return USER_DELETED, CloseReason.USER_DELETED
        if login is not None and not await identity.check_login_session(login):
            return "Session has been revoked", CloseReason.REVOKED
        if joined is not None and joined.mode != WATCH:
            if current.can(JOIN) or current.can(MODERATE):
                return None
            if joined.invitation_id and not await self.invitations.revoked(joined.invitation_id):
                return None
            return JOIN_WITHDRAWN, CloseReason.PERMISSION_WITHDRAWN
        if not current.can(VIEW_ANY):
            return WITHDRAWN, CloseReason.PERMISSION_WITHDRAWN
        return None

    async def recheck(self) -> int:
        """End the watches of this node's viewers who may no longer watch; how many."""
        ended = 0
        for watch in list(self._viewing.values()):
            if watch.closing is not None:
                continue
            try:
                joined = watch if isinstance(watch, Watch) else None
                problem = await self.viewer_problem(watch.caller, joined)
                if problem is not None and watch.closing is None:
                    await watch.end(*problem)
                    ended += 1
            except Exception:
                log.exception("re-checking live view %s failed", watch.id)
        return ended

    def access_changed(self) -> None:
        """Users, roles or connections changed (any node): re-check the viewers soon."""
        if self._viewing:
            self._access_changes.request()

    async def _check_forever(self) -> None:
        while True:
            await asyncio.sleep(CHECK_SECONDS)
            try:
                await self.recheck()
            except Exception:
                log.exception("re-checking live views failed")

    async def _start(self) -> None:
        self._checker = asyncio.create_task(self._check_forever(), name="live-view-access")

    async def _stop(self) -> None:
        await cancel_and_wait(self._checker)
        self._checker = None
        await self.moderation.stop()

    async def drain(self) -> None:
        """Wait for the audit entries still being written (shutdown, tests)."""
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _details(self, watch: Watch) -> dict[str, Any]:
        details = self._session_details(watch.session)
        if watch.mode != WATCH:
            details["mode"] = watch.mode
        return details

    @staticmethod
    def _name(watch: Watch) -> str:
        return watch.caller.display_name or watch.caller.username

    @staticmethod
    def _session_details(session: TerminalSession) -> dict[str, Any]:
        return {
            "sessionId": session.id,
            "protocol": session.protocol,
            "connectionId": session.target.connection_id,
            "ownerId": session.caller.user_id,
            "ownerUsername": session.caller.username,
        }

    def _moderate(self, session: TerminalSession) -> None:
        """Open or hold a moderated session's input as its moderators come and go."""
        if session.target.moderated:
            moderators = {
                w.caller.user_id: self._name(w)
                for w in self._watches.get(session.id, [])
                if self._moderator(w)
            }
            self.moderation.present(session, list(moderators.values()))

    def _announce(self, session: TerminalSession, change: str = "") -> None:
        """Tell the owner's socket who is there now (kept for a re-attach).

        One entry per user, with their strongest mode (participant, observer, watch);
        ``change`` says who just joined or left (a front-door terminal prints it).
        """
        viewers: dict[str, dict[str, Any]] = {}
        for watch in self._watches.get(session.id, []):
            caller = watch.caller
            entry = viewers.setdefault(
                caller.user_id,
                {
                    "userId": caller.user_id,
                    "username": caller.username,
                    "displayName": caller.display_name,
                    "mode": watch.mode,
                    "moderator": False,
                },
            )
            if MODES.index(watch.mode) > MODES.index(entry["mode"]):
                entry["mode"] = watch.mode
            entry["moderator"] = entry["moderator"] or self._moderator(watch)
        names = [v["displayName"] or v["username"] for v in viewers.values()]
        if names:
            verb = "is" if len(names) == 1 else "are"
            typing = [v for v in viewers.values() if v["mode"] == PARTICIPANT]
            message = f"{', '.join(names)} {verb} " + (
                "in this session (participants may type)"
                if typing
                else "watching this session (read-only)"
            )
        else:
            message = "Nobody is watching this session any more"
        frame = json.dumps(
            {
                "type": "watchers",
                "watchers": list(viewers.values()),
                "message": message,
                "change": change,
            }
        )
        session.notice = frame if viewers else None
        if session.attachment is not None:
            session.attachment.notify(frame)
