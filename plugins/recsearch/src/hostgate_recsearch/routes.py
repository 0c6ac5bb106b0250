"""``GET /sessions/search``: find commands and terminal output in recorded sessions."""

from __future__ import annotations

from typing import Any, Literal

from hostgate import (
    InvalidInput,
    Pagination,
    SessionQuery,
    SessionRecord,
    answers,
    authenticated,
    current_caller,
    current_kernel,
    page_from,
)
from pydantic import Field
from quart import Blueprint, request
from quart_schema import tag
from typing_extensions import TypedDict

from .index import KINDS, QUERY_MAX, RecordingSearch, SearchHit
from .text import QUERY_PATTERN

STATE_KEY = "recsearch.index"
blueprint = Blueprint("recsearch", __name__)


def index() -> RecordingSearch:
    """The pack's index of the running kernel."""
    found: RecordingSearch = current_kernel().state[STATE_KEY]
    return found


class SearchQuery(SessionQuery):
    """``GET /sessions/search``: the words to find, and the session list's filters."""

    q: str = Field(
        min_length=1,
        max_length=QUERY_MAX,
        description="words to find, in this order (whole words, any case): 1 to 16 runs of"
        " Unicode letters and numbers (categories L and N); anything else, `_` included,"
        " only separates them",
        # the schema says what the server checks (its own messages stay the clearer ones)
        json_schema_extra={"pattern": QUERY_PATTERN},
    )
    kind: Literal["command", "output", ""] = Field(
        default="", description="only commands or only terminal output (both by default)"
    )


class SnippetPart(TypedDict):
    """A piece of a hit's snippet: ``match`` where the words searched for are."""

    text: str
    match: bool


class SearchHitRecord(TypedDict):
    """Where a search matched: a session, a command or output, and when in it."""

    sessionId: str
    kind: Literal["command", "output"]
    offset: float
    """Seconds since the session started: where the player jumps to."""
    snippet: str
    """The text around the match, its line breaks kept (at most 4 lines)."""
    snippetParts: list[SnippetPart]
    """``snippet`` cut into pieces, in order: joined they are ``snippet``."""
    session: SessionRecord


class SearchPage(Pagination):
    """One page of hits, most recent first, and how many there are (counted up to 1000)."""

    hits: list[SearchHitRecord]
    total: int
    totalCapped: bool
    """True when there are more hits than ``total`` (1000)."""


def hit_json(hit: SearchHit) -> SearchHitRecord:
    """One search hit with its session as the session list shows it."""
    return {
        "sessionId": hit.session["id"],
        "kind": "command" if hit.kind == "command" else "output",
        "offset": hit.offset_ms / 1000,
        "snippet": hit.snippet,
        "snippetParts": [{"text": text, "match": match} for text, match in hit.parts],
        "session": hit.session,
    }


@blueprint.get("/sessions/search")
@authenticated
@tag(["sessions"])
@answers(SearchPage, query=SearchQuery)
async def search_sessions() -> dict[str, Any]:
    """Find commands and terminal output in recorded sessions; each hit names its offset.

    The filters and visibility are those of ``GET /sessions``: one's own sessions,
    everyone's with ``sessions.view_any``.
    """
    page = page_from(request.args)
    kind = request.args.get("kind", "").strip()
    if kind and kind not in KINDS:
        raise InvalidInput("kind must be command or output", code="invalid_query")
    flt = current_kernel().session_history.filter_from(request.args)
    found = await index().search(current_caller(), request.args.get("q", ""), page, flt, kind=kind)
    return {
        "hits": [hit_json(hit) for hit in found.hits],
        **page.echo(),
        "total": found.total,
        "totalCapped": found.capped,
    }
