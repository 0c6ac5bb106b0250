"""Stored setting values (defaults live in the registry, not here)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlmodel import Field, SQLModel

from ...timefmt import utcnow
from ..types import JSONText, UTCDateTime


class SettingValue(SQLModel, table=True):
    """A setting that differs from its default; secret values hold an envelope."""

    __tablename__ = "settings"

    key: str = Field(primary_key=True, max_length=200)
    value: Any | None = Field(default=None, sa_type=JSONText, nullable=True)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)


class SystemValue(SQLModel, table=True):
    """Kernel state kept in the database (sealed signing key, known permissions)."""

    __tablename__ = "system_values"

    name: str = Field(primary_key=True, max_length=100)
    value: str = Field()
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
