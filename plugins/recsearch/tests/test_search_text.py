"""The search's words: queries split as the index splits text, snippets, marks, the schema."""

from __future__ import annotations

import jsonschema_rs
import pytest
from hostgate import InvalidInput
from hostgate_recsearch.index import query_words
from hostgate_recsearch.text import (
    QUERY_PATTERN,
    SNIPPET_LINES,
    encode_marks,
    marked,
    offset_at,
    position_of,
    snippet,
    words,
)


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


def test_stored_marks_give_the_moment_the_words_appeared():
    text = "$ echo one two\none two\n$ printf needle\nneedle\n$"
    marks = ((0, 100), (15, 165), (text.index("printf"), 1_300), (text.index("needle\n$"), 1_320))
    stored = encode_marks(marks)
    assert (
        stored
        == f"0:100,15:165,{text.index('printf')}:1300,{text.index('needle' + chr(10) + '$')}:1320"
    )
    assert offset_at(stored, position_of(text, ["needle"]), 0) == 1_300  # the command
    assert offset_at(stored, text.index("needle\n$"), 0) == 1_320  # its output
    assert offset_at(stored, position_of(text, ["one"]), 0) == 100
    assert offset_at(stored, position_of(text, ["one", "two"]), 0) == 100
    assert offset_at("", 50, 7) == 7
    assert offset_at("3:x,junk", 50, 7) == 7  # what is not index:ms stops the reading


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
