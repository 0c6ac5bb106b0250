"""Notification channels, rules, the delivery log and the digest buffer.

The kernel's first migration made these tables before the feature became a pack; their
schema is unchanged, and the pack maps them here.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hostgate import JSONText, Sealed, UTCDateTime, new_id, utcnow
from sqlalchemy import Column, ForeignKey, Index, String
from sqlmodel import Field, SQLModel


class NotificationChannel(SQLModel, table=True):
    """A channel's stored configuration: plain fields in ``config``, secrets sealed apart."""

    __tablename__ = "notification_channels"

    type: str = Field(primary_key=True, max_length=32)
    enabled: bool = False
    config: dict[str, Any] = Field(default_factory=dict, sa_type=JSONText)
    secrets: str | None = Field(default=None, sa_type=Sealed)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class NotificationRule(SQLModel, table=True):
    """Which events notify whom: events, conditions, cadence and actions."""

    __tablename__ = "notification_rules"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    name: str = Field(max_length=200)
    enabled: bool = True
    events: list[str] = Field(default_factory=list, sa_type=JSONText)
    condition_logic: str = Field(default="and", max_length=8)
    conditions: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSONText)
    cadence: str = Field(default="instant", max_length=16)
    actions: list[dict[str, Any]] = Field(default_factory=list, sa_type=JSONText)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    last_triggered_at: datetime | None = Field(default=None, sa_type=UTCDateTime)


class NotificationLogEntry(SQLModel, table=True):
    """One delivery attempt: ``pending`` while in flight, then ``sent`` or ``failed``.

    ``payload`` holds the rendered message and the action, so a retry re-sends the
    same message. ``next_attempt_at`` is set on a failed entry while an automatic
    retry is scheduled for it.
    """

    __tablename__ = "notification_log"
    __table_args__ = (
        Index("ix_notification_log_sent_at", "sent_at"),
        Index("ix_notification_log_status", "status", "sent_at"),
        Index("ix_notification_log_rule", "rule_id", "sent_at"),
        Index("ix_notification_log_next", "next_attempt_at"),
    )

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    rule_id: str = Field(default="", max_length=64)
    rule_name: str = Field(default="", max_length=200)
    channel: str = Field(max_length=32)
    status: str = Field(default="pending", max_length=16)
    error: str | None = Field(default=None)
    payload: dict[str, Any] = Field(default_factory=dict, sa_type=JSONText)
    attempt: int = 1
    retry_of: str | None = Field(default=None, max_length=64)
    automatic_retries: bool = True
    next_attempt_at: datetime | None = Field(default=None, sa_type=UTCDateTime)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    sent_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class NotificationDigestItem(SQLModel, table=True):
    """An event waiting in an hourly or daily digest of one rule."""

    __tablename__ = "notification_digest_items"
    __table_args__ = (Index("ix_notification_digest_period", "period_end", "rule_id"),)

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    rule_id: str = Field(
        sa_column=Column(
            String(64),
            ForeignKey("notification_rules.id", ondelete="CASCADE"),
            nullable=False,
        )
    )
    cadence: str = Field(max_length=16)
    period_start: datetime = Field(sa_type=UTCDateTime)
    period_end: datetime = Field(sa_type=UTCDateTime)
    event: dict[str, Any] = Field(default_factory=dict, sa_type=JSONText)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
