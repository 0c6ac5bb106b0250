"""The gateway's constant response headers, checked once instead of on every response.

Every response carries the same few header lines (``X-Content-Type-Options``,
``Referrer-Policy``, ``X-Frame-Options``, ``Cache-Control`` on the API, the JSON
content type, hypercorn's ``Server``). hypercorn checks and copies each header
it is given (``build_and_validate_headers``), then h11 runs two regular
expressions over each name and value and lowers the name again
(``normalize_and_validate``): about 13 k instructions per header line and
response, two thirds of a cached API request's cost over the bare endpoint's
that lies outside the app. A pair listed here was checked by those same
functions when it was listed, so it goes in as that result; any other header
(the request id, lengths, a view's own values) is checked as before, and the
response's header lines, their order and every error are unchanged.

Private names used: h11's ``_events.normalize_and_validate`` (replaced),
``_headers.Headers`` and its ``_full_items``; hypercorn's
``http_stream.build_and_validate_headers`` is replaced. Guarded by ``RANGES``;
outside them every header is checked by hypercorn and h11 as they ship.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import h11._events as h11_events
import hypercorn.protocol.http_stream as http_stream
from h11._headers import Headers

from . import VersionRange, applies

RANGES = (
    VersionRange("h11", "0.16.0", "0.17"),
    VersionRange("hypercorn", "0.18.0", "0.19"),
)
"""The versions this patch was written and tested against."""

_original_normalize = h11_events.normalize_and_validate
_original_build = http_stream.build_and_validate_headers

_checked: dict[tuple[bytes, bytes], tuple[bytes, bytes, bytes]] = {}
"""Listed pair -> h11's normalized triple (name as sent, lowered name, value)."""
_SPECIAL = (b"content-length", b"transfer-encoding")
"""Names h11 checks across lines (duplicates, framing): never listed."""


def trust(pairs: Iterable[tuple[str, str]]) -> None:
    """Check these header lines now (hypercorn's and h11's checks) and skip them later.

    Names are sent lower-case (Quart encodes them so), values as given.
    """
    for name, value in pairs:
        line = (name.lower().encode("latin1"), value.encode("latin1"))
        if line[0] in _SPECIAL:
            raise ValueError(f"{name} is checked with the other header lines")
        built = _original_build([line])
        (triple,) = _original_normalize(built)._full_items
        _checked[built[0]] = triple


def build_and_validate_headers(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[bytes, bytes]]:
    """Hypercorn's check of the app's header lines, without the listed ones."""
    lines = list(headers)
    checked = _checked
    listed = [type(line) is tuple and line in checked for line in lines]
    if all(listed):
        return lines
    others = iter(_original_build([line for line, ok in zip(lines, listed, strict=True) if not ok]))
    return [line if ok else next(others) for line, ok in zip(lines, listed, strict=True)]


def normalize_and_validate(headers: Any, _parsed: bool = False) -> Headers:
    """h11's check of header lines to send, listed ones taken as checked."""
    if _parsed or isinstance(headers, Headers):
        return _original_normalize(headers, _parsed)
    lines = list(headers)
    checked = _checked
    found = [checked.get(line) if type(line) is tuple else None for line in lines]
    if None not in found:
        return Headers(found)  # type: ignore[arg-type]
    rest = [line for line, triple in zip(lines, found, strict=True) if triple is None]
    normalized = _original_normalize(rest)._full_items
    if len(normalized) != len(rest):  # h11 merged repeated Content-Length lines
        return _original_normalize(lines)
    others = iter(normalized)
    return Headers([triple if triple is not None else next(others) for triple in found])


def install(pairs: Iterable[tuple[str, str]] = ()) -> bool:
    """Put the listed-pairs-aware checks in place, trusting ``pairs`` (idempotent).

    Outside ``RANGES`` (or with the patches off) hypercorn's and h11's own checks
    run on every header; returns whether the patch is in place.
    """
    if not applies("h11.responseheaders", *RANGES):
        http_stream.build_and_validate_headers = _original_build  # type: ignore[assignment]
        h11_events.normalize_and_validate = _original_normalize  # type: ignore[assignment]
        return False
    trust(pairs)
    http_stream.build_and_validate_headers = build_and_validate_headers  # type: ignore[assignment]
    h11_events.normalize_and_validate = normalize_and_validate  # type: ignore[assignment]
    return True
