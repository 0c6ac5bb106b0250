"""The command log of a terminal session, read from the server's echo stream.

A small VT100 line buffer replays the output; a shell prompt is a last line
ending in one of ``$ # % > »`` (plus spaces). The first prompt only arms
tracking (the login banner is skipped). After a prompt, the next completed line
is the command echo; its output until the next prompt becomes the preview.

What is typed at a password prompt (``Password:``, ``[sudo] password for x:``,
``Enter passphrase for key ...:``, ``PIN:``...) is never stored: the entry reads
``[password]`` and the typed text, captured from the keystrokes while the prompt
is showing, is scrubbed from every later entry of the session as well, should
the remote side echo it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ..timefmt import utcnow

PROMPT = re.compile(r"[$#%>\u00bb]\s*$")
PROMPT_CHARS = "$#%>\u00bb"
PASSWORD_PROMPT = re.compile(
    r"(password|passphrase|passcode|\bpin\b|verification code)[^\n]*[:?]\s*$", re.IGNORECASE
)
REDACTED = "[password]"
PREVIEW_LINES = 10
PREVIEW_CHARS = 2000
COMMAND_CHARS = 4000
PENDING_TIMEOUT_MS = 10_000
QUIET_MS = 250
MAX_LINE = 4096
MIN_SECRET = 3
TAB = 8


_TRAILING_CONTROL = re.compile(r"(?:\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\s)+$")


def _may_be_prompt(tail: str) -> bool:
    """Cheap pre-check: True when this partial line may end in a shell or password prompt."""
    if not tail:
        return False
    end = _TRAILING_CONTROL.sub("", tail[-64:])
    return end[-1:] in (":", "?", *PROMPT_CHARS)


@dataclass(frozen=True)
class CommandEntry:
    """One logged command."""

    timestamp: datetime
    elapsed: int
    command: str
    output_preview: str | None


class LineBuffer:
    """Replays terminal output into lines: CR, LF, BS, tabs and the common CSI edits."""

    def __init__(self) -> None:
        self.chars: list[str] = []
        self.cursor = 0
        self._state = "text"
        self._params = ""

    @property
    def current(self) -> str:
        """The incomplete last line."""
        return "".join(self.chars)

    def reset(self) -> None:
        """Start a fresh line (the output before it does not matter)."""
        self.chars = []
        self.cursor = 0
        self._state = "text"

    def _put(self, char: str) -> None:
        if self.cursor >= MAX_LINE:
            return
        if self.cursor > len(self.chars):
            self.chars.extend(" " * (self.cursor - len(self.chars)))
        if self.cursor == len(self.chars):
            self.chars.append(char)
        else:
            self.chars[self.cursor] = char
        self.cursor += 1

    def _csi(self, final: str) -> None:
        numbers = [int(p) if p.isdigit() else 0 for p in self._params.lstrip("?").split(";")]
        first = numbers[0] if numbers else 0
        count = max(first, 1)
        if final == "K":
            if first == 0:
                del self.chars[self.cursor :]
            elif first == 1:
                self.chars[: self.cursor + 1] = " " * min(self.cursor + 1, len(self.chars))
            else:
                self.chars = []
        elif final == "D":
            self.cursor = max(0, self.cursor - count)
        elif final == "C":
            self.cursor = min(MAX_LINE, self.cursor + count)
        elif final == "G":
            self.cursor = min(MAX_LINE, count - 1)
        elif final == "P":
            del self.chars[self.cursor : self.cursor + count]
        elif final == "@":
            self.chars[self.cursor : self.cursor] = [" "] * count
            del self.chars[MAX_LINE:]
        elif final == "X":
            end = min(len(self.chars), self.cursor + count)
            self.chars[self.cursor : end] = " " * (end - self.cursor)

    def feed(self, text: str) -> list[str]:
        """Process output; return the lines completed by it."""
        done: list[str] = []
        for char in text:
            state = self._state
            if state == "text":
                if char == "\n":
                    done.append("".join(self.chars).rstrip())
                    self.chars = []
                    self.cursor = 0
                elif char == "\r":
                    self.cursor = 0
                elif char == "\x1b":
                    self._state = "esc"
                elif char == "\b":
                    self.cursor = max(0, self.cursor - 1)
                elif char == "\t":
                    for _ in range(TAB - self.cursor % TAB):
                        self._put(" ")
                elif char >= " " and char != "\x7f":
                    self._put(char)
            elif state == "esc":
                if char == "[":
                    self._state, self._params = "csi", ""
                elif char == "]":
                    self._state = "osc"
                elif char in "()*+#%":
                    self._state = "skip"
                else:
                    self._state = "text"
            elif state == "csi":
                if "\x40" <= char <= "\x7e":
                    self._csi(char)
                    self._state = "text"
                elif len(self._params) < 64:
                    self._params += char
            elif state == "osc":
                if char == "\x07":
                    self._state = "text"
                elif char == "\x1b":
                    self._state = "osc-esc"
            elif state == "osc-esc":
                self._state = "osc" if char != "\\" else "text"
            else:  # "skip": the one character after ESC ( and friends
                self._state = "text"
        return done


@dataclass
class _Pending:
    timestamp: datetime
    elapsed: int
    command: str
    lines: list[str]
    chars: int = 0


class CommandTracker:
    """Turns a terminal's output and keystrokes into command log entries.

    ``clock()`` returns milliseconds since the session started. Call ``output``
    and ``input`` as data flows, ``tick`` about once a second, ``finish`` at the
    end; ``drain`` hands over the entries made so far.
    """

    def __init__(self, clock: Callable[[], int]) -> None:
        self._clock = clock
        self._lines = LineBuffer()
        self._armed = False
        self._at_prompt = False
        self._prompt = ""
        self._candidate: str | None = None
        self._last_output = 0
        self._cancelled = False
        self._password = False
        self._capturing = False
        self._typed: list[str] = []
        self._secrets: set[str] = set()
        self._submitted: tuple[datetime, int] | None = None
        self._tail = ""
        self._pending: _Pending | None = None
        self._entries: list[CommandEntry] = []

    # -- output -----------------------------------------------------------------------

    def _needs_lines(self) -> bool:
        pending = self._pending
        return (
            self._at_prompt
            or self._password
            or (
                pending is not None
                and len(pending.lines) <= PREVIEW_LINES
                and pending.chars <= PREVIEW_CHARS
            )
        )

    def output(self, text: str) -> None:
        """Feed decoded terminal output.

        Only lines that matter (a command echo, a password line, the start of a
        preview) go through the line buffer; bulk output such as ``cat`` of a large
        file skips to its last line, and that line is replayed only when it could
        be a prompt (it ends in a prompt or password character).
        """
        self._last_output = self._clock()
        position = 0
        if self._needs_lines():
            self._flush_tail()
            while self._needs_lines():
                end = text.find("\n", position)
                if end < 0:
                    break
                for line in self._lines.feed(text[position : end + 1]):
                    self._line_done(line)
                position = end + 1
        rest = text[position:]
        if self._needs_lines():
            self._tail += rest
        else:
            cut = rest.rfind("\n")
            if cut >= 0:
                self._lines.reset()
                self._tail = rest[cut + 1 :]
            else:
                self._tail += rest
            self._tail = self._tail[-MAX_LINE * 2 :]
        self._candidate = None
        if self._needs_lines() or _may_be_prompt(self._tail):
            self._flush_tail()
            self._settle()

    def _flush_tail(self) -> None:
        """Replay the deferred partial line into the line buffer."""
        if self._tail:
            tail, self._tail = self._tail, ""
            for line in self._lines.feed(tail):
                self._line_done(line)

    def _settle(self) -> None:
        """Look at the partial last line: a shell prompt candidate or a password prompt."""
        current = self._lines.current
        self._candidate = None
        if not current.strip():
            return
        if PROMPT.search(current) and not PASSWORD_PROMPT.search(current):
            self._candidate = current
        elif not self._at_prompt and PASSWORD_PROMPT.search(current):
            self._password = True
            self._capturing = True
            self._typed = []

    def _line_done(self, line: str) -> None:
        self._candidate = None
        if self._password:
            self._password = False
            if self._armed:
                self._store_pending()
                now = self._clock()
                self._entries.append(CommandEntry(utcnow(), now, REDACTED, None))
            return
        if self._at_prompt:
            self._at_prompt = False
            cancelled, self._cancelled = self._cancelled, False
            submitted, self._submitted = self._submitted, None
            command = self._command_of(line)
            if cancelled or not command:
                return
            when, elapsed = submitted or (utcnow(), self._clock())
            self._pending = _Pending(when, elapsed, command[:COMMAND_CHARS], [])
            return
        pending = self._pending
        if (
            pending is not None
            and len(pending.lines) <= PREVIEW_LINES
            and pending.chars <= PREVIEW_CHARS
        ):
            pending.lines.append(line[: PREVIEW_CHARS + 1])
            pending.chars += len(line) + 1

    def _command_of(self, line: str) -> str:
        if self._prompt and line.startswith(self._prompt):
            return line[len(self._prompt) :].strip()
        for index, char in enumerate(line[:-1]):
            if char in PROMPT_CHARS and line[index + 1].isspace():
                return line[index + 2 :].strip()
        return ""

    def _confirm_prompt(self) -> None:
        candidate = self._candidate
        if candidate is None or self._lines.current != candidate:
            return
        self._candidate = None
        self._store_pending()
        self._armed = True
        self._at_prompt = True
        self._prompt = candidate
        self._cancelled = False
        self._submitted = None

    # -- input ------------------------------------------------------------------------

    def input(self, data: str) -> None:
        """Feed keystrokes sent to the remote side."""
        if self._tail:
            self._flush_tail()
            self._settle()
        if self._candidate is not None and not self._password:
            self._confirm_prompt()
        for char in data:
            if char in "\r\n" and self._at_prompt and self._submitted is None:
                self._submitted = (utcnow(), self._clock())
            if char == "\x03":
                if self._at_prompt:
                    self._cancelled = True
                elif self._pending is not None:
                    self._store_pending()
                self._capturing = False
                continue
            if not self._capturing:
                continue
            if char in "\r\n":
                secret = "".join(self._typed)
                if len(secret) >= MIN_SECRET:
                    self._secrets.add(secret)
                self._typed = []
                self._capturing = False
            elif char in "\x7f\b":
                if self._typed:
                    self._typed.pop()
            elif char == "\x15":
                self._typed = []
            elif char >= " ":
                self._typed.append(char)

    # -- time and end -------------------------------------------------------------------

    def tick(self) -> None:
        """Confirm a prompt the output has rested on; time out long-running commands."""
        now = self._clock()
        if self._tail and now - self._last_output >= QUIET_MS:
            self._flush_tail()
            self._settle()
        if self._candidate is not None and now - self._last_output >= QUIET_MS:
            self._confirm_prompt()
        pending = self._pending
        if pending is not None and now - pending.elapsed >= PENDING_TIMEOUT_MS:
            self._store_pending()

    def finish(self) -> None:
        """The session ended: store what is pending and forget captured secrets."""
        if self._tail:
            self._flush_tail()
            self._settle()
        self._confirm_prompt()
        self._store_pending()
        self._secrets.clear()
        self._typed = []

    def drain(self) -> list[CommandEntry]:
        """Entries made since the last drain."""
        entries, self._entries = self._entries, []
        return entries

    # -- storing ----------------------------------------------------------------------

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return text

    def _store_pending(self) -> None:
        pending, self._pending = self._pending, None
        if pending is None:
            return
        lines = pending.lines
        more = len(lines) > PREVIEW_LINES
        preview = "\n".join(lines[:PREVIEW_LINES]).strip()
        if more and preview:
            preview += "\n..."
        if len(preview) > PREVIEW_CHARS:
            preview = preview[:PREVIEW_CHARS] + "..."
        self._entries.append(
            CommandEntry(
                timestamp=pending.timestamp,
                elapsed=pending.elapsed,
                command=self._scrub(pending.command),
                output_preview=self._scrub(preview) or None,
            )
        )
