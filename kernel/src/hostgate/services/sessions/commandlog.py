"""The command log of a terminal session, read from the shell's echo.

A prompt is a line the output rests on, or that the user starts typing at,
ending in one of ``$ # % > »`` (plus spaces); the first one only arms tracking
(the login banner is skipped). The line typed at a prompt is replayed on a
virtual screen (:mod:`.terminal_lines`) until the line feed after Enter, so line
editing, history recall and completion are logged as the screen showed them,
and prompt characters typed inside a command are never taken for a prompt. The
command's output until the next prompt becomes the preview.

What is typed at a password prompt (``Password:``, ``[sudo] password for x:``,
``Enter passphrase for key ...:``, ``PIN:``...) is never stored: the entry reads
``[password]`` and the typed text, captured from the keystrokes while the prompt
is showing, is scrubbed from every later entry of the session as well, should
the remote side echo it.

docs/terminals.md says what is logged and what cannot be known.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from ...timefmt import utcnow
from .terminal_lines import MAX_LINE, LineBuffer, TypedLine

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
MIN_SECRET = 3
MAX_AHEAD = 16
EDIT_OUTPUT_LIMIT = 64 * 1024
"""Echo of one line beyond this is not a command line being typed: stop replaying it."""
ALTERNATE_SCREEN = re.compile(r"\x1b\[\?(?:1049|1047|47)([hl])")
PASTE_START = "\x1b[200~"
PASTE_END = "\x1b[201~"
"""A bracketed paste (sent only to a shell that asked for it): its line breaks are text."""


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
    typed_by: tuple[str, ...] = ()
    """Who typed it, when others joined the session and could type (else empty: the owner)."""


@dataclass
class _Pending:
    timestamp: datetime
    elapsed: int
    command: str
    lines: list[str]
    chars: int = 0
    typed_by: tuple[str, ...] = ()


class _TypedAhead:
    """Keys sent while no line was being edited: the shell echoes them after its next prompt.

    ``partial`` is the unfinished line; ``echoed`` stays true while the terminal
    echoed each of its keys at once (keys a pager or a raw-mode program read are
    not echoed, and are not the start of the next command).
    """

    def __init__(self) -> None:
        self.lines: list[str | None] = []
        self.partial: str | None = ""
        self.echoed = True
        self.awaiting = ""

    def clear(self) -> None:
        self.lines = []
        self.partial = ""
        self.echoed = True
        self.awaiting = ""

    def key(self, char: str) -> None:
        """Apply one key; a line with keys that cannot be followed is None (unknown)."""
        partial = self.partial
        if char in "\r\n":
            if len(self.lines) < MAX_AHEAD:
                self.lines.append(partial)
            self.partial = ""
            self.echoed = True
        elif partial is None:
            return
        elif char in "\x7f\b":
            self.partial = partial[:-1]
        elif char in "\x15\x03":
            self.partial = ""
            self.echoed = True
        elif char == "\x17":
            self.partial = partial.rstrip().rpartition(" ")[0] + " " if " " in partial else ""
        elif char < " " or len(partial) >= COMMAND_CHARS:
            self.partial = None
        else:
            self.partial = partial + char
            if not self.awaiting:
                self.awaiting = char

    def output(self, text: str) -> None:
        """Note whether the output after typed keys starts with their echo."""
        if self.awaiting:
            if not text.startswith(self.awaiting):
                self.echoed = False
            self.awaiting = ""

    def unread(self) -> str:
        """The unfinished line when the terminal echoed it (the shell reads it first)."""
        return (self.partial or "") if self.echoed else ""


class CommandTracker:
    """Turns a terminal's output and keystrokes into command log entries.

    ``clock()`` returns milliseconds since the session started. Call ``output``
    and ``input`` as data flows, ``resize`` when the width changes, ``tick`` about
    once a second, ``finish`` at the end; ``drain`` hands over the entries so far.

    A prompt is a line the output rests on (or that the user starts typing at)
    ending in a prompt character. From the first key typed at it until the line
    feed after Enter, the echo goes to a :class:`TypedLine`, which reads the command
    off a virtual screen; no prompt is looked for meanwhile, so prompt characters
    inside a command are just text. Output of full-screen programs (the terminal's
    alternate screen) is skipped.
    """

    def __init__(self, clock: Callable[[], int], columns: int = 80) -> None:
        self._clock = clock
        self._columns = columns
        self._lines = LineBuffer()
        self._armed = False
        self._prompt = ""
        self._candidate: str | None = None
        self._line_output = ""
        self._editor: TypedLine | None = None
        self._pasting = False
        self._ahead = _TypedAhead()
        self._fullscreen = False
        self._last_output = 0
        self._password = False
        self._capturing = False
        self._typed: list[str] = []
        self._secrets: set[str] = set()
        self._tail = ""
        self._pending: _Pending | None = None
        self._entries: list[CommandEntry] = []
        self._typists: set[str] = set()

    # -- output -----------------------------------------------------------------------

    def _needs_lines(self) -> bool:
        pending = self._pending
        return (
            self._password
            or bool(self._ahead.lines)
            or (
                pending is not None
                and len(pending.lines) <= PREVIEW_LINES
                and pending.chars <= PREVIEW_CHARS
            )
        )

    def output(self, text: str) -> None:
        """Feed decoded terminal output."""
        self._last_output = self._clock()
        editor = self._editor
        if editor is not None:
            used = editor.feed(text)
            if used is None:
                if editor.fed <= EDIT_OUTPUT_LIMIT:
                    return
                used = len(text)  # not a command line after all: stop replaying it
            self._editor = None
            self._pasting = False
            self._line_submitted(editor)
            self._lines.reset()
            self._tail = self._line_output = ""
            text = text[used:]
            if not text:
                return
        if self._fullscreen or ("\x1b" in text and "\x1b[?" in text):
            self._screens(text)
        else:
            self._shell_output(text)

    def _screens(self, text: str) -> None:
        """Skip what a full-screen program draws on the alternate screen."""
        position = 0
        for match in ALTERNATE_SCREEN.finditer(text):
            if not self._fullscreen:
                self._shell_output(text[position : match.start()])
            self._fullscreen = match.group(1) == "h"
            position = match.end()
        if not self._fullscreen:
            self._shell_output(text[position:])

    def _shell_output(self, text: str) -> None:
        """Output on the main screen, no line being edited.

        Only lines that matter (a password line, a line typed ahead, the start of a
        preview) go through the line buffer; bulk output such as ``cat`` of a large
        file skips to its last line, and that line is replayed only when it could
        be a prompt (it ends in a prompt or password character).
        """
        if not text:
            return
        if self._ahead.awaiting:
            self._ahead.output(text)
        cut = text.rfind("\n")
        if cut >= 0:
            self._line_output = text[cut + 1 :]
        else:
            self._line_output = (self._line_output + text)[-MAX_LINE * 2 :]
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
        if not current.strip() or self._fullscreen:
            return
        if PASSWORD_PROMPT.search(current):
            self._password = True
            self._capturing = True
            self._typed = []
        elif PROMPT.search(current) and not self._echoes_typed_ahead(current):
            self._candidate = current

    def _echoes_typed_ahead(self, current: str) -> bool:
        """True when the line ends in keys typed while a command ran (their echo, not a prompt)."""
        typed = self._ahead.partial
        if typed is None:
            return True
        last = typed.rstrip()[-1:]
        return bool(last) and current.rstrip().endswith(last)

    def _line_done(self, line: str) -> None:
        self._candidate = None
        if self._password:
            self._password = False
            # the prompt's line ended: answered by the keys, or by the gateway itself
            # (a telnet login), whose answer never passes through input()
            self._capturing = False
            if self._armed:
                self._store_pending()
                now = self._clock()
                self._entries.append(CommandEntry(utcnow(), now, REDACTED, None))
            return
        if self._ahead.lines and self._armed:
            found = self._typed_ahead_in(line)
            if found is not None:
                command, output = found
                self._store_pending()
                if command:
                    typed_by = tuple(sorted(self._typists))
                    self._typists.clear()
                    self._pending = _Pending(
                        utcnow(), self._clock(), command[:COMMAND_CHARS], [], typed_by=typed_by
                    )
                if output is None:
                    return
                line = output
        pending = self._pending
        if (
            pending is not None
            and len(pending.lines) <= PREVIEW_LINES
            and pending.chars <= PREVIEW_CHARS
        ):
            pending.lines.append(line[: PREVIEW_CHARS + 1])
            pending.chars += len(line) + 1

    def _typed_ahead_in(self, line: str) -> tuple[str, str | None] | None:
        """The command when ``line`` is a prompt followed by a line typed ahead.

        A shell with line editing echoes the line typed ahead after its prompt. One
        without (dash, sh: the terminal echoed the keys as they were typed) prints
        its prompt and then the command's output on the same line: then the command
        is the line as typed and the rest of the line (returned second) is output.
        Lines typed ahead that a program read instead are passed over.
        """
        lines = self._ahead.lines
        for index, typed in enumerate(lines):
            if typed is None:
                if not (self._prompt.strip() and line.startswith(self._prompt)):
                    continue
                typed = line[len(self._prompt) :]
            else:
                typed = typed.strip()
                head = line[: len(line) - len(typed)] if typed else line
                if not line.endswith(typed) or not PROMPT.search(head):
                    continue
            del lines[: index + 1]
            return typed.strip(), None
        typed = lines[0]
        if typed is not None and self._prompt.strip() and line.startswith(self._prompt):
            del lines[0]
            return typed.strip(), line[len(self._prompt) :]
        return None

    def _line_submitted(self, editor: TypedLine) -> None:
        """The line edited at a prompt was entered: its command is pending until the next."""
        if editor.submitted is None or editor.cancelled:
            return
        when, elapsed = editor.submitted
        # a pasted block runs line by line: one entry per line, the block's output
        # the preview of the last
        commands = [line.strip() for line in editor.command().split("\n") if line.strip()]
        typed_by = tuple(sorted(self._typists))
        self._typists.clear()
        for command in commands[:-1]:
            self._entries.append(
                CommandEntry(when, elapsed, self.scrub(command[:COMMAND_CHARS]), None, typed_by)
            )
        if commands:
            self._pending = _Pending(
                when, elapsed, commands[-1][:COMMAND_CHARS], [], typed_by=typed_by
            )

    def _confirm_prompt(self) -> bool:
        """The output rests on a prompt: the command before it is complete."""
        candidate = self._candidate
        if candidate is None or self._lines.current != candidate:
            return False
        self._store_pending()
        self._armed = True
        self._prompt = candidate
        # lines typed ahead are consumed by now; an unfinished one is still the shell's
        self._ahead.lines = []
        return True

    def _start_editing(self) -> None:
        """A key is typed: follow the line from here if the output shows a prompt."""
        if self._tail:
            self._flush_tail()
            self._settle()
        if self._password or self._fullscreen:
            return
        if self._confirm_prompt():
            # keys typed ahead that a shell without line editing reads before what is
            # typed now, though it does not show them after its prompt
            ahead = self._ahead.unread()
            self._editor = TypedLine(self._columns, self._line_output, ahead=ahead)
            self._ahead.clear()
            return
        partial = self._ahead.partial
        current = self._lines.current.rstrip()
        if not (self._armed and partial and not self._ahead.lines):
            return
        # keys typed while the last command ran, now echoed after the next prompt
        typed = partial.rstrip()
        if current.endswith(typed) and PROMPT.search(current[: len(current) - len(typed)]):
            self._store_pending()
            self._ahead.clear()
            self._editor = TypedLine(self._columns, self._line_output, typed=len(typed))

    # -- input ------------------------------------------------------------------------

    def typist(self, username: str) -> None:
        """The keys fed next are ``username``'s (a joined session): their command says so."""
        self._typists.add(username)

    def input(self, data: str) -> None:
        """Feed keystrokes sent to the remote side."""
        if self._editor is None:
            self._start_editing()
        for index, char in enumerate(data):
            editor = self._editor
            if editor is not None and editor.submitted is None:
                if char == "\x1b" and data.startswith(PASTE_START, index):
                    self._pasting = True
                elif char == "\x1b" and data.startswith(PASTE_END, index):
                    self._pasting = False
                elif self._pasting:
                    if char in "\r\n":
                        editor.pasted_lines = True
                elif char in "\r\n\x03":
                    editor.submitted = (utcnow(), self._clock())
                    editor.cancelled = char == "\x03"
                continue
            if char == "\x03" and editor is None and self._pending is not None:
                self._store_pending()
            if self._armed and not self._capturing and not self._fullscreen:
                self._ahead.key(char)
            if not self._capturing:
                continue
            if char in "\r\n":
                secret = "".join(self._typed)
                if len(secret) >= MIN_SECRET:
                    self._secrets.add(secret)
                self._typed = []
                self._capturing = False
            elif char == "\x03":
                self._capturing = False
            elif char in "\x7f\b":
                if self._typed:
                    self._typed.pop()
            elif char == "\x15":
                self._typed = []
            elif char >= " ":
                self._typed.append(char)

    def editing(self) -> str | None:
        """The command line being edited at a prompt, as the screen shows it, or None.

        Command rules (services/sessions/command_gate.py) read it when Enter is pressed.
        """
        editor = self._editor
        if editor is None or editor.submitted is not None:
            return None
        return editor.command()

    @property
    def last_output_ms(self) -> int:
        """When output last came (the clock's milliseconds)."""
        return self._last_output

    def secret_input(self) -> bool:
        """True while a password prompt shows: what is typed is not a command line."""
        return self._capturing

    def resize(self, columns: int) -> None:
        """The terminal's width changed."""
        self._columns = columns
        if self._editor is not None:
            self._editor.resize(columns)

    # -- time and end -------------------------------------------------------------------

    def tick(self) -> None:
        """Confirm a prompt the output has rested on; time out long-running commands."""
        now = self._clock()
        if self._editor is None and now - self._last_output >= QUIET_MS:
            if self._tail:
                self._flush_tail()
                self._settle()
            self._confirm_prompt()
        pending = self._pending
        if pending is not None and now - pending.elapsed >= PENDING_TIMEOUT_MS:
            self._store_pending()

    def finish(self) -> None:
        """The session ended: store what is pending and forget captured secrets."""
        editor, self._editor = self._editor, None
        if editor is not None:
            self._line_submitted(editor)
        elif self._tail:
            self._flush_tail()
            self._settle()
        self._store_pending()
        self._secrets.clear()
        self._typed = []

    def drain(self) -> list[CommandEntry]:
        """Entries made since the last drain."""
        entries, self._entries = self._entries, []
        return entries

    # -- storing ----------------------------------------------------------------------

    def scrub(self, text: str) -> str:
        """``text`` with every password typed in the session so far replaced by ``[password]``."""
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
                command=self.scrub(pending.command),
                output_preview=self.scrub(preview) or None,
                typed_by=pending.typed_by,
            )
        )
