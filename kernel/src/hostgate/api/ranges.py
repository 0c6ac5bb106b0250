"""HTTP byte ranges for file downloads and recordings: one parser, one 416.

A single ``bytes=first-[last]`` or ``bytes=-suffix`` range is served (206);
several ranges, other units, malformed values and a stale ``If-Range`` get the
whole body (200, as RFC 9110 allows). A well-formed range the body cannot
satisfy (starting at or past its end, ``last`` before ``first``, an empty
suffix) is a 416 with ``Content-Range: bytes */size``.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import NamedTuple

from ..errors import ApiError


class RangeNotSatisfiable(ApiError):
    """The requested byte range lies outside the body (416)."""

    status = 416
    code = "range_not_satisfiable"


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
    unit, _, spec = header.partition("=")
    if unit.strip().lower() != "bytes" or "," in spec:
        return None
    first, dash, last = spec.strip().partition("-")
    first, last = first.strip(), last.strip()
    if not dash or not (first or last) or not (first or "0").isdigit():
        return None
    if last and not last.isdigit():
        return None
    unsatisfiable = RangeNotSatisfiable(
        "Range not satisfiable", headers={"Content-Range": f"bytes */{size}"}
    )
    if not first:
        suffix = int(last)
        if suffix == 0 or size == 0:
            raise unsatisfiable
        return ByteRange(max(0, size - suffix), size)
    start = int(first)
    end = int(last) if last else size - 1
    if start >= size or start > end:
        raise unsatisfiable
    return ByteRange(start, min(end, size - 1) + 1)
