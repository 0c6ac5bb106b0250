"""Command rules at the keyboard: a line is checked when Enter is pressed, before it is sent.

The keys of a line go to the server as they are typed (its echo is what the user
sees); only the Enter is kept back. The line is then read twice: off the screen, as
the command log reads it (line editing, history and completion included), and from
the keys themselves (which the echo may not have caught up with yet). The strictest
rule matching either decides:

* ``alert``: the Enter is sent, and ``session.command_flagged`` is audited;
* ``block``: Ctrl-C is sent instead (a shell drops the line and prints a new prompt),
  the user is told which rule refused it, ``session.command_blocked`` is audited;
* ``approve``: the Enter waits while the command is held for an approver; keys typed
  meanwhile are dropped, Ctrl-C withdraws it. Approved, the Enter is sent; denied,
  withdrawn or timed out, Ctrl-C is.

Keys typed after an Enter in the same message (a paste of several lines) are checked
the same way, line by line; after a refused line the rest of the message is dropped.
What is typed at a password prompt is never checked (the command log's own test).
Output is never looked at here: the screen line comes from the command log.
"""

from __future__ import annotations

import asyncio
import codecs
import json
from typing import TYPE_CHECKING

from ...errors import PermissionDenied
from ...tasks import cancel_and_wait
from ..command_rules.matching import Decision, Scope
from ..command_rules.service import CommandRules, Held

if TYPE_CHECKING:
    from .interactive_terminal import TerminalSession
    from .remote_session import Admission

INTERRUPT = b"\x03"
PASTE_START = b"\x1b[200~"
PASTE_END = b"\x1b[201~"
MAX_TYPED = 4000
ECHO_WAIT = 0.5
"""At most this long an Enter waits for the echo of edited keys (the screen's line)."""
ECHO_POLL = 0.01


def rule_frame(state: str, message: str, decision: Decision, held_id: str = "") -> str:
    """The ``{"type": "commandRule"}`` text frame telling the user what a rule did."""
    frame: dict[str, object] = {
        "type": "commandRule",
        "state": state,
        "message": message,
        "rule": decision.rule.name,
        "command": decision.command,
    }
    if held_id:
        frame["heldId"] = held_id
    return json.dumps(frame)


