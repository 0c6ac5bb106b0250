"""Column types shared by every table."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import Dialect, Text
from sqlalchemy.types import DateTime, TypeDecorator

from ..timefmt import as_utc


def new_id() -> str:
    """A new opaque id."""
    return str(uuid.uuid4())


class UTCDateTime(TypeDecorator[datetime]):
    """Stored as naive UTC, returned as aware UTC on every engine."""

    impl = DateTime
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Convert to naive UTC for storage."""
        if value is None:
            return None
        return as_utc(value).replace(tzinfo=None)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        """Return an aware UTC datetime."""
        return None if value is None else as_utc(value)


class JSONText(TypeDecorator[Any]):
    """JSON stored as text, identical on SQLite and PostgreSQL."""

    impl = Text
    cache_ok = True

    def process_bind_param(self, value: Any, dialect: Dialect) -> str | None:
        """Serialise."""
        return None if value is None else json.dumps(value, separators=(",", ":"))

    def process_result_value(self, value: str | None, dialect: Dialect) -> Any:
        """Deserialise."""
        return None if value is None else json.loads(value)


class Sealed(TypeDecorator[str]):
    """A secret-box envelope (``hg1:<keyid>:<base64>``).

    Storage is plain text; the marker lets key rotation and backup find every
    encrypted column. Services encrypt and decrypt explicitly through the secret box.
    """

    impl = Text
    cache_ok = True
