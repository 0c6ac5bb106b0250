"""The command line a user edits at a shell prompt, read from the shell's echo.

While a line is being typed, the shell (readline, zle, or the kernel's tty line
discipline for shells without line editing) redraws it with cursor movements,
insertions and erasures. :class:`TypedLine` replays that echo on a small virtual
terminal (pyte) of the session's width, so the command is what the screen shows
when Enter is pressed: backspace, arrows, Ctrl+U/Ctrl+W, history recall, tab
completion and lines wrapped over several rows come out as the user saw them.

It only ever sees the echo of one line: it starts when the user types at a prompt
and ends at the line feed that follows Enter; the command's output goes elsewhere.
"""

from __future__ import annotations

from datetime import datetime

import pyte

ROWS = 200
"""Rows of the virtual screen: a wrapped line and a completion list fit below the prompt."""


class TypedLine:
    """One command line replayed from the echo, starting at the prompt's own output."""

    def __init__(self, columns: int, prompt_output: str, typed: int = 0, ahead: str = "") -> None:
        """Seed the screen with the raw output of the prompt's line.

        ``typed`` counts the columns at the end of that output that are already the
        echo of typed keys (keys typed ahead while the previous command ran, shown
        again after the prompt); ``ahead`` is text typed ahead that the shell reads
        before what is typed now without showing it after the prompt.
        """
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
            cells.extend(self._cells(y))
        text = "".join(cells).rstrip()
        if text.lstrip().startswith(self._ahead.strip()):
            return text.strip()  # the shell showed the keys typed ahead after its prompt
        return (self._ahead + text).strip()
