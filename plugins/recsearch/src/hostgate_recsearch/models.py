"""The pack's one table, ``recording_search``: commands and output text of sessions.

The kernel's migration 0005 made it (with its engine-specific full-text part: an
FTS5 table kept in step by triggers on SQLite, a generated ``tsvector`` column with
a GIN index on PostgreSQL) before the feature became a pack; its schema is
unchanged, and the pack maps it here.
"""

from __future__ import annotations

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, String
from sqlmodel import Field, SQLModel


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
    """For output: when parts of ``text`` appeared, ``index:ms`` pairs (``text.py``)."""
