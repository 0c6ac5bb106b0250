"""Search across recordings: the index of commands and terminal output, and its queries.

Entries are written as sessions run (with the command log's one-second flush):
each logged command, and, when ``recordings.index_output`` is on, the output text
of recorded terminal sessions in timed chunks (``search_text.py``). The full-text
part is the engine's own: FTS5 on SQLite, a ``tsvector`` with a GIN index on
PostgreSQL (migration ``0005_recording_search``); :class:`FullText` is the small
interface between them. Queries match whole words, in the order given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from sqlalchemy import column, delete, func, table, text
from sqlmodel import col, select

from ...db.models.search import SearchEntry
from ...db.models.sessions import RemoteSession
from ...errors import InvalidInput
from .commandlog import REDACTED, CommandEntry
from .search_text import MAX_QUERY_WORDS, OutputChunk, snippet, words

if TYPE_CHECKING:
    from sqlmodel.ext.asyncio.session import AsyncSession

    from ...db.engine import Database
    from ...pagination import Page
    from ..identity.identity import Caller
    from ..settings import Settings
    from .session_history import SessionFilter

log = logging.getLogger("hostgate.search")

INDEX_OUTPUT = "recordings.index_output"
KINDS = ("command", "output")
QUERY_MAX = 200
DELETE_BATCH = 500


@dataclass(frozen=True)
class SearchHit:
    """Where a query matched: the session, the kind of entry, its offset and a snippet."""

    session: RemoteSession
    kind: str
    offset_ms: int
    snippet: str


class FullText(Protocol):
    """What one database engine adds to a search: its source of rows and its match."""

    def source(self) -> Any:
        """The FROM clause the matching ``recording_search`` rows come from."""

    def match(self, query_words: Sequence[str]) -> Any:
        """The WHERE clause that keeps entries containing the words in this order."""


_FTS = table("recording_search_fts", column("rowid"), column("recording_search_fts"))


class SqliteFullText:
    """FTS5: a phrase query on the external-content table ``recording_search_fts``."""

    def source(self) -> Any:
        """The FTS5 table joined to ``recording_search`` by rowid."""
        return _FTS.join(SearchEntry, col(SearchEntry.id) == _FTS.c.rowid)

    def match(self, query_words: Sequence[str]) -> Any:
        """``MATCH`` a phrase of the words."""
        phrase = '"' + " ".join(query_words) + '"'
        return text("recording_search_fts MATCH :phrase").bindparams(phrase=phrase)


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
    found = words(query, limit=MAX_QUERY_WORDS + 1)
    if not found:
        raise InvalidInput("q must contain a letter or a digit", code="invalid_query")
    if len(found) > MAX_QUERY_WORDS:
        raise InvalidInput(f"q may hold at most {MAX_QUERY_WORDS} words", code="invalid_query")
    return found


class RecordingSearch:
    """Writes index entries, follows ``recordings.index_output``, answers searches."""

    def __init__(self, *, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.full_text = full_text_for(db.dialect)
        self._output_was_on: bool | None = None

    def output_enabled(self) -> bool:
        """``recordings.index_output``."""
        return bool(self.settings.get(INDEX_OUTPUT))

    # -- writing ------------------------------------------------------------------------

    @staticmethod
    def command_entry(session_id: str, entry: CommandEntry) -> SearchEntry | None:
        """The index entry of a logged command (none for what was typed at a password prompt)."""
        if entry.command == REDACTED or not entry.command.strip():
            return None
        return SearchEntry(
            session_id=session_id, kind="command", offset_ms=entry.elapsed, text=entry.command
        )

    def output_entries(self, session_id: str, chunks: Iterable[OutputChunk]) -> list[SearchEntry]:
        """The index entries of output chunks; none while output indexing is off."""
        if not self.output_enabled():
            return []
        return [
            SearchEntry(session_id=session_id, kind="output", offset_ms=c.offset_ms, text=c.text)
            for c in chunks
        ]

    async def follow_setting(self) -> int:
        """Once output indexing is off (also at start), purge the indexed output; the count."""
        on = self.output_enabled()
        was, self._output_was_on = self._output_was_on, on
        if on or was is False:
            return 0
        return await self.purge_output()

    async def purge_output(self) -> int:
        """Delete every output entry (commands stay); how many there were."""
        async with self.db.session() as session:
            purge = delete(SearchEntry).where(col(SearchEntry.kind) == "output")
            result = await session.exec(purge)
            await session.commit()
        count = int(getattr(result, "rowcount", 0) or 0)
        if count:
            log.info("output indexing is off: removed %d indexed output chunk(s)", count)
        return count

    @staticmethod
    async def forget(session: AsyncSession, session_ids: Sequence[str]) -> None:
        """Delete the entries of these sessions in ``session`` (not committed)."""
        for start in range(0, len(session_ids), DELETE_BATCH):
            chunk = session_ids[start : start + DELETE_BATCH]
            await session.exec(delete(SearchEntry).where(col(SearchEntry.session_id).in_(chunk)))

    # -- searching ----------------------------------------------------------------------

    async def search(
        self,
        caller: Caller,
        query: str,
        page: Page,
        flt: SessionFilter,
        *,
        kind: str = "",
        visible_to_all: bool,
    ) -> tuple[list[SearchHit], int]:
        """Hits newest session first, then by offset, and how many there are.

        ``visible_to_all``: the caller may see every user's sessions; otherwise only
        their own sessions are searched.
        """
        found = query_words(query)
        where = [self.full_text.match(found), *flt.conditions()]
        if kind:
            if kind not in KINDS:
                raise InvalidInput("kind must be command or output", code="invalid_query")
            where.append(col(SearchEntry.kind) == kind)
        if not visible_to_all:
            where.append(col(RemoteSession.user_id) == caller.user_id)
        statement = (
            select(SearchEntry, RemoteSession, func.count().over().label("total"))
            .select_from(self.full_text.source())
            .join(RemoteSession, col(RemoteSession.id) == col(SearchEntry.session_id))
            .where(*where)
            .order_by(
                col(RemoteSession.started_at).desc(),
                col(RemoteSession.id),
                col(SearchEntry.offset_ms),
                col(SearchEntry.id),
            )
            .offset(page.offset)
            .limit(page.limit)
        )
        async with self.db.session() as session:
            rows = list((await session.exec(statement)).all())
            if rows:
                total = int(rows[0][2])
            else:
                counting = (
                    select(func.count())
                    .select_from(self.full_text.source())
                    .join(RemoteSession, col(RemoteSession.id) == col(SearchEntry.session_id))
                    .where(*where)
                )
                total = int((await session.exec(counting)).one())
        hits = [
            SearchHit(
                session=row,
                kind=entry.kind,
                offset_ms=entry.offset_ms,
                snippet=snippet(entry.text, found),
            )
            for entry, row, _ in rows
        ]
        return hits, total
