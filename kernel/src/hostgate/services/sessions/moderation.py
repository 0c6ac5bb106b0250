"""Moderated sessions: a connection with ``moderation: required`` needs a moderator present.

A terminal session to such a connection starts with its input held (the owner's and
any participant's keys are dropped) and a ``moderation`` text frame, state
``waiting``, on the owner's socket. When a user with ``sessions.moderate`` joins it
(``/ws/sessions/<id>/watch?mode=observer|participant``) the input opens (state
``active``); when the last moderator leaves, input is held again (state ``paused``)
and the session ends after ``grace`` seconds unless a moderator joins meanwhile
(4003 ``no_moderator``). The live view (terminal_watch.py) calls ``present`` whenever
a session's joiners change.
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING

from ...closereasons import CloseReason
from ...tasks import cancel_and_wait

if TYPE_CHECKING:
    from .interactive_terminal import TerminalSession

MODERATE = "sessions.moderate"
GRACE_SECONDS = 60.0
"""How long a moderated session goes on, input held, after its last moderator left."""
WAITING = (
    "This connection needs a moderator: your input is held until a moderator joins the session"
)


def moderation_frame(state: str, message: str, grace: float | None = None) -> str:
    """The ``{"type": "moderation"}`` text frame of a state: waiting, active or paused."""
    frame: dict[str, object] = {"type": "moderation", "state": state, "message": message}
    if grace is not None:
        frame["graceSeconds"] = grace
    return json.dumps(frame)


def waiting_frame() -> str:
    """What a moderated session's owner is told until a moderator joins."""
    return moderation_frame("waiting", WAITING)


class Moderation:
    """Opens and holds the input of moderated sessions as moderators come and go."""

    def __init__(self, grace: float = GRACE_SECONDS) -> None:
        self.grace = grace
        self._timers: dict[str, asyncio.Task[None]] = {}

    def present(self, session: TerminalSession, moderators: list[str]) -> None:
        """The display names of the moderators now in ``session``: open or hold its input."""
        if not session.target.moderated or session.ended:
            return
        if moderators:
            timer = self._timers.pop(session.id, None)
            if timer is not None:
                timer.cancel()
            if session.held:
                session.held = False
                self._tell(
                    session,
                    moderation_frame("active", f"{', '.join(moderators)} moderates this session"),
                )
            return
        if session.held:
            return  # still waiting for a first moderator
        session.held = True
        message = (
            f"The moderator left: input is held, and the session ends in {self.grace:g} s"
            " unless a moderator joins"
        )
        self._tell(session, moderation_frame("paused", message, self.grace))
        self._timers[session.id] = asyncio.create_task(
            self._end_later(session), name=f"moderation-{session.id}"
        )

    async def _end_later(self, session: TerminalSession) -> None:
        try:
            await asyncio.sleep(self.grace)
            if session.held and not session.ended:
                reason = f"No moderator joined within {self.grace:g} s: the session ended"
                await session.end(4003, reason, CloseReason.NO_MODERATOR)
        finally:
            if self._timers.get(session.id) is asyncio.current_task():
                del self._timers[session.id]

    async def stop(self) -> None:
        """Cancel the pending ends (the gateway stops: its sessions end anyway)."""
        timers, self._timers = list(self._timers.values()), {}
        for timer in timers:
            await cancel_and_wait(timer)

    @staticmethod
    def _tell(session: TerminalSession, frame: str) -> None:
        session.moderation = frame
        if session.attachment is not None:
            session.attachment.notify(frame)
