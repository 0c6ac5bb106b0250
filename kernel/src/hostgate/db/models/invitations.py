"""Invitations to join a live terminal, made by its owner (kept so every node sees them)."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from ...timefmt import utcnow
from ..types import UTCDateTime, new_id


class SessionInvitation(SQLModel, table=True):
    """One invitation: who may join whose session, how, until when; used once."""

    __tablename__ = "session_invitations"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    session_id: str = Field(index=True, max_length=64)
    owner_id: str = Field(max_length=64)
    owner_username: str = Field(max_length=200)
    user_id: str = Field(index=True, max_length=64)
    """The invited user."""
    username: str = Field(max_length=200)
    mode: str = Field(max_length=16)
    """``observer`` or ``participant``."""
    connection_name: str = Field(default="", max_length=200)
    protocol: str = Field(default="", max_length=32)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    expires_at: datetime = Field(sa_type=UTCDateTime)
    used_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    revoked_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
