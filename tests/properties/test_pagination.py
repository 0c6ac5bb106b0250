"""Pagination: page >= 1, limit 1-200 (clamped), ASCII digits only, anything else a 400,
offsets consistent."""

from __future__ import annotations

import pytest
from hostgate.errors import InvalidInput
from hostgate.pagination import DEFAULT_LIMIT, MAX_LIMIT, page_from
from hypothesis import given
from hypothesis import strategies as st

RAW = st.one_of(
    st.none(),
    st.integers(-5, 10**6).map(str),
    st.text(max_size=8),
    st.sampled_from(
        ["", " 3", "3 ", "+4", "1e3", "0x10", "٣", "2.0", "1_0", "007", "999999999", "10" * 10]
    ),
)


def _expected(raw: str | None, default: int) -> int | None:
    """The value a careful reader would take, None when it must be refused."""
    if raw is None or raw == "":
        return default
    if any(c not in "0123456789" for c in raw) or len(raw) > 9:
        return None
    value = int(raw)
    return value if value >= 1 else None


@given(page=RAW, limit=RAW)
def test_page_and_limit(page: str | None, limit: str | None) -> None:
    args = {k: v for k, v in {"page": page, "limit": limit}.items() if v is not None}
    want_page, want_limit = _expected(page, 1), _expected(limit, DEFAULT_LIMIT)
    if want_page is None or want_limit is None:
        with pytest.raises(InvalidInput):
            page_from(args)
        return
    resolved = page_from(args)
    assert resolved.page == want_page
    assert resolved.limit == min(want_limit, MAX_LIMIT)
    assert 1 <= resolved.limit <= MAX_LIMIT
    assert resolved.offset == (resolved.page - 1) * resolved.limit
    assert resolved.echo() == {"page": resolved.page, "limit": resolved.limit}


@given(st.integers(1, 10**4), st.integers(1, MAX_LIMIT))
def test_consecutive_pages_tile_without_gaps(page: int, limit: int) -> None:
    this = page_from({"page": str(page), "limit": str(limit)})
    following = page_from({"page": str(page + 1), "limit": str(limit)})
    assert following.offset == this.offset + this.limit
