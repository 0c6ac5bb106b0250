"""The pack's one table, ``access_requests``.

The kernel's migration 0004 made it before the feature became a pack; its schema is
unchanged, and the pack maps it here.
"""

from __future__ import annotations

from datetime import datetime

from hostgate import UTCDateTime, new_id, utcnow
from sqlalchemy import Column, ForeignKey, String
from sqlmodel import Field, SQLModel


class AccessRequest(SQLModel, table=True):
    """A user's request to use an approval-required connection for a while, and its fate.

    ``status``: ``pending``, ``approved`` (usable from ``starts_at`` to ``ends_at``),
    ``denied``, ``cancelled``, ``revoked`` (ended early) or ``expired``.
    """

    __tablename__ = "access_requests"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    user_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("users.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    connection_id: str = Field(
        sa_column=Column(
            String(64), ForeignKey("connections.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    reason: str = Field(max_length=1000)
    minutes: int
    status: str = Field(default="pending", max_length=16, index=True)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    decided_by: str | None = Field(default=None, max_length=64)
    decided_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    note: str = Field(default="", max_length=1000)
    starts_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    ends_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
