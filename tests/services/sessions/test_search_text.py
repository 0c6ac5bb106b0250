"""Terminal output made searchable: escapes stripped, timed chunks, the per-session bound."""

from __future__ import annotations

import jsonschema_rs
import pytest
from hostgate.errors import InvalidInput
from hostgate.services.sessions.search_index import query_words
from hostgate.services.sessions.search_text import (
    CHUNK_CHARS,
    CHUNK_MS,
    GAP_MS,
    QUERY_PATTERN,
    SNIPPET_LINES,
    OutputChunker,
    encode_marks,
    marked,
    offset_at,
    position_of,
    snippet,
    strip_escapes,
    words,
)


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


def test_query_words_and_snippets():
    assert words("rm -rf /tmp/Build_01") == ["rm", "rf", "tmp", "build", "01"]
    text = "x " * 200 + "the needle is here " + "y " * 200
    cut = snippet(text, ["needle"])
    assert "needle is here" in cut and cut.startswith("…") and cut.endswith("…")
    assert len(cut) <= 162
    assert snippet("short  \n\n  text", ["text"]) == "short\ntext"


def test_snippets_keep_line_breaks_around_the_match():
    text = "".join(f"line {n}\n" for n in range(40)) + "the needle here\n" + "after\n" * 40
    cut = snippet(text, ["needle", "here"])
    shown = cut.strip("…").split("\n")
    assert len(shown) == SNIPPET_LINES and cut.startswith("…") and cut.endswith("…")
    assert shown[:2] == ["line 39", "the needle here"]  # the line before the match's, then it
    # a phrase later in the text than its first word alone: the snippet shows the phrase
    assert "needle here" in snippet("needle " + "x " * 300 + "needle here", ["needle", "here"])


def test_the_words_found_are_marked_whole_in_order_and_any_case():
    assert marked("$ echo Needle-Found; needle found\nneedle\nfound", ["needle", "found"]) == [
        ("$ echo ", False),
        ("Needle-Found", True),
        ("; ", False),
        ("needle found", True),
        ("\n", False),
        ("needle\nfound", True),  # next to each other across a line break, as the index has it
    ]
    assert marked("needles found; found needle", ["needle", "found"]) == [
        ("needles found; found needle", False)
    ]
    assert marked("", ["x"]) == [] and marked("text", []) == [("text", False)]


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
    stored = encode_marks(chunk.marks)
    assert offset_at(stored, position_of(chunk.text, ["needle"]), 0) == 1_300  # the command
    assert offset_at(stored, chunk.text.index("needle\n$"), 0) == 1_320  # its output
    assert offset_at(stored, position_of(chunk.text, ["one"]), 0) == 100
    assert offset_at("", 50, 7) == 7


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
                at = offset_at(encode_marks(chunk.marks), position_of(chunk.text, [name]), -1)
                where[name] = at
    assert where == {f"line{n}": n * 1_000 for n in range(6)}


@pytest.mark.parametrize(
    "query",
    [
        "x",
        "é",
        "a_b",
        "  two words  ",
        "---",
        "",
        "   ",
        "_",
        "42",
        " ".join(["w"] * 16),
        " ".join(["w"] * 17),
        "w," * 16,
        "w," * 17,
        "\U000f069a",
        "ab\U000f069acd",
        # 16 words as typed, 32 in lower case ("İ" is "i" and a combining dot): the
        # fuzz sent one such query, schema-valid, and was refused
        " ".join(["xİx"] * 16),
        " ".join(["xİx"] * 17),
        # 18 words, one to a validator reading \w as ASCII (as JSON Schema's do): the fuzz
        # found it schema-valid and refused
        "a" + " é" * 17,
    ],
)
def test_the_schema_pattern_accepts_what_the_server_does(query):
    """The OpenAPI pattern of ``q`` and the server's check agree on every query."""
    try:
        query_words(query)
        accepted = True
    except InvalidInput:
        accepted = False
    # read as a JSON Schema validator reads it (ECMA 262), not as Python's re would
    schema_valid = jsonschema_rs.validator_for({"type": "string", "pattern": QUERY_PATTERN})
    assert schema_valid.is_valid(query) is accepted
