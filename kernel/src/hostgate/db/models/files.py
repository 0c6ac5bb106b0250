"""File-transfer sessions and their events (SFTP, SMB, FTP activity)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, ForeignKey, Index, Integer, String, Text
from sqlmodel import Field, SQLModel

from ...timefmt import utcnow
from ..types import UTCDateTime, new_id


class FileSession(SQLModel, table=True):
    """A user's file operations on one connection, grouped.

    ``client_key`` is the browser's ``X-File-Session-Id`` (unique per user and
    connection) or null for an implicit session. User and connection names are
    copied so the history stays readable after either is deleted.
    """

    __tablename__ = "file_sessions"
    __table_args__ = (
        Index("ux_file_sessions_client", "user_id", "connection_id", "client_key", unique=True),
        Index("ix_file_sessions_started", "started_at"),
        Index("ix_file_sessions_user_started", "user_id", "started_at"),
        Index("ix_file_sessions_recent", "user_id", "connection_id", "ended_at"),
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    user_id: str = Field(max_length=64)
    username: str = Field(default="", max_length=200)
    client_key: str | None = Field(default=None, max_length=128)
    connection_id: str = Field(max_length=64)
    connection_name: str = Field(default="", max_length=200)
    protocol: str = Field(max_length=32)
    started_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    ended_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    event_count: int = 0


class FileEvent(SQLModel, table=True):
    """One successful file operation; ``detail`` is human-readable text."""

    __tablename__ = "file_events"
    __table_args__ = (Index("ix_file_events_session_seq", "session_id", "seq"),)

    seq: int | None = Field(
        default=None, primary_key=True, sa_type=BigInteger().with_variant(Integer(), "sqlite")
    )
    id: str = Field(default_factory=new_id, max_length=64, sa_column_kwargs={"unique": True})
    session_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("file_sessions.id", ondelete="CASCADE"), nullable=False
        )
    )
    timestamp: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    action: str = Field(max_length=32)
    path: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
    detail: str = Field(default="", sa_column=Column(Text, nullable=False, default=""))
