"""Terminal, desktop and relay sessions: history rows, command log, recorded input events.

Rows outlive users and connections (history): ``user_id`` and ``connection_id``
carry no foreign key, and the names are copied at start.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import BigInteger, Column, ForeignKey, Index, String
from sqlmodel import Field, SQLModel

from ...timefmt import utcnow
from ..types import JSONText, Sealed, UTCDateTime, new_id


class RemoteSession(SQLModel, table=True):
    """One terminal (ssh, telnet), relay (vnc) or browser-recorded (rdp) session.

    ``recording_state``: ``none`` (not recorded), ``recording`` (being written),
    ``complete``, ``stopped`` (cut short: size cap or low disk, see
    ``recording_note``), ``damaged`` (found unreadable after a crash; the file is
    kept, ``recording_note`` says why) or ``purged`` (file removed by retention).
    ``recording_key`` is the recording's own data key, sealed under the instance key.
    ``recording_size`` counts plaintext bytes (what a download yields).
    """

    __tablename__ = "sessions"
    __table_args__ = (
        Index("ix_sessions_started", "started_at"),
        Index("ix_sessions_user_started", "user_id", "started_at"),
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    user_id: str = Field(max_length=64)
    username: str = Field(default="", max_length=200)
    connection_id: str | None = Field(default=None, max_length=64)
    connection_name: str = Field(default="", max_length=200)
    protocol: str = Field(max_length=32)
    client_ip: str = Field(default="", max_length=64)
    via: str = Field(default="", max_length=16)
    """The door the client came in by: ``""`` the browser app, ``"ssh"`` the SSH front door."""
    started_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    ended_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    end_reason: str = Field(default="", max_length=200)
    recording_state: str = Field(default="none", max_length=16)
    recording_format: str | None = Field(default=None, max_length=16)
    recording_file: str | None = Field(default=None, max_length=200)
    recording_key: str | None = Field(default=None, sa_type=Sealed)
    recording_size: int = 0
    recording_note: str = Field(default="", max_length=200)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class SessionCommand(SQLModel, table=True):
    """One command typed in a terminal session (``elapsed`` in ms since the start)."""

    __tablename__ = "session_commands"
    __table_args__ = (Index("ix_session_commands_session", "session_id", "elapsed"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    session_id: str = Field(
        sa_column=Column(String(64), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False)
    )
    timestamp: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    elapsed: int = 0
    command: str = Field(max_length=4000)
    output_preview: str | None = Field(default=None, max_length=4000)
    typed_by: list[str] | None = Field(default=None, sa_type=JSONText)
    """Who typed it when others had joined the session and could type; None: its owner."""


class SessionInputEvent(SQLModel, table=True):
    """One recorded input event of a browser-recorded (RDP) session."""

    __tablename__ = "session_input_events"
    __table_args__ = (Index("ix_session_input_events_session", "session_id", "elapsed"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    session_id: str = Field(
        sa_column=Column(String(64), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False)
    )
    elapsed: float = 0.0
    event_type: str = Field(max_length=32)


class RecordingKeyFrame(SQLModel, table=True):
    """Where a relay recording's key frame starts (ms since the start, plaintext offset)."""

    __tablename__ = "recording_keyframes"
    __table_args__ = (Index("ix_recording_keyframes_session", "session_id", "elapsed"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    session_id: str = Field(
        sa_column=Column(String(64), ForeignKey("sessions.id", ondelete="CASCADE"), nullable=False)
    )
    elapsed: float = 0.0
    offset: int = Field(sa_column=Column(BigInteger, nullable=False))
