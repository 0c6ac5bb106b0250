"""Terminal output as plain text: escape sequences removed, cut into timed chunks.

Packs that keep a session's text (the ``recsearch`` pack's index, through the
``session_text`` hook) get what a terminal showed on its main screen, in chunks of at
most ``CHUNK_CHARS`` characters or ``CHUNK_MS`` of session time, each with the
offset of its first character and marks saying when later parts of it appeared
(a read that starts a line or holds a line break, or comes ``MARK_MS`` after the
previous mark, gets
one; at most ``MAX_MARKS``),
so a hit is exact to the moment its text appeared; output after ``GAP_MS`` of
quiet starts a new chunk. At most
``MAX_SESSION_CHARS`` per session (docs/terminals.md, "Searching recordings").
What full-screen programs draw on the alternate screen (``vim``, ``less``,
``top``) is skipped: it is redrawn again and again and would crowd out the rest.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

CHUNK_CHARS = 1000
CHUNK_MS = 10_000
GAP_MS = 1_500
MARK_MS = 200
MAX_MARKS = 64
MAX_SESSION_CHARS = 256 * 1024
MAX_PENDING_ESCAPE = 256

ESCAPES = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves, modes
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)"  # OSC: window titles, hyperlinks
    r"|\x1b[PX^_][^\x1b]*\x1b\\"  # DCS, SOS, PM, APC strings
    r"|\x1b[()*+][0-9A-Za-z]"  # character set selection
    r"|\x1b[@-Z\\-_=>78]"  # two-character escapes
)
ALTERNATE_SCREEN = re.compile(r"\x1b\[\?(?:1049|1047|47)([hl])")
CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
BLANKS = re.compile(r"[ \t]+")
BLANK_LINES = re.compile(r"\n\s*\n+")


def strip_escapes(text: str) -> str:
    """Terminal output as plain text: escapes and control characters removed, blanks squeezed."""
    text = ESCAPES.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = CONTROLS.sub("", text)
    text = BLANKS.sub(" ", text)
    return BLANK_LINES.sub("\n", text)


Marks = tuple[tuple[int, int], ...]
"""(character index, milliseconds) pairs: from that character on, text appeared then."""


@dataclass(frozen=True)
class OutputChunk:
    """Output text and the session time of its first character (milliseconds)."""

    offset_ms: int
    text: str
    marks: Marks = ()


class OutputChunker:
    """Collects a terminal's output as plain text chunks (the ``session_text`` hook's).

    ``feed`` the decoded output with the session time it arrived at; ``drain``
    about once a second hands over the chunks that are complete (full, or older
    than ``CHUNK_MS``); ``finish`` completes the last one.
    """

    def __init__(self, limit: int = MAX_SESSION_CHARS) -> None:
        self.limit = limit
        self.indexed = 0
        self._pending = ""
        self._fullscreen = False
        self._text: list[str] = []
        self._size = 0
        self._marks: list[tuple[int, int]] = []
        self._start = 0
        self._last = 0
        self._chunks: list[OutputChunk] = []

    @property
    def full(self) -> bool:
        """True once the session's share of text is used up."""
        return self.indexed >= self.limit

    def feed(self, text: str, elapsed_ms: int) -> None:
        """Terminal output that arrived ``elapsed_ms`` after the session started."""
        if self.full or not text:
            return
        text = self._pending + text
        self._pending = ""
        cut = text.rfind("\x1b")
        if cut >= 0 and len(text) - cut <= MAX_PENDING_ESCAPE and not ESCAPES.match(text, cut):
            text, self._pending = text[:cut], text[cut:]  # an escape split across reads
        shown: list[str] = []
        position = 0
        for match in ALTERNATE_SCREEN.finditer(text):
            if not self._fullscreen:
                shown.append(text[position : match.start()])
            self._fullscreen = match.group(1) == "h"
            position = match.end()
        if not self._fullscreen:
            shown.append(text[position:])
        plain = strip_escapes("".join(shown))
        if plain.strip():
            self._add(plain, elapsed_ms)
        elif plain and self._text:  # a line break on its own still ends the line
            self._text.append(plain)
            self._size += len(plain)

    def _add(self, plain: str, elapsed_ms: int) -> None:
        if not self._text:
            plain = plain.lstrip()
            self._start = elapsed_ms
        elif elapsed_ms - self._start >= CHUNK_MS or elapsed_ms - self._last >= GAP_MS:
            self._close()
            plain = plain.lstrip()
            self._start = elapsed_ms
        self._last = elapsed_ms
        marks = self._marks
        # a read that starts a line, or in which one starts (the output after an echoed
        # command often comes in the read that ends the command's line)
        line_start = (bool(self._text) and self._text[-1].endswith("\n")) or "\n" in plain
        later = elapsed_ms - marks[-1][1] if marks else 0
        if not marks or (
            len(marks) < MAX_MARKS and (later >= MARK_MS or (line_start and later > 0))
        ):
            marks.append((self._size, elapsed_ms))
        self._text.append(plain)
        self._size += len(plain)
        while self._size >= CHUNK_CHARS and not self.full:
            joined = "".join(self._text)
            cut = max(joined.rfind("\n", 0, CHUNK_CHARS), joined.rfind(" ", 0, CHUNK_CHARS))
            if cut < CHUNK_CHARS // 2:
                cut = CHUNK_CHARS
            everything = self._marks
            self._text, self._size = [joined[:cut]], cut
            self._marks = [m for m in everything if m[0] < cut]
            self._close()
            rest = joined[cut:].lstrip()
            if rest:
                skipped = len(joined) - len(rest)
                self._text, self._size = [rest], len(rest)
                self._marks = _shifted(everything, skipped)
                self._start = self._marks[0][1]

    def _close(self) -> None:
        raw = "".join(self._text)
        text = raw.strip()
        marks = _shifted(self._marks, len(raw) - len(raw.lstrip()))
        self._text, self._size, self._marks = [], 0, []
        if not text or self.full:
            return
        text = text[: self.limit - self.indexed]
        self.indexed += len(text)
        kept = tuple(m for m in marks if m[0] < len(text))
        self._chunks.append(OutputChunk(kept[0][1] if kept else self._start, text, kept))

    def drain(self, elapsed_ms: int) -> list[OutputChunk]:
        """The chunks complete by now (the open one too once it is ``CHUNK_MS`` old)."""
        if self._text and elapsed_ms - self._start >= CHUNK_MS:
            self._close()
        chunks, self._chunks = self._chunks, []
        return chunks

    def finish(self) -> list[OutputChunk]:
        """Every chunk left, the open one included."""
        self._close()
        chunks, self._chunks = self._chunks, []
        return chunks


def _shifted(marks: list[tuple[int, int]], skipped: int) -> list[tuple[int, int]]:
    """Marks of a text whose first ``skipped`` characters went (what began there, at 0)."""
    if not marks:
        return []
    before = [m for m in marks if m[0] <= skipped]
    first = before[-1] if before else marks[0]
    return [(0, first[1]), *((i - skipped, ms) for i, ms in marks if i > skipped)]
