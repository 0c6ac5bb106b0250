"""Search across recordings: the index of commands and terminal output, and its queries.

Entries are written as sessions run (the kernel's ``session_text`` hook, after the
command log's one-second flush): each logged command, and, when
``recordings.index_output`` is on, the output text of recorded terminal sessions in
timed chunks. The full-text part is the engine's own: FTS5 on SQLite, a ``tsvector``
with a GIN index on PostgreSQL (the kernel's migration ``0005_recording_search``);
:class:`FullText` is the small interface between them. Queries match whole words,
in the order given (``text.py``).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from hostgate import (
    Caller,
    InvalidInput,
    KernelAPI,
    Page,
    SessionListFilter,
    SessionRecord,
    SessionText,
)
from sqlalchemy import column, delete, func, table, text
from sqlmodel import col, select

from .models import SearchEntry
from .text import (
    MAX_QUERY_WORDS,
    WORD,
    encode_marks,
    marked,
    offset_at,
    position_of,
    snippet,
    words,
)

log = logging.getLogger("hostgate.search")  # the kernel's name for it, kept

INDEX_OUTPUT = "recordings.index_output"
KINDS = ("command", "output")
QUERY_MAX = 200
TOTAL_CAP = 1000
"""Hits are counted up to this many; beyond, ``total`` says this and ``capped`` is true."""
FEW_SESSIONS = 2000
"""Filters leaving at most this many sessions: their entries are tested, not every match."""
PROBE_ENTRIES = 5000
"""SQLite: up to this many entries of the few sessions are tested one by one against FTS5."""
DELETE_BATCH = 500


@dataclass(frozen=True)
class EntrySpan:
    """How many entries a few sessions have, and their lowest and highest id."""

    count: int
    lowest: int
    highest: int


@dataclass(frozen=True)
class SearchResult:
    """One page of hits; ``total`` counts at most ``TOTAL_CAP`` (``capped``: there are more)."""

    hits: list[SearchHit]
    total: int
    capped: bool


@dataclass(frozen=True)
class SearchHit:
    """Where a query matched: the session, the kind of entry, its offset and a snippet.

    ``parts`` is the snippet cut where the query's words are (``True``) and are not.
    """

    session: SessionRecord
    kind: str
    offset_ms: int
    snippet: str
    parts: list[tuple[str, bool]]


class FullText(Protocol):
    """What one database engine adds to a search: its source of rows and its match."""

    def source(self) -> Any:
        """The FROM clause the matching ``recording_search`` rows come from."""

    def match(self, query_words: Sequence[str]) -> Any:
        """The WHERE clause that keeps entries containing the words in this order."""

    def restricted_match(self, query_words: Sequence[str], entries: EntrySpan) -> Any:
        """The same test on ``recording_search`` alone, for ``entries`` of a few sessions."""

    def order_key(self) -> Any:
        """The entry id as the full-text source walks it in order (most recent last)."""

    def scoped_match(self, query_words: Sequence[str], scope: Sequence[str]) -> Any | None:
        """The match narrowed to entries whose session has every ``scope`` token, if indexed."""


def scope_token(prefix: str, value: str) -> str:
    """The token of a user (``u``) or connection (``c``) id, as the SQLite index holds it."""
    return prefix + value.encode().hex()


_FTS = table("recording_search_fts", column("rowid"), column("recording_search_fts"))


class SqliteFullText:
    """FTS5: a phrase query on the external-content table ``recording_search_fts``."""

    def source(self) -> Any:
        """The FTS5 table joined to ``recording_search`` by rowid."""
        return _FTS.join(SearchEntry, col(SearchEntry.id) == _FTS.c.rowid)

    def match(self, query_words: Sequence[str]) -> Any:
        """``MATCH`` a phrase of the words."""
        phrase = 'text : "' + " ".join(query_words) + '"'
        return text("recording_search_fts MATCH :phrase").bindparams(phrase=phrase)

    def restricted_match(self, query_words: Sequence[str], entries: EntrySpan) -> Any:
        """Few entries: FTS5 is asked about each; more: its matches in their id range."""
        phrase = 'text : "' + " ".join(query_words) + '"'
        matches = text("recording_search_fts MATCH :restricted").bindparams(restricted=phrase)
        if entries.count <= PROBE_ENTRIES:
            probe = select(_FTS.c.rowid).where(matches, _FTS.c.rowid == col(SearchEntry.id))
            return probe.exists()
        matching = select(_FTS.c.rowid).where(
            matches, _FTS.c.rowid >= entries.lowest, _FTS.c.rowid <= entries.highest
        )
        return col(SearchEntry.id).in_(matching)

    def order_key(self) -> Any:
        """FTS5 walks its rowids in order, ``ORDER BY rowid DESC`` too, without sorting."""
        return _FTS.c.rowid

    def scoped_match(self, query_words: Sequence[str], scope: Sequence[str]) -> Any | None:
        """``scope : "u…" AND text : "…"``: FTS5 intersects the doclists itself."""
        terms = [f'scope : "{token}"' for token in scope]
        terms.append('text : "' + " ".join(query_words) + '"')
        expression = " AND ".join(terms)
        return text("recording_search_fts MATCH :scoped").bindparams(scoped=expression)


class PostgresFullText:
    """PostgreSQL: the generated ``document`` column against a phrase ``tsquery``."""

    def source(self) -> Any:
        """``recording_search`` itself."""
        return SearchEntry

    def match(self, query_words: Sequence[str]) -> Any:
        """``@@`` a ``tsquery`` of the words, each followed by the next."""
        tsquery = " <-> ".join(query_words)
        return text(
            "recording_search.document @@ to_tsquery('simple'::regconfig, :tsquery)"
        ).bindparams(tsquery=tsquery)

    def restricted_match(self, query_words: Sequence[str], entries: EntrySpan) -> Any:
        """The same test: PostgreSQL combines the GIN index with the session index."""
        return self.match(query_words)

    def order_key(self) -> Any:
        """The primary key."""
        return col(SearchEntry.id)

    def scoped_match(self, query_words: Sequence[str], scope: Sequence[str]) -> Any | None:
        """None: the session filters join the GIN matches (fast enough on PostgreSQL)."""
        return None


def full_text_for(dialect: str) -> FullText:
    """The full-text part of ``dialect`` (``sqlite`` or ``postgresql``)."""
    return SqliteFullText() if dialect == "sqlite" else PostgresFullText()


def query_words(query: str) -> list[str]:
    """The words to look for; InvalidInput when there are none or too many characters."""
    query = query.strip()
    if not query:
        raise InvalidInput("q is required: the words to look for", code="invalid_query")
    if len(query) > QUERY_MAX:
        raise InvalidInput(f"q must be at most {QUERY_MAX} characters", code="invalid_query")
    # counted as typed, as the schema's pattern counts them: lower case can split a word
    # ("İ" becomes "i" and a combining dot, which is no letter)
    if len(WORD.findall(query)) > MAX_QUERY_WORDS:
        raise InvalidInput(f"q may hold at most {MAX_QUERY_WORDS} words", code="invalid_query")
    found = words(query, limit=QUERY_MAX)
    if not found:
        raise InvalidInput("q must contain a letter or a digit", code="invalid_query")
    return found


class RecordingSearch:
    """Writes index entries, follows ``recordings.index_output``, answers searches."""

    def __init__(self, kernel: KernelAPI) -> None:
        self.kernel = kernel
        self.full_text = full_text_for(kernel.db.dialect)
        self._output_was_on: bool | None = None

    def output_enabled(self) -> bool:
        """``recordings.index_output``."""
        return bool(self.kernel.settings.get(INDEX_OUTPUT))

    # -- writing ------------------------------------------------------------------------

    def entries(self, texts: Iterable[SessionText]) -> list[SearchEntry]:
        """The index entries of session text: its commands, its output while indexed."""
        output = self.output_enabled()
        return [
            SearchEntry(
                session_id=piece.session_id,
                kind=piece.kind,
                offset_ms=piece.offset_ms,
                text=piece.text,
                marks=encode_marks(piece.marks),
            )
            for piece in texts
            if piece.kind == "command" or output
        ]

    async def add(self, texts: Sequence[SessionText]) -> None:
        """Store the index entries of ``texts`` (one transaction)."""
        found = self.entries(texts)
        if not found:
            return
        async with self.kernel.db.session() as session:
            session.add_all(found)
            await session.commit()

    async def follow_setting(self, on: bool | None = None) -> int:
        """Once output indexing is off (also at start), purge the indexed output; the count.

        ``on``: the setting's new value when it is known before the settings have it.
        """
        on = self.output_enabled() if on is None else on
        if on or self._output_was_on is False:
            self._output_was_on = on
            return 0
        purged = await self.purge_output()
        self._output_was_on = on  # only now: a purge that failed (a busy database) is retried
        return purged

    async def purge_output(self) -> int:
        """Delete every output entry (commands stay); how many there were."""
        async with self.kernel.db.session() as session:
            purge = delete(SearchEntry).where(col(SearchEntry.kind) == "output")
            result = await session.exec(purge)
            await session.commit()
        count = int(getattr(result, "rowcount", 0) or 0)
        if count:
            log.info("output indexing is off: removed %d indexed output chunk(s)", count)
        return count

    async def forget(self, session_ids: Sequence[str]) -> None:
        """Delete the entries of these sessions (their recordings are gone)."""
        async with self.kernel.db.session() as session:
            for start in range(0, len(session_ids), DELETE_BATCH):
                chunk = session_ids[start : start + DELETE_BATCH]
                where = col(SearchEntry.session_id).in_(chunk)
                await session.exec(delete(SearchEntry).where(where))
            await session.commit()

    # -- searching ----------------------------------------------------------------------

    async def search(
        self,
        caller: Caller,
        query: str,
        page: Page,
        flt: SessionListFilter,
        *,
        kind: str = "",
    ) -> SearchResult:
        """Hits most recent first (the order they were written), and how many (capped).

        The caller's own sessions are searched, or everyone's with
        ``sessions.view_any`` (the session list's rule). When the filters leave at most
        ``FEW_SESSIONS`` sessions, their entries are tested against the words;
        otherwise the full-text matches are walked newest first and filtered,
        which stops as soon as the page is full. On SQLite a user or connection
        filter (visibility included) is part of the full-text match itself, and
        the matches are walked the same way, the session filters still applied.
        """
        found = query_words(query)
        if kind and kind not in KINDS:
            raise InvalidInput("kind must be command or output", code="invalid_query")
        entry_where = [col(SearchEntry.kind) == kind] if kind else []
        history = self.kernel.session_history
        sessions = history.table
        visible_to_all = history.sees_all(caller)
        session_where = history.conditions(caller, flt)
        scope = []
        if flt.user_id:
            scope.append(scope_token("u", flt.user_id))
        if not visible_to_all and caller.user_id != flt.user_id:
            scope.append(scope_token("u", caller.user_id))
        if flt.connection_id:
            scope.append(scope_token("c", flt.connection_id))
        scoped = self.full_text.scoped_match(found, scope) if scope else None
        async with self.kernel.db.session() as session:
            candidates: list[str] | None = None
            if session_where and scoped is None:
                narrowed = select(sessions.c.id).where(*session_where)
                ids = list((await session.exec(narrowed.limit(FEW_SESSIONS + 1))).all())
                if len(ids) <= FEW_SESSIONS:
                    candidates = ids
            if candidates is not None:
                of_candidates = [col(SearchEntry.session_id).in_(candidates), *entry_where]
                spanning = select(
                    func.count(), func.min(col(SearchEntry.id)), func.max(col(SearchEntry.id))
                ).where(*of_candidates)
                count, lowest, highest = (await session.exec(spanning)).one()
                if not count or lowest is None or highest is None:
                    return SearchResult([], 0, False)
                span = EntrySpan(int(count), int(lowest), int(highest))
                base = select(col(SearchEntry.id)).where(
                    *of_candidates, self.full_text.restricted_match(found, span)
                )
                # an expression, not the key: the engine then reads the few sessions'
                # entries by their index and sorts them, instead of walking every entry
                # newest first to find theirs
                order = (col(SearchEntry.id) + 0).desc()
            else:
                base = (
                    select(col(SearchEntry.id))
                    .select_from(self.full_text.source())
                    .join(sessions, sessions.c.id == col(SearchEntry.session_id))
                    .where(
                        self.full_text.match(found) if scoped is None else scoped,
                        *entry_where,
                        *session_where,
                    )
                )
                order = self.full_text.order_key().desc()
            listed = base.order_by(order).offset(page.offset).limit(page.limit)
            entry_ids = list((await session.exec(listed)).all())
            if page.offset == 0 and len(entry_ids) < page.limit:
                total = len(entry_ids)
            else:
                capped = base.limit(TOTAL_CAP + 1).subquery()
                total = int((await session.exec(select(func.count()).select_from(capped))).one())
            rows: list[SearchEntry] = []
            if entry_ids:
                details = (
                    select(SearchEntry)
                    .where(col(SearchEntry.id).in_(entry_ids))
                    .order_by(col(SearchEntry.id).desc())
                )
                rows = list((await session.exec(details)).all())
        records = await history.records([entry.session_id for entry in rows])
        hits = []
        for entry in rows:
            record = records.get(entry.session_id)
            if record is None:  # deleted since
                continue
            piece = snippet(entry.text, found)
            hits.append(
                SearchHit(
                    session=record,
                    kind=entry.kind,
                    offset_ms=offset_at(
                        entry.marks, position_of(entry.text, found), entry.offset_ms
                    ),
                    snippet=piece,
                    parts=marked(piece, found),
                )
            )
        return SearchResult(hits, min(total, TOTAL_CAP), total > TOTAL_CAP)