class CommandGate:
    """Keeps back each Enter of a terminal session until the rules allow the line."""

    def __init__(self, session: TerminalSession, rules: CommandRules, scope: Scope) -> None:
        self.session = session
        self.rules = rules
        self.scope = scope
        self.held: Held | None = None
        self._typed: str | None = ""
        """The line as typed since the last Enter; None once edited beyond following."""
        self._pasting = False
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._waiter: asyncio.Task[None] | None = None
        self._last_key = 0

    async def keys(self, data: bytes) -> None:
        """Keys from the socket: sent, with each Enter sent only once the rules allow it."""
        if self.held is not None:
            if INTERRUPT in data:
                self.rules.withdraw(self.held)
            return  # keys typed while a command is held are dropped
        while data:
            cut = self._enter(data)
            if cut < 0:
                self._follow(data)
                await self.session.send(data)
                self._last_key = self.session.elapsed_ms()
                return
            before, enter, data = data[:cut], data[cut : cut + 1], data[cut + 1 :]
            if before:
                self._follow(before)
                await self.session.send(before)
                self._last_key = self.session.elapsed_ms()
            if self._typed is None:
                await self._echoed()
            if not await self._entered(enter):
                return

    def _enter(self, data: bytes) -> int:
        """Where the first Enter outside a bracketed paste is, or -1."""
        position = 0
        while True:
            if self._pasting:
                end = data.find(PASTE_END, position)
                if end < 0:
                    return -1
                self._pasting = False
                position = end + len(PASTE_END)
            carriage, feed = data.find(b"\r", position), data.find(b"\n", position)
            found = min(i for i in (carriage, feed, len(data)) if i >= 0)
            start = data.find(PASTE_START, position, found)
            if start < 0:
                return found if found < len(data) else -1
            self._pasting = True
            position = start + len(PASTE_START)

    def _follow(self, data: bytes) -> None:
        """Keep the typed line up to date (printable keys, erasing keys; others lose it)."""
        text = self._decoder.decode(data)
        typed = self._typed
        for char in text.replace(PASTE_START.decode(), "").replace(PASTE_END.decode(), ""):
            if typed is None:
                if char in "\x03\x15":
                    typed = ""
                continue
            if char in "\x7f\b":
                typed = typed[:-1]
            elif char in "\x03\x15":
                typed = ""
            elif char in "\r\n":
                typed += "\n"  # a line break inside a bracketed paste
            elif char < " " or len(typed) >= MAX_TYPED:
                typed = None  # arrows, Tab, Ctrl keys: only the screen knows the line
            else:
                typed += char
        self._typed = typed

    async def _echoed(self) -> None:
        """Let the echo of edited keys reach the screen before its line is read.

        Keys that cannot be followed (arrows, Tab, Ctrl-A...) leave only the screen's
        line; Enter sent with them, before their echo came back, would be checked
        against the line as it was.
        """
        tracker = self.session.tracker
        if tracker is None:
            return
        waited = 0.0
        while tracker.last_output_ms < self._last_key and waited < ECHO_WAIT:
            await asyncio.sleep(ECHO_POLL)
            waited += ECHO_POLL

    def _line(self) -> str:
        """What the rules check at this Enter: the screen's line and the typed one."""
        tracker = self.session.tracker
        if tracker is not None and tracker.secret_input():
            return ""
        seen = [tracker.editing()] if tracker is not None else []
        return "\n".join(line for line in (*seen, self._typed) if line)

    async def _entered(self, enter: bytes) -> bool:
        """Decide one Enter; False when the rest of the message is to be dropped."""
        line = self._line()
        self._typed = ""
        decision = await self.rules.check(self.scope, line) if line.strip() else None
        if decision is None:
            await self.session.send(enter)
            return True
        if decision.action == "alert":
            await self.session.send(enter)
            await self._audit("session.command_flagged", decision)
            return True
        if decision.action == "block":
            await self.session.send(INTERRUPT)
            message = f"Command blocked by rule {decision.rule.name!r}"
            self._tell(rule_frame("blocked", message, decision))
            await self._audit("session.command_blocked", decision)
            return False
        await self._hold(decision, enter)
        return False

    async def _hold(self, decision: Decision, enter: bytes) -> None:
        session = self.session
        held = await self.rules.hold(
            caller=session.caller,
            session_id=session.id,
            connection_id=session.target.connection_id,
            connection_name=session.target.name,
            decision=decision,
        )
        self.held = held
        seconds = (held.expires_at - held.created_at).total_seconds()
        message = (
            f"Command held for approval by rule {decision.rule.name!r}: waiting up to"
            f" {seconds:g} s for an approver (Ctrl-C withdraws it)"
        )
        self._tell(rule_frame("held", message, decision, held.id))
        self._waiter = asyncio.create_task(self._wait(held, enter), name=f"held-{held.id}")

    async def _wait(self, held: Held, enter: bytes) -> None:
        approved, by = await held.decided
        self.held = None
        if self.session.ended:
            return
        decision = Decision("approve", held.rule, held.command)
        if approved:
            self._tell(rule_frame("approved", f"Command approved by {by}", decision, held.id))
            await self.session.send(enter)
            return
        await self.session.send(INTERRUPT)
        if by:
            message = f"Command denied by {by}"
        else:
            message = "Command refused: no approver allowed it in time, or it was withdrawn"
            await self._audit("session.command_expired", decision)
        self._tell(rule_frame("denied", message, decision, held.id))

    async def _audit(self, event: str, decision: Decision) -> None:
        session = self.session
        await self.rules.audit.record(
            event,
            actor=session.caller,
            target=session.target.name,
            details={
                "sessionId": session.id,
                "connectionId": session.target.connection_id,
                "command": self._scrub(decision.command),
                "rule": decision.rule.name,
                "ruleId": decision.rule.id,
                "action": decision.action,
            },
        )

    def _scrub(self, text: str) -> str:
        tracker = self.session.tracker
        return tracker.scrub(text) if tracker is not None else text

    def _tell(self, frame: str) -> None:
        attachment = self.session.attachment
        if attachment is not None:
            attachment.notify(frame)

    async def close(self) -> None:
        """The session ended: a held command is withdrawn."""
        if self.held is not None:
            self.rules.withdraw(self.held)
        if self._waiter is not None:
            await cancel_and_wait(self._waiter)


async def check_whole_command(rules: CommandRules, admission: Admission, command: str) -> None:
    """A command run without a shell (front-door ``exec``), checked whole before it opens.

    ``block`` and a refused ``approve`` raise PermissionDenied naming the rule; an
    ``approve`` waits for an approver (up to the timeout), told to the user at once
    through ``admission.notice``; ``alert`` is audited.
    """
    caller, target = admission.caller, admission.target
    scope = await rules.scope(target.connection_id, caller.role_id)
    decision = await rules.check(scope, command)
    if decision is None:
        return
    details = {
        "connectionId": target.connection_id,
        "command": decision.command,
        "rule": decision.rule.name,
        "ruleId": decision.rule.id,
        "action": decision.action,
        "exec": True,
    }
    if decision.action == "alert":
        await rules.audit.record(
            "session.command_flagged", actor=caller, target=target.name, details=details
        )
        return
    if decision.action == "block":
        await rules.audit.record(
            "session.command_blocked", actor=caller, target=target.name, details=details
        )
        raise PermissionDenied(
            f"Command blocked by rule {decision.rule.name!r}", code="command_blocked"
        )
    held = await rules.hold(
        caller=caller,
        session_id="",
        connection_id=target.connection_id,
        connection_name=target.name,
        decision=decision,
    )
    if admission.notice is not None:
        seconds = (held.expires_at - held.created_at).total_seconds()
        admission.notice(
            f"Command held for approval by rule {decision.rule.name!r}: waiting up to"
            f" {seconds:g} s for an approver"
        )
    try:
        approved, by = await held.decided
    finally:
        rules.withdraw(held)  # the client went away while it waited
    if approved:
        return
    if not by:
        await rules.audit.record(
            "session.command_expired", actor=caller, target=target.name, details=details
        )
    refusal = f"denied by {by}" if by else "no approver allowed it in time"
    raise PermissionDenied(
        f"Command held by rule {decision.rule.name!r} was refused: {refusal}",
        code="command_denied",
    )
