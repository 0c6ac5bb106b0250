"""Live view across gateway nodes: a viewer on one node watches a terminal another holds.

The viewer's node (``WatchRelay.watch``) subscribes to a Redis pub/sub channel
of its own (``hostgate:watch:<watch id>``), then asks every node on the bus
(``watch.open``) to feed it. The node holding the terminal taps it exactly as
for a local viewer (a :class:`~.terminal_watch.Watch`, so the watched user is told
who watches and a slow viewer never slows the session) and publishes on that
channel, in order: ``h`` the hello frame, ``s`` the current screen, then ``o``
output and ``t`` text frames (a resize), and ``e`` with the close code and
reason when the session (or the tap) ends. Each message is one tag byte and its
payload.

The viewer's ``RemoteWatch`` answers the socket like a local watch does; when it
falls more than ``BEHIND_BYTES`` behind it draws the screen from the output it
received. A watch ends when the socket closes (``watch.close`` tells the holder),
when the holder says so, when the watched session is no longer in the registry
(its node died), and on the holder's side when the viewer's watch is no longer
in the registry (the viewer's node died). Audit entries are written on the
viewer's node, as for a local watch.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ...closereasons import CloseReason
from ...cluster.shared import KEY_PREFIX, reaching
from ...db.types import new_id
from ...errors import NotFound
from ...tasks import cancel_and_wait
from .interactive_terminal import TerminalSession
from .live_sessions import LiveSession
from .terminal_screen import repaint
from .terminal_watch import BEHIND_BYTES, KIND, Closing, Frame, Watch, Watching

if TYPE_CHECKING:
    from redis.asyncio import Redis
    from redis.asyncio.client import PubSub

    from ...cluster.bus import Bus
    from ..audit.audit import AuditLog
    from ..identity.identity import Caller, Identity
    from ..lifecycle import Lifecycle
    from .live_sessions import LiveSessions
    from .session_service import TerminalSessions
    from .terminal_watch import LiveView

log = logging.getLogger("hostgate.live_view.relay")

OPEN_TOPIC = "watch.open"
"""``{"watch", "session", "viewer": {"userId", "username", "displayName"}}``."""
CLOSE_TOPIC = "watch.close"
"""``{"watch"}``: the viewer went away."""
CHANNEL_PREFIX = f"{KEY_PREFIX}watch:"
HELLO, SCREEN, OUTPUT, TEXT, END = b"h", b"s", b"o", b"t", b"e"
OPEN_TIMEOUT = 5.0
"""Seconds the viewer's node waits for the holder's first frame."""
PRESENCE_SECONDS = 5.0
"""How often each side checks that the other's entry is still in the registry."""
ENDED = "The watched session ended"
NOT_FOUND = "Session not found or not running on this gateway"
NOT_A_TERMINAL = "Only terminal sessions (SSH, telnet) can be watched"
RELAY_LOST = "The live view lost its connection to the node holding the session"


def _reason_code(ending: dict[str, Any]) -> CloseReason | None:
    """The ``why`` of a holder's end message (absent from a node of an older version)."""
    try:
        return CloseReason(str(ending.get("why")))
    except ValueError:
        return None


@dataclass
class Viewer:
    """Who watches, on the holder's node (the part of a ``Caller`` a watch shows)."""

    user_id: str
    username: str
    display_name: str
    login_session_id: str | None = None


