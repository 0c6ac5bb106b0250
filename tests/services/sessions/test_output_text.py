"""Terminal output as plain text: escapes stripped, timed chunks, marks, the per-session bound."""

from __future__ import annotations

from hostgate.services.sessions.output_text import (
    CHUNK_CHARS,
    CHUNK_MS,
    GAP_MS,
    Marks,
    OutputChunker,
    strip_escapes,
)


def appeared(marks: Marks, index: int) -> int:
    """When the character at ``index`` appeared: the last mark at or before it."""
    return [ms for at, ms in marks if at <= index][-1]


def test_escapes_and_controls_are_removed():
    raw = "\x1b[1;31mred\x1b[0m \x1b]0;title\x07ok\r\nnext\x1b(B line\x07\r\n\r\n\r\n  end\x08"
    assert strip_escapes(raw) == "red ok\nnext line\n end"


def test_output_is_chunked_with_the_offset_of_its_first_character():
    chunker = OutputChunker()
    chunker.feed("$ ls\r\n", 1_000)
    chunker.feed("a.txt  b.txt\r\n$ ", 1_200)
    assert chunker.drain(1_300) == []  # still open
    chunker.feed("echo late\r\nlate\r\n", 1_200 + GAP_MS)  # after a quiet spell: a new chunk
    [first] = chunker.drain(1_200 + GAP_MS)
    assert (first.offset_ms, first.text) == (1_000, "$ ls\na.txt b.txt\n$")
    [second] = chunker.drain(1_200 + GAP_MS + CHUNK_MS)  # the open chunk closes by age
    assert (second.offset_ms, second.text) == (1_200 + GAP_MS, "echo late\nlate")
    assert chunker.finish() == []


def test_long_output_is_cut_at_word_boundaries():
    chunker = OutputChunker()
    chunker.feed("word " * 1000, 5)
    chunks = chunker.finish()
    assert all(len(c.text) <= CHUNK_CHARS for c in chunks)
    assert all(c.text.split() == ["word"] * len(c.text.split()) for c in chunks)
    assert sum(len(c.text.split()) for c in chunks) == 1000


def test_escape_split_across_reads_and_alternate_screen():
    chunker = OutputChunker()
    chunker.feed("before \x1b[3", 0)
    chunker.feed("1mcoloured\x1b[0m\r\n", 10)
    chunker.feed("\x1b[?1049hvim screen text\x1b[?10", 20)
    chunker.feed("49lafter\r\n", 30)
    [chunk] = chunker.finish()
    assert chunk.text == "before coloured\nafter"


def test_a_session_indexes_at_most_its_limit():
    chunker = OutputChunker(limit=2_500)
    for second in range(100):
        chunker.feed("x" * 900 + "\n", second * 1000)
    chunks = chunker.finish()
    assert sum(len(c.text) for c in chunks) == 2_500
    assert chunker.full
    chunker.feed("more", 200_000)
    assert chunker.finish() == []


def test_marks_say_when_each_part_of_a_chunk_appeared():
    chunker = OutputChunker()
    chunker.feed("\r\n$ echo one", 100)
    chunker.feed(" two", 150)  # within MARK_MS of the previous mark, mid-line: no mark
    chunker.feed("\r\n", 160)
    chunker.feed("one two\r\n$ ", 165)  # a read that starts a line: a mark
    chunker.feed("printf needle\r\n", 1_300)
    chunker.feed("needle\r\n$ ", 1_320)
    [chunk] = chunker.finish()
    assert chunk.offset_ms == 100
    assert chunk.text == "$ echo one two\none two\n$ printf needle\nneedle\n$"
    assert chunk.marks == (
        (0, 100),
        (chunk.text.index("one two\n$"), 165),
        (chunk.text.index("printf"), 1_300),
        (chunk.text.index("needle\n$"), 1_320),
    )
    assert appeared(chunk.marks, chunk.text.index("needle")) == 1_300  # the command
    assert appeared(chunk.marks, chunk.text.index("needle\n$")) == 1_320  # its output


def test_marks_follow_a_long_output_cut_into_chunks():
    chunker = OutputChunker()
    for second in range(6):
        chunker.feed(f"line{second} " + "w " * 200 + "\n", second * 1_000)
    chunks = chunker.finish()
    for chunk in chunks:
        for index, ms in chunk.marks:
            # the text at a mark starts with the line printed at that moment (or continues it)
            assert 0 <= index < len(chunk.text)
            line = chunk.text[index:].split()[0]
            assert line == f"line{ms // 1000}" or index == 0
    where = {f"line{n}": None for n in range(6)}
    for chunk in chunks:
        for name in where:
            if name in chunk.text:
                where[name] = appeared(chunk.marks, chunk.text.index(name))
    assert where == {f"line{n}": n * 1_000 for n in range(6)}


def test_a_read_that_holds_a_line_break_is_marked_however_soon_it_comes():
    # the output of an echoed command often arrives with the end of the command's line,
    # within MARK_MS of the echo: it still gets the moment it was shown
    chunker = OutputChunker()
    chunker.feed("$ echo needle", 100)
    chunker.feed(" two", 120)  # mid-line, soon after: no mark
    chunker.feed("\r\nneedle two\r\n$ ", 150)
    [chunk] = chunker.finish()
    assert chunk.text == "$ echo needle two\nneedle two\n$"
    assert chunk.marks == ((0, 100), (len("$ echo needle two"), 150))
    assert appeared(chunk.marks, chunk.text.index("needle two\n$")) == 150
