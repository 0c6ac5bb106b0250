"""HTTP byte ranges for file downloads and recordings: one parser, one 416.

A single ``bytes=first-[last]`` or ``bytes=-suffix`` range is served (206);
several ranges, other units, malformed values and a stale ``If-Range`` get the
whole body (200, as RFC 9110 allows). A well-formed range the body cannot
satisfy (starting at or past its end, ``last`` before ``first``, an empty
suffix) is a 416 with ``Content-Range: bytes */size``. Positions are ASCII digits
only; one longer than ``MAX_DIGITS`` digits is read as lying past any body.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import NamedTuple

from ..errors import ApiError


class RangeNotSatisfiable(ApiError):
    """The requested byte range lies outside the body (416)."""

    status = 416
    code = "range_not_satisfiable"


MAX_DIGITS = 18
"""Digits of a position read as a number; a longer one lies past any body (10**18 B)."""
_BEYOND = 10**MAX_DIGITS
# ASCII digits only: ``str.isdigit`` takes ``²`` and other Unicode digits ``int`` refuses.
_SINGLE_RANGE = re.compile(
    r"[ \t]*bytes[ \t]*=[ \t]*(?P<first>[0-9]*)[ \t]*-[ \t]*(?P<last>[0-9]*)[ \t]*",
    re.IGNORECASE | re.ASCII,
)


def position(digits: str) -> int:
    """A byte position of ASCII digits; past ``MAX_DIGITS`` digits, a number beyond any body.

    ``int`` refuses strings over 4,300 digits, and reading a long one costs time
    that grows with its square; neither a body nor a range needs more than 18 digits.
    """
    stripped = digits.lstrip("0") or "0"
    if len(stripped) > MAX_DIGITS:
        return _BEYOND
    return int(stripped)


class ByteRange(NamedTuple):
    """Bytes ``start`` up to (not including) ``stop``."""

    start: int
    stop: int

    @property
    def length(self) -> int:
        """How many bytes."""
        return self.stop - self.start

    def content_range(self, size: int) -> str:
        """The ``Content-Range`` value for a body of ``size`` bytes."""
        return f"bytes {self.start}-{self.stop - 1}/{size}"


def requested_range(
    header: str | None,
    size: int,
    *,
    if_range: str | None = None,
    validators: Collection[str | None] = (),
) -> ByteRange | None:
    """The one range to send, None for the whole body; raises the 416.

    ``if_range`` is the request's ``If-Range``; the range applies only when it
    matches one of ``validators`` (the body's ETag or Last-Modified).
    """
    if not header:
        return None
    if if_range is not None and if_range.strip() not in set(validators) - {None}:
        return None
    match = _SINGLE_RANGE.fullmatch(header)
    if match is None:
        return None
    first, last = match.group("first"), match.group("last")
    if not (first or last):
        return None
    unsatisfiable = RangeNotSatisfiable(
        "Range not satisfiable", headers={"Content-Range": f"bytes */{size}"}
    )
    if not first:
        suffix = position(last)
        if suffix == 0 or size == 0:
            raise unsatisfiable
        return ByteRange(max(0, size - suffix), size)
    start = position(first)
    end = position(last) if last else size - 1
    if start >= size or start > end:
        raise unsatisfiable
    return ByteRange(start, min(end, size - 1) + 1)
