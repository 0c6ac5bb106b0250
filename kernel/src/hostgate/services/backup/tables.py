"""Database rows in a DB-neutral form: JSON lines, each value encoded by its column's type.

A table part holds one JSON array per row, the values in the column order that
``meta.json`` lists for the table together with each column's type tag. The same
archive restores into SQLite and PostgreSQL.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import uuid
from typing import Any

from sqlalchemy import (
    JSON,
    Boolean,
    Column,
    Date,
    DateTime,
    Float,
    Integer,
    Interval,
    LargeBinary,
    MetaData,
    Numeric,
    String,
    Time,
    Uuid,
)
from sqlalchemy.types import TypeDecorator, TypeEngine

from ...db.types import JSONText

TEXT, INT, FLOAT, BOOL, JSON_TAG = "text", "int", "float", "bool", "json"
DATETIME, DATE, TIME, BYTES, DECIMAL, UUID_TAG, INTERVAL = (
    "datetime",
    "date",
    "time",
    "bytes",
    "decimal",
    "uuid",
    "interval",
)
TAGS = frozenset(
    {TEXT, INT, FLOAT, BOOL, JSON_TAG, DATETIME, DATE, TIME, BYTES, DECIMAL, UUID_TAG, INTERVAL}
)


class UnsupportedColumn(TypeError):
    """A column type the backup format has no encoding for."""


def type_tag(sa_type: TypeEngine[Any]) -> str:
    """The tag of a column type (TypeDecorators by what they store; JSONText as JSON)."""
    if isinstance(sa_type, JSONText | JSON):
        return JSON_TAG
    if isinstance(sa_type, TypeDecorator):
        impl = sa_type.impl_instance
        if isinstance(impl, DateTime):
            return DATETIME
        return type_tag(impl)
    checks: tuple[tuple[type[TypeEngine[Any]], str], ...] = (
        (Boolean, BOOL),
        (DateTime, DATETIME),
        (Date, DATE),
        (Time, TIME),
        (Interval, INTERVAL),
        (Integer, INT),
        (Float, FLOAT),
        (Numeric, DECIMAL),
        (LargeBinary, BYTES),
        (Uuid, UUID_TAG),
        (String, TEXT),
    )
    for kind, tag in checks:
        if isinstance(sa_type, kind):
            return tag
    raise UnsupportedColumn(f"column type {sa_type!r} has no backup encoding")


def describe(metadata: MetaData) -> list[dict[str, Any]]:
    """Every table in dependency order with its columns' names and type tags."""
    return [
        {"name": table.name, "columns": [[c.name, type_tag(c.type)] for c in table.columns]}
        for table in metadata.sorted_tables
    ]


def encode(tag: str, value: Any) -> Any:
    """A Python value as JSON."""
    if value is None:
        return None
    if tag in (DATETIME, DATE, TIME):
        return value.isoformat()
    if tag == BYTES:
        return base64.b64encode(bytes(value)).decode()
    if tag in (DECIMAL, UUID_TAG):
        return str(value)
    if tag == INTERVAL:
        return value.total_seconds()
    if tag == FLOAT and isinstance(value, decimal.Decimal):
        return float(value)
    return value


def encode_row(tags: list[str], row: Any) -> bytes:
    """One JSON line."""
    values = [encode(tag, value) for tag, value in zip(tags, row, strict=True)]
    return json.dumps(values, separators=(",", ":")).encode() + b"\n"


class BadValue(ValueError):
    """A value does not fit its column's tag."""


def decode(tag: str, value: Any) -> Any:
    """A JSON value back to Python, checked against its tag."""
    if value is None:
        return None
    try:
        if tag == TEXT and isinstance(value, str):
            return value
        if tag == INT and isinstance(value, int) and not isinstance(value, bool):
            return value
        if tag == BOOL and isinstance(value, bool):
            return value
        if tag == FLOAT and isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        if tag == JSON_TAG:
            return value
        if tag == DATETIME and isinstance(value, str):
            return dt.datetime.fromisoformat(value)
        if tag == DATE and isinstance(value, str):
            return dt.date.fromisoformat(value)
        if tag == TIME and isinstance(value, str):
            return dt.time.fromisoformat(value)
        if tag == BYTES and isinstance(value, str):
            return base64.b64decode(value, validate=True)
        if tag == DECIMAL and isinstance(value, str | int | float):
            return decimal.Decimal(str(value))
        if tag == UUID_TAG and isinstance(value, str):
            return uuid.UUID(value)
        if tag == INTERVAL and isinstance(value, int | float):
            return dt.timedelta(seconds=value)
    except (ValueError, TypeError, decimal.InvalidOperation):
        pass
    raise BadValue(f"{value!r:.60} is not a valid {tag} value")


def to_storage(tag: str, value: Any) -> Any:
    """A decoded value as the staging database stores it (JSON as text, naive UTC times)."""
    if value is None:
        return None
    if tag == JSON_TAG:
        return json.dumps(value, separators=(",", ":"))
    if tag == DATETIME and value.tzinfo is not None:
        return value.astimezone(dt.UTC).replace(tzinfo=None)
    return value


def python_default(column: Column[Any]) -> tuple[bool, Any]:
    """``(True, value)`` when the column has a Python-side default usable for a missing value."""
    default = column.default
    if default is None:
        return False, None
    if getattr(default, "is_scalar", False):
        return True, default.arg  # type: ignore[attr-defined]
    if getattr(default, "is_callable", False):
        return True, default.arg(None)  # type: ignore[attr-defined]
    return False, None
