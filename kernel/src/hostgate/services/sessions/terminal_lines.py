"""Terminal output read back as text, for the command log.

:class:`LineBuffer` replays output into completed lines cheaply (CR, LF,
backspace, tabs and the common CSI edits): enough for a command's output.

:class:`TypedLine` reads the command line a user edits at a shell prompt. While
it is typed, the shell (readline, zle, or the kernel's tty line discipline for
shells without line editing) redraws it with cursor movements, insertions and
erasures; ``TypedLine`` replays that echo on a small virtual terminal (pyte) of
the session's width, so the command is what the screen shows when Enter is
pressed: backspace, arrows, Ctrl+U/Ctrl+W, history recall, tab completion and
lines wrapped over several rows come out as the user saw them. It only ever sees
the echo of one line: from the first key typed at a prompt to the line feed that
follows Enter; the command's output goes elsewhere. pyte is imported at the
first typed line, not at start.
"""

from __future__ import annotations

from datetime import datetime

ROWS = 200
"""Rows of the virtual screen: a wrapped line and a completion list fit below the prompt."""
MAX_LINE = 4096
TAB = 8


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
                elif char in "PX^_":
                    # DCS, SOS, PM, APC: a string up to ST (ESC \), never text
                    self._state = "string"
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
            elif state == "string":
                if char == "\x1b":
                    self._state = "string-esc"
            elif state == "string-esc":
                self._state = "string" if char != "\\" else "text"
            else:  # "skip": the one character after ESC ( and friends
                self._state = "text"
        return done


class TypedLine:
    """One command line replayed from the echo, starting at the prompt's own output."""

    def __init__(self, columns: int, prompt_output: str, typed: int = 0, ahead: str = "") -> None:
        """Seed the screen with the raw output of the prompt's line.

        ``typed`` counts the columns at the end of that output that are already the
        echo of typed keys (keys typed ahead while the previous command ran, shown
        again after the prompt); ``ahead`` is text typed ahead that the shell reads
        before what is typed now without showing it after the prompt.
        """
        import pyte  # the first terminal session loads it, not every start

        self._screen = pyte.Screen(max(columns, 2), ROWS)
        self._stream = pyte.Stream(self._screen)
        self._stream.feed(prompt_output)
        cursor = self._screen.cursor
        self._start = (cursor.y, max(0, min(cursor.x, self._screen.columns) - typed))
        self._prompt = self._cells(self._start[0])[: self._start[1]]
        self._end: int | None = None
        self._ahead = ahead
        self.submitted: tuple[datetime, int] | None = None
        self.cancelled = False
        self.moved_off = False
        self.pasted_lines = False
        """A bracketed paste put line breaks into the line: its rows that end blank end a line."""
        self.fed = 0

    def resize(self, columns: int) -> None:
        """The terminal's width changed (the shell redraws the line)."""
        self._screen.resize(ROWS, max(columns, 2))

    def feed(self, text: str) -> int | None:
        """Replay echo; after Enter, where the line ends.

        Returns the index in ``text`` just past the line feed that ends the line
        (the rest is the command's output), or None while the line goes on.
        """
        self.fed += len(text)
        position = 0
        while True:
            end = text.find("\n", position)
            if end < 0:
                self._stream.feed(text[position:])
                return None
            self._stream.feed(text[position : end + 1])
            position = end + 1
            if self._left_the_line():
                if self.submitted is not None:
                    self._end = self._screen.cursor.y - 1
                    return position
                # a completion list or a background job's message before Enter: the
                # shell draws the prompt and the line again below it
                self.moved_off = True

    def _left_the_line(self) -> bool:
        """True when the cursor sits below every row that shows text."""
        row = self._screen.cursor.y
        buffer = self._screen.buffer
        return not any(
            y >= row and any(char.data.strip() for char in buffer[y].values()) for y in list(buffer)
        )

    def _cells(self, y: int) -> list[str]:
        line = self._screen.buffer[y]
        return [line[x].data for x in range(self._screen.columns)]

    def command(self) -> str:
        """The text typed after the prompt, as the screen shows it (wrapped rows joined)."""
        end = self._screen.cursor.y if self._end is None else self._end
        start_y, start_x = self._start
        width = len(self._prompt)
        if self.moved_off or end < start_y or self._cells(start_y)[:width] != self._prompt:
            # the prompt was drawn again (after a completion list or Ctrl+L): the line
            # starts at the last row that begins with the same prompt
            start_y = next(
                (y for y in range(end, -1, -1) if self._cells(y)[:width] == self._prompt),
                start_y,
            )
        cells = self._cells(start_y)[start_x:]
        for y in range(start_y + 1, end + 1):
            if self.pasted_lines and cells and cells[-1] == " ":
                cells.append("\n")  # the row ended before the edge: a pasted line break
            cells.extend(self._cells(y))
        text = "\n".join(line.rstrip() for line in "".join(cells).split("\n")).rstrip()
        if text.lstrip().startswith(self._ahead.strip()):
            return text.strip()  # the shell showed the keys typed ahead after its prompt
        return (self._ahead + text).strip()
