"""Command rules: what admins block, hold for approval or flag in terminal sessions."""

from __future__ import annotations

from datetime import datetime

from sqlmodel import Field, SQLModel

from ...timefmt import utcnow
from ..types import JSONText, UTCDateTime, new_id


class CommandRule(SQLModel, table=True):
    """One rule: a pattern, an action and the sessions it applies to (empty scope = all)."""

    __tablename__ = "command_rules"

    id: str = Field(default_factory=new_id, primary_key=True, max_length=64)
    name: str = Field(max_length=200, unique=True)
    description: str = Field(default="", max_length=1000)
    enabled: bool = True
    action: str = Field(max_length=16)
    """``block``, ``approve`` or ``alert``."""
    match: str = Field(max_length=16)
    """``exact``, ``prefix``, ``glob`` or ``regex``."""
    pattern: str = Field(max_length=500)
    priority: int = 100
    """Among rules of the same action, the lowest priority number decides."""
    connection_ids: list[str] = Field(default_factory=list, sa_type=JSONText)
    group_ids: list[str] = Field(default_factory=list, sa_type=JSONText)
    tags: list[str] = Field(default_factory=list, sa_type=JSONText)
    role_ids: list[str] = Field(default_factory=list, sa_type=JSONText)
    created_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
    updated_at: datetime = Field(default_factory=utcnow, sa_type=UTCDateTime)
