"""The audit log: append-only, hash-chained."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Index, Integer
from sqlmodel import Field, SQLModel

from ...timefmt import utcnow
from ..types import JSONText, UTCDateTime, new_id


class AuditEntry(SQLModel, table=True):
    """One audit event; ``hash`` chains to the previous entry's ``hash`` by ``seq``."""

    __tablename__ = "audit_log"
    __table_args__ = (
        Index("ix_audit_ts", "timestamp"),
        Index("ix_audit_type_ts", "event_type", "timestamp"),
        Index("ix_audit_user_ts", "user_id", "timestamp"),
        Index("ix_audit_user_type_ts", "user_id", "event_type", "timestamp"),
    )

    seq: int | None = Field(
        default=None, primary_key=True, sa_type=BigInteger().with_variant(Integer(), "sqlite")
    )
    id: str = Field(default_factory=new_id, max_length=64, sa_column_kwargs={"unique": True})
    user_id: str | None = Field(default=None, max_length=64)
    username: str = Field(default="", max_length=200)
    display_name: str = Field(default="", max_length=200)
    event_type: str = Field(max_length=100)
    target: str = Field(default="", max_length=1000)
    details: dict[str, Any] = Field(default_factory=dict, sa_type=JSONText)
    ip_address: str = Field(default="", max_length=64)
    timestamp: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    prev_hash: str = Field(default="", max_length=64)
    hash: str = Field(default="", max_length=64)


AUDIT_COUNT_ID = 1
"""The ``id`` of the one row of ``audit_count``."""


class AuditCount(SQLModel, table=True):
    """How many entries ``audit_log`` holds: one row, kept exact by every audit write.

    ``AuditLog.atomic`` adds its entries to it in the transaction that inserts
    them, so the unfiltered page's ``total`` is one row read instead of a count
    over millions of entries. A restore recounts it (``recount_statements``).
    """

    __tablename__ = "audit_count"

    id: int = Field(
        default=AUDIT_COUNT_ID, primary_key=True, sa_column_kwargs={"autoincrement": False}
    )
    entries: int = Field(default=0, sa_type=BigInteger)
