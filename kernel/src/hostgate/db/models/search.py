"""The recording search index: command-log entries and terminal output text of sessions.

The engine-specific full-text part is not a model: the migration adds an FTS5
table kept in step by triggers on SQLite, and a generated ``tsvector`` column
with a GIN index on PostgreSQL (``SEARCH_OBJECTS`` names them, so schema
comparisons leave them out). See ``services/sessions/search_index.py``.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, String
from sqlmodel import Field, SQLModel

SEARCH_OBJECTS = frozenset(
    {
        "recording_search_fts",
        "recording_search_fts_data",
        "recording_search_fts_idx",
        "recording_search_fts_docsize",
        "recording_search_fts_config",
        "recording_search_fts_content",
        "recording_search_scoped",
        "ix_recording_search_document",
        "document",
    }
)
"""Tables, indexes and columns of the full-text part that only the migration knows."""

PACK_TABLES = frozenset(
    {
        "access_requests",
        "notification_channels",
        "notification_rules",
        "notification_log",
        "notification_digest_items",
    }
)
"""Tables the kernel's migrations made before their feature became a default pack: each
pack maps its tables itself (``hostgate_access.models``, ``hostgate_notifications.models``),
so the kernel's models, loaded without packs, leave them out and schema comparisons skip
them."""


class SearchEntry(SQLModel, table=True):
    """One searchable piece of a session: a command (``command``) or output text (``output``).

    ``offset_ms``: milliseconds since the session started (where the player jumps).
    ``text`` is what is matched: the command as logged, or output with escape
    sequences removed; ``marks`` (output) say when later parts of it appeared.
    """

    __tablename__ = "recording_search"
    __table_args__ = (Index("ix_recording_search_session", "session_id", "kind"),)

    id: int | None = Field(
        default=None, primary_key=True, sa_type=BigInteger().with_variant(Integer(), "sqlite")
    )
    session_id: str = Field(
        sa_column=Column(String(64), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False)
    )
    kind: str = Field(max_length=8)
    offset_ms: int = 0
    text: str = Field(max_length=4000)
    marks: str = Field(default="", max_length=2000)
    """For output: when parts of ``text`` appeared, ``index:ms`` pairs (``search_text.py``)."""


def include_in_comparison(
    obj: object, name: str | None, type_: str, reflected: bool, compare_to: object
) -> bool:
    """Alembic's ``include_object``: leave the migration-only full-text objects out.

    The tables default packs map themselves (``PACK_TABLES``) stay out too, with their
    indexes.
    """
    table = name if type_ == "table" else getattr(getattr(obj, "table", None), "name", None)
    if table in PACK_TABLES:
        return False
    return not (reflected and name in SEARCH_OBJECTS)