class RemoteWatch(Watching):
    """A watch of a terminal another node holds, fed through Redis."""

    def __init__(
        self, relay: WatchRelay, caller: Caller, target: LiveSession, pubsub: PubSub
    ) -> None:
        self.id = new_id()
        self.relay = relay
        self.caller = caller
        self.target = target
        self.closing: Closing | None = None
        self.started = time.monotonic()
        self.stopped = False
        self._pubsub = pubsub
        self._hello = ""
        self._screen = b""
        self._opened = asyncio.Event()
        self._refused: str | None = None
        self._pending: deque[Frame] = deque()
        self._pending_size = 0
        self._behind = False
        self._recent: deque[bytes] = deque()
        self._recent_size = 0
        self._size = (80, 24)
        self._ended = False
        self._wakeup = asyncio.Event()
        self._reader: asyncio.Task[None] | None = None

    @property
    def channel(self) -> str:
        """Where the holder publishes for this watch."""
        return CHANNEL_PREFIX + self.id

    # -- fed by the holder -------------------------------------------------------------

    def _received(self, message: bytes) -> None:
        tag, payload = message[:1], message[1:]
        if tag == HELLO:
            self._hello = payload.decode()
            hello = json.loads(self._hello)
            self._size = (int(hello.get("cols", 80)), int(hello.get("rows", 24)))
        elif tag == SCREEN:
            self._screen = payload
            self._keep(payload)
            self._opened.set()
        elif tag == OUTPUT:
            self._keep(payload)
            self._queue(Frame(payload), len(payload))
        elif tag == TEXT:
            text = payload.decode()
            with contextlib.suppress(ValueError, AttributeError):
                data = json.loads(text)
                if data.get("type") == "resize":
                    self._size = (int(data["cols"]), int(data["rows"]))
            self._queue(Frame(text), len(payload))
        elif tag == END:
            ending = json.loads(payload or b"{}")
            code, reason = int(ending.get("code", 1000)), str(ending.get("reason", ENDED))
            if not self._opened.is_set():
                self._refused = reason
                self._opened.set()
            elif (code, reason) != (1000, ENDED):
                self.closing = self.closing or (code, reason, _reason_code(ending))
            self._ended = True
            self._wakeup.set()

    def _keep(self, data: bytes) -> None:
        self._recent.append(data)
        self._recent_size += len(data)
        while self._recent_size > self.relay.recent_bytes and len(self._recent) > 1:
            self._recent_size -= len(self._recent.popleft())

    def _queue(self, frame: Frame, size: int) -> None:
        if self._behind:
            if isinstance(frame.data, str):
                self._pending.append(frame)
            return
        self._pending.append(frame)
        self._pending_size += size
        if self._pending_size > BEHIND_BYTES:
            self._pending = deque(f for f in self._pending if isinstance(f.data, str))
            self._pending_size = 0
            self._behind = True
        self._wakeup.set()

    async def _read(self) -> None:
        loop = asyncio.get_running_loop()
        checked = loop.time()
        try:
            while not self._ended:
                message = await self._pubsub.get_message(
                    ignore_subscribe_messages=True, timeout=1.0
                )
                if message is not None and isinstance(message.get("data"), bytes):
                    self._received(message["data"])
                if self._opened.is_set() and loop.time() - checked >= PRESENCE_SECONDS:
                    checked = loop.time()
                    if await self.relay.live.find(self.target.id) is None:
                        self._ended = True  # its node died: the reaper ended the session
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("live view %s lost its relay: %s", self.id, exc)
            self.closing = self.closing or (4003, RELAY_LOST, CloseReason.CONNECTION_LOST)
            self._ended = True
            if not self._opened.is_set():
                self._refused = RELAY_LOST
                self._opened.set()
        self._wakeup.set()

    # -- read by the socket ------------------------------------------------------------

    def hello(self) -> str:
        """The first frame: what is being watched (as the holder describes it)."""
        return self._hello

    async def screen(self) -> bytes:
        """The session's screen when the watch started."""
        return self._screen

    async def next(self) -> list[Frame] | None:
        """The frames to send next (waits for output); None once the watch has ended."""
        while not self._pending and not self._behind:
            if self._ended or self.closing is not None:
                return None
            self._wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), 1.0)
        frames: list[Frame] = []
        if self._behind:
            self._behind = False
            texts = [f for f in self._pending if isinstance(f.data, str)]
            self._pending.clear()
            self._pending_size = 0
            recent = b"".join(self._recent)[-self.relay.recent_bytes :]
            frames.extend(texts)
            frames.append(Frame(await asyncio.to_thread(repaint, recent, *self._size)))
            return frames
        data = bytearray()
        while self._pending:
            frame = self._pending.popleft()
            if isinstance(frame.data, bytes):
                data += frame.data
                continue
            if data:
                frames.append(Frame(bytes(data)))
                data = bytearray()
            frames.append(frame)
        if data:
            frames.append(Frame(bytes(data)))
        self._pending_size = 0
        return frames

    async def end(self, reason: str, reason_code: CloseReason | None) -> None:
        """Close the watch (the live registry's ``close``)."""
        if reason_code is CloseReason.SHUTTING_DOWN:
            code = 1001
        else:
            login = self.caller.login_session_id
            alive = login is not None and await self.relay.identity.check_login_session(login)
            code = 4003 if alive else 4001
        self.closing = (code, reason, reason_code)
        self._wakeup.set()


