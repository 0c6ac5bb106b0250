"""The one place that makes and renders timestamps: UTC, ISO 8601, milliseconds."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import overload


def utcnow() -> datetime:
    """The current time as an aware UTC datetime, truncated to milliseconds."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def as_utc(value: datetime) -> datetime:
    """Treat a naive datetime as UTC; convert an aware one to UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


@overload
def iso(value: datetime) -> str: ...
@overload
def iso(value: datetime | None) -> str | None: ...
def iso(value: datetime | None) -> str | None:
    """Render ``2026-11-21T20:40:21.123Z``; None stays None."""
    if value is None:
        return None
    value = as_utc(value)
    return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"


def parse_iso(text: str) -> datetime:
    """Parse an ISO 8601 timestamp (``Z`` or offset; a date alone means midnight UTC)."""
    cleaned = text.strip()
    if cleaned.endswith(("Z", "z")):
        cleaned = cleaned[:-1] + "+00:00"
    return as_utc(datetime.fromisoformat(cleaned))
