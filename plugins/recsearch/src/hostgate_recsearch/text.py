"""The search's words: queries split as the index splits text, snippets and their marks.

Queries match whole words, in the order given; a hit's snippet is cut around them and
its offset comes from the marks stored with output text (when each part appeared).
"""

from __future__ import annotations

import re

SNIPPET_CHARS = 160
SNIPPET_LINES = 4
MAX_QUERY_WORDS = 16
MAX_WORD_CHARS = 100

WORD = re.compile(r"[^\W_]+")
r"""A word: a run of Unicode letters and numbers (general categories L and N).

Python's ``[^\W_]`` is exactly that set (checked over every code point of Python 3.11's
Unicode 14; ``plugins/recsearch/tests/test_search_query.py`` checks drawn ones); ``_``, marks,
punctuation, symbols and spaces separate words."""
_WORD_CHAR = r"[\p{L}\p{N}]"
_SEPARATOR = r"[^\p{L}\p{N}]"
QUERY_PATTERN = (
    rf"^{_SEPARATOR}*(?:{_WORD_CHAR}+{_SEPARATOR}+){{0,{MAX_QUERY_WORDS - 1}}}"
    rf"{_WORD_CHAR}+{_SEPARATOR}*$"
)
r"""A query of 1 to ``MAX_QUERY_WORDS`` words, as the API's schema states it (ECMA 262).

Spelled with Unicode property classes, not ``\w``: JSON Schema validators read ``\w``
and ``\W`` as ASCII, so ``a é é …`` (18 words here) was one word to them, and ``é``
none. Python's ``re`` has no ``\p{…}``: the server counts with ``WORD``."""


def words(query: str, limit: int = MAX_QUERY_WORDS) -> list[str]:
    """The words of a query as the index splits text: runs of letters and digits, lower case."""
    return [word[:MAX_WORD_CHARS] for word in WORD.findall(query.lower())][:limit]


def phrase(query_words: list[str]) -> re.Pattern[str]:
    """The query's words as the index matches them: whole, in order, next to each other."""
    between = r"[\W_]+"
    return re.compile(
        r"(?<![^\W_])" + between.join(map(re.escape, query_words)) + r"(?![^\W_])", re.IGNORECASE
    )


def position_of(text: str, query_words: list[str]) -> int:
    """Where the query's words start in ``text`` (else its first word as a word; else 0)."""
    if not query_words:
        return 0
    found = phrase(query_words).search(text)
    if found is None:
        found = re.search(r"(?<![^\W_])" + re.escape(query_words[0]), text, re.IGNORECASE)
    return found.start() if found is not None else 0


Marks = tuple[tuple[int, int], ...]
"""(character index, milliseconds) pairs: from that character on, text appeared then."""


def encode_marks(marks: Marks) -> str:
    """Marks as stored: ``index:ms`` pairs separated by commas."""
    return ",".join(f"{index}:{ms}" for index, ms in marks)


def offset_at(marks_text: str, position: int, default: int) -> int:
    """When the character at ``position`` appeared, from stored marks (``default`` without)."""
    offset = default
    for pair in marks_text.split(","):
        index, _, ms = pair.partition(":")
        if not (index.isdigit() and ms.isdigit()) or int(index) > position:
            break
        offset = int(ms)
    return offset


def snippet(text: str, query_words: list[str]) -> str:
    """About ``SNIPPET_CHARS`` characters of ``text`` around the query's words.

    Line breaks stay (at most ``SNIPPET_LINES`` lines, the match's among them);
    blanks within a line are squeezed; ``…`` says where text was left out.
    """
    lines = (" ".join(line.split()) for line in text.splitlines())
    flat = "\n".join(line for line in lines if line)
    at = position_of(flat, query_words)
    start = max(0, min(at - SNIPPET_CHARS // 3, len(flat) - SNIPPET_CHARS))
    kept = flat[start : start + SNIPPET_CHARS].split("\n")
    if len(kept) > SNIPPET_LINES:
        matched = flat.count("\n", start, at)
        first = max(0, min(matched - 1, len(kept) - SNIPPET_LINES))
        start += sum(len(line) + 1 for line in kept[:first])
        kept = kept[first : first + SNIPPET_LINES]
    piece = "\n".join(kept)
    end = start + len(piece)
    return ("…" if start > 0 else "") + piece + ("…" if end < len(flat) else "")


def marked(piece: str, query_words: list[str]) -> list[tuple[str, bool]]:
    """``piece`` cut into ``(text, matched)`` parts: matched where the query's words are."""
    parts: list[tuple[str, bool]] = []
    position = 0
    for found in phrase(query_words).finditer(piece) if query_words else ():
        if found.start() > position:
            parts.append((piece[position : found.start()], False))
        parts.append((found.group(), True))
        position = found.end()
    if position < len(piece):
        parts.append((piece[position:], False))
    return parts
