"""The one pagination helper: ``page`` >= 1 (default 1), ``limit`` 1-200 (default 25).

Both are plain ASCII digits; anything else is a 400. Every list route's query model
derives from ``FilterQuery``: a free-text filter longer than ``FILTER_MAX`` characters
(or a field's own tighter ``max_length``) is a 400, and the OpenAPI document says so
(``maxLength``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field
from typing_extensions import TypedDict

from .errors import InvalidInput

DEFAULT_LIMIT = 25
MAX_LIMIT = 200
MAX_DIGITS = 9
FILTER_MAX = 1000
"""Longest free-text query argument a list route takes (room for a comma-separated list)."""
ID_MAX = 64
"""Longest id a list route takes as a filter (``userId``, ``rule_id``...)."""
SESSION_SEARCH_MAX = 200
"""Longest ``search`` (part of a connection name or username) the session list takes."""


class Pagination(TypedDict):
    """The ``page`` and ``limit`` a response repeats back."""

    page: int
    limit: int


class FilterQuery(BaseModel):
    """Base of the list routes' query models: no string argument beyond ``FILTER_MAX``.

    The query models are checked before the view runs (``answers(query=...)``), so
    the limit holds for every filter a route declares, now and later.
    """

    model_config = ConfigDict(str_max_length=FILTER_MAX)


class PageQuery(FilterQuery):
    """``?page=&limit=`` as the OpenAPI document shows them (larger limits are clamped)."""

    page: int = Field(default=1, ge=1, le=10**MAX_DIGITS - 1)
    limit: int = Field(default=DEFAULT_LIMIT, ge=1, le=10**MAX_DIGITS - 1)


class SessionQuery(PageQuery):
    """The filters of ``GET /sessions`` (all optional, combined with AND)."""

    protocol: str = Field(default="", max_length=200, description="comma-separated protocols")
    userId: str = Field(default="", max_length=ID_MAX)  # noqa: N815 - the API's name
    search: str = Field(
        default="",
        max_length=SESSION_SEARCH_MAX,
        description="part of the connection name or username",
    )
    from_: datetime | None = Field(default=None, alias="from", description="started at or after")
    to: datetime | None = Field(default=None, description="started at or before")
    recorded: Literal["true", "false", ""] = Field(
        default="", description="only sessions with (true) or without (false) a recording"
    )
    connectionId: str = Field(default="", max_length=ID_MAX)  # noqa: N815 - the API's name


@dataclass(frozen=True)
class Page:
    """A resolved page request."""

    page: int
    limit: int

    @property
    def offset(self) -> int:
        """Rows to skip."""
        return (self.page - 1) * self.limit

    def echo(self) -> Pagination:
        """The ``page`` and ``limit`` a response repeats back."""
        return {"page": self.page, "limit": self.limit}


def _positive(name: str, raw: str | None, default: int) -> int:
    """A whole number >= 1 written in ASCII digits only.

    ``int()`` alone would also take ``" 3"``, ``"+4"``, ``"1_0"`` and non-ASCII
    digits such as ``"٣"``; more than ``MAX_DIGITS`` digits would make offsets the
    database cannot hold.
    """
    if raw is None or raw == "":
        return default
    if not (raw.isascii() and raw.isdigit() and len(raw) <= MAX_DIGITS) or int(raw) < 1:
        raise InvalidInput(f"{name} must be a whole number from 1 to {10**MAX_DIGITS - 1}")
    return int(raw)


def page_from(args: Mapping[str, str], default_limit: int = DEFAULT_LIMIT) -> Page:
    """Read ``page`` and ``limit`` from query arguments; larger limits are clamped."""
    page = _positive("page", args.get("page"), 1)
    limit = min(_positive("limit", args.get("limit"), default_limit), MAX_LIMIT)
    return Page(page=page, limit=limit)
