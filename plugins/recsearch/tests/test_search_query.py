"""``GET /sessions/search?q``: the schema's pattern and the server count words alike.

A word is a run of Unicode letters and numbers (categories L and N). The schema states
it with ``\\p{L}``/``\\p{N}`` as a JSON Schema validator reads it (``jsonschema_rs``,
the one schemathesis judges "schema-valid" with); the server counts with Python's
``re``. Fuzzing once found ``"a" + " é" * 17`` valid by the schema (which read ``\\w``
as ASCII: one word) and refused by the server (18 words).
"""

from __future__ import annotations

import unicodedata

import jsonschema_rs
from hostgate import InvalidInput
from hostgate_recsearch.index import QUERY_MAX, query_words
from hostgate_recsearch.routes import SearchQuery
from hostgate_recsearch.text import MAX_QUERY_WORDS, WORD
from hypothesis import example, given
from hypothesis import strategies as st

Q_SCHEMA = SearchQuery.model_json_schema()["properties"]["q"]
SCHEMA_VALID = jsonschema_rs.validator_for(Q_SCHEMA).is_valid


def server_accepts(q: str) -> bool:
    try:
        query_words(q)
    except InvalidInput:
        return False
    return True


def assigned(char: str) -> bool:
    """Assigned in this Python's Unicode database (a later Unicode's letters are not yet
    letters here, but may be to the validator's newer tables), and no surrogate: a lone
    one cannot be sent (a URL is UTF-8) and the validator cannot take it."""
    return unicodedata.category(char) not in ("Cn", "Cs")


@given(st.characters().filter(assigned))
def test_a_word_character_is_a_unicode_letter_or_number(char: str) -> None:
    assert bool(WORD.fullmatch(char)) == (unicodedata.category(char)[0] in "LN")


# word characters of several scripts and kinds, and separators of every kind
PIECES = st.sampled_from(["a", "Z", "7", "é", "ж", "日", "²", "_", " ", "-", "\u0301", "🙂", "\t"])


@given(st.lists(PIECES, min_size=1, max_size=60).map("".join))
@example("a" + " é" * 17)  # the fuzzer's find: 18 words, one to an ASCII reading of \w
@example("é")  # no word at all to an ASCII reading
@example("x" + " y" * (MAX_QUERY_WORDS - 1))
@example("x" + " y" * MAX_QUERY_WORDS)
@example("a_b " * 8)
@example("   ")
def test_the_schema_and_the_server_agree_on_every_query(q: str) -> None:
    assert len(q) <= QUERY_MAX
    assert SCHEMA_VALID(q) == server_accepts(q)


@given(st.text(st.characters().filter(assigned), min_size=1, max_size=40))
def test_they_agree_on_any_assigned_characters(q: str) -> None:
    assert SCHEMA_VALID(q) == server_accepts(q)


def test_the_fuzzers_find_is_refused_by_both() -> None:
    q = "a" + " é" * 17
    assert len(WORD.findall(q)) == 18
    assert not SCHEMA_VALID(q) and not server_accepts(q)
