"""Stored connections, groups, shares and remembered host keys."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Column, ForeignKey, String, UniqueConstraint
from sqlmodel import Field, SQLModel

from ...timefmt import utcnow
from ..types import JSONText, Sealed, UTCDateTime, new_id


class ConnectionGroup(SQLModel, table=True):
    """A folder of connections, owned by one user, nested by ``parent_id``."""

    __tablename__ = "connection_groups"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    owner_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    name: str = Field(max_length=200)
    parent_id: str | None = Field(
        default=None,
        sa_column=Column(String(64), ForeignKey("connection_groups.id", ondelete="SET NULL")),
    )
    sort_order: int = 0
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class Connection(SQLModel, table=True):
    """A stored connection; secrets are sealed envelopes, never returned."""

    __tablename__ = "connections"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    owner_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    group_id: str | None = Field(
        default=None,
        sa_column=Column(String(64), ForeignKey("connection_groups.id", ondelete="SET NULL")),
    )
    name: str = Field(max_length=200)
    protocol: str = Field(max_length=32)
    host: str = Field(max_length=255)
    port: int
    username: str = Field(default="", max_length=255)
    password: str | None = Field(default=None, sa_type=Sealed)
    private_key: str | None = Field(default=None, sa_type=Sealed)
    extra_config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONText)
    extra_secrets: str | None = Field(default=None, sa_type=Sealed)
    tags: list[str] = Field(default_factory=list, sa_type=JSONText)
    shared: bool = False
    skip_cert_validation: bool = False
    recording_enabled: bool = True
    approval_required: bool = False
    moderation: str = Field(default="none", max_length=16)
    """``required``: a terminal session waits for a moderator (``sessions.moderate``)."""
    actions: dict[str, Any] = Field(default_factory=dict, sa_type=JSONText)
    """Per-action switches (``hostgate.rights``); a missing key is allowed."""
    jump_host_id: str | None = Field(
        default=None,
        sa_column=Column(String(64), ForeignKey("connections.id", ondelete="SET NULL"), index=True),
    )
    sort_order: int = 0
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class ConnectionShare(SQLModel, table=True):
    """Access to a connection granted to a user or to everyone with a role."""

    __tablename__ = "connection_shares"
    __table_args__ = (UniqueConstraint("connection_id", "share_type", "target_id"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    connection_id: str = Field(
        sa_column=Column(
            String(64),
            ForeignKey("connections.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        )
    )
    share_type: str = Field(max_length=16)
    target_id: str = Field(max_length=64, index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class HostKey(SQLModel, table=True):
    """An SSH host key seen for a connection: ``trusted`` or ``pending`` (changed)."""

    __tablename__ = "host_keys"
    __table_args__ = (UniqueConstraint("connection_id", "state"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    connection_id: str = Field(
        sa_column=Column(
            String(64),
            ForeignKey("connections.id", ondelete="CASCADE"),
            nullable=False,
            index=True,
        )
    )
    state: str = Field(max_length=16)
    algorithm: str = Field(max_length=64)
    fingerprint: str = Field(max_length=128)
    public_key: str = Field()
    seen_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