class WatchRelay:
    """Both sides of cross-node live views: watching elsewhere, and feeding from here."""

    def __init__(
        self,
        *,
        redis: Redis,
        bus: Bus,
        live: LiveSessions,
        live_view: LiveView,
        terminal_sessions: TerminalSessions,
        identity: Identity,
        audit: AuditLog,
        lifecycle: Lifecycle,
    ) -> None:
        self.redis = redis
        self.bus = bus
        self.live = live
        self.live_view = live_view
        self.terminal_sessions = terminal_sessions
        self.identity = identity
        self.audit = audit
        self.recent_bytes = live_view.recent_bytes
        self._watches: dict[str, RemoteWatch] = {}
        self._taps: dict[str, Watch] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        bus.subscribe(OPEN_TOPIC, self._open_here)
        bus.subscribe(CLOSE_TOPIC, self._close_here)
        lifecycle.on_stop(self.stop_all)

    def _spawn(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- the viewer's node -------------------------------------------------------------

    async def watch(self, caller: Caller, session_id: str) -> RemoteWatch:
        """Watch a terminal another node holds (404 when no node holds such a terminal)."""
        target = await self.live.find(session_id)
        if target is None:
            raise NotFound(NOT_FOUND)
        if target.kind != "terminal":
            raise NotFound(NOT_A_TERMINAL)
        pubsub = self.redis.pubsub()
        watch = RemoteWatch(self, caller, target, pubsub)
        try:
            with reaching():
                await pubsub.subscribe(watch.channel)
            watch._reader = asyncio.create_task(watch._read(), name=f"watch-{watch.id}")
            self.live.add(
                LiveSession(
                    id=watch.id,
                    kind=KIND,
                    protocol=target.protocol,
                    user_id=caller.user_id,
                    login_session_id=caller.login_session_id,
                    connection_id="",
                    close=watch.end,
                    info={
                        "username": caller.username,
                        "connectionName": str(target.info.get("connectionName", "")),
                        "clientIp": caller.ip_address,
                        "watching": target.id,
                    },
                )
            )
            # the holder checks the viewer's entry: it must be there before it looks
            await self.live.settled()
            await self.bus.publish(
                OPEN_TOPIC,
                {
                    "watch": watch.id,
                    "session": target.id,
                    "viewer": {
                        "userId": caller.user_id,
                        "username": caller.username,
                        "displayName": caller.display_name,
                    },
                },
            )
            try:
                await asyncio.wait_for(watch._opened.wait(), OPEN_TIMEOUT)
            except TimeoutError:
                watch._refused = NOT_FOUND
            if watch._refused is not None:
                raise NotFound(watch._refused)
        except BaseException:
            self._discard(watch)
            raise
        self._watches[watch.id] = watch
        await self.audit.record(
            "session.live_view_started",
            actor=caller,
            target=str(target.info.get("connectionName", "")),
            details=self._details(watch),
        )
        return watch

    def _details(self, watch: RemoteWatch) -> dict[str, Any]:
        hello = json.loads(watch.hello() or "{}")
        return {
            "sessionId": watch.target.id,
            "protocol": watch.target.protocol,
            "connectionId": watch.target.connection_id,
            "ownerId": watch.target.user_id,
            "ownerUsername": str(hello.get("username", watch.target.info.get("username", ""))),
        }

    def _discard(self, watch: RemoteWatch) -> None:
        watch.stopped = True
        self.live.remove(watch.id)
        self._watches.pop(watch.id, None)
        reader = watch._reader

        async def cleanup() -> None:
            await cancel_and_wait(reader)
            with contextlib.suppress(Exception):
                await watch._pubsub.aclose()
            with contextlib.suppress(Exception):
                await self.bus.publish(CLOSE_TOPIC, {"watch": watch.id})

        self._spawn(cleanup())

    def stop(self, watch: Watching) -> None:
        """The viewer's socket closed: tell the holder, audit (in the background)."""
        if not isinstance(watch, RemoteWatch) or watch.stopped:
            return
        self._discard(watch)
        details = self._details(watch)
        details["durationMs"] = int((time.monotonic() - watch.started) * 1000)
        self._spawn(
            self.audit.record(
                "session.live_view_ended",
                actor=watch.caller,
                target=str(watch.target.info.get("connectionName", "")),
                details=details,
            )
        )

    # -- the holder's node -------------------------------------------------------------

    async def _open_here(self, message: dict[str, Any]) -> None:
        session = self.terminal_sessions.get(str(message.get("session", "")))
        watch_id = str(message.get("watch", ""))
        viewer = message.get("viewer")
        if session is None or not watch_id or not isinstance(viewer, dict):
            return  # another node holds it (or nobody: the viewer times out)
        channel = CHANNEL_PREFIX + watch_id
        if not isinstance(session, TerminalSession) or session.terminal is None:
            await self._send(channel, END, json.dumps({"code": 4002, "reason": NOT_A_TERMINAL}))
            return
        if session.ended:
            await self._send(channel, END, json.dumps({"code": 4002, "reason": NOT_FOUND}))
            return
        stub = Viewer(
            user_id=str(viewer.get("userId", "")),
            username=str(viewer.get("username", "")),
            display_name=str(viewer.get("displayName", "")),
        )
        watch = Watch(self.live_view, cast("Caller", stub), session)
        watch.id = watch_id
        self._taps[watch_id] = watch
        self.live_view.tap(watch)
        self._spawn(self._feed(channel, watch))

    async def _feed(self, channel: str, watch: Watch) -> None:
        presence = self._spawn(self._watch_viewer(watch))
        try:
            await self._send(channel, HELLO, watch.hello())
            await self._send(channel, SCREEN, await watch.screen())
            while True:
                frames = await watch.next()
                if frames is None:
                    code, reason, why = watch.closing or (1000, ENDED, None)
                    ending = {"code": code, "reason": reason, "why": why and why.value}
                    await self._send(channel, END, json.dumps(ending))
                    return
                for frame in frames:
                    if isinstance(frame.data, bytes):
                        await self._send(channel, OUTPUT, frame.data)
                    else:
                        await self._send(channel, TEXT, frame.data)
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.warning("feeding live view %s failed: %s", watch.id, exc)
        finally:
            presence.cancel()
            self._taps.pop(watch.id, None)
            self.live_view.untap(watch)

    async def _watch_viewer(self, watch: Watch) -> None:
        """End the tap when the viewer's watch leaves the registry (its node died)."""
        while True:
            await asyncio.sleep(PRESENCE_SECONDS)
            with contextlib.suppress(Exception):
                if await self.live.find(watch.id) is None:
                    self._end_tap(watch, "the viewer went away")
                    return

    def _end_tap(self, watch: Watch, reason: str) -> None:
        watch.closing = (1000, reason, None)
        watch._wakeup.set()

    async def _close_here(self, message: dict[str, Any]) -> None:
        watch = self._taps.get(str(message.get("watch", "")))
        if watch is not None:
            self._end_tap(watch, "the viewer went away")

    async def _send(self, channel: str, tag: bytes, payload: bytes | str) -> None:
        data = payload.encode() if isinstance(payload, str) else payload
        with reaching():
            await self.redis.publish(channel, tag + data)

    async def stop_all(self) -> None:
        """Shutdown: end every watch and tap."""
        for watch in list(self._watches.values()):
            self.stop(watch)
        for tap in list(self._taps.values()):
            self._end_tap(tap, "server shutting down")
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
