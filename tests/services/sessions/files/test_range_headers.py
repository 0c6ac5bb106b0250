"""The one Range parser, on every ranged route: any header answers 200, 206 or 416.

``Range`` reaches ``hostgate.api.ranges`` from the file downloads and the recordings;
whatever bytes a client sends there, neither route answers 5xx. A position is ASCII
digits (``²`` is not one) and a very long one lies past any body.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hostgate.api.ranges import MAX_DIGITS, RangeNotSatisfiable, requested_range
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.services.sessions.files import memfs
from tests.services.sessions.files.conftest import url


@pytest.fixture
def plugins() -> list[object]:
    """The in-memory files protocol, and RDP for a recording uploaded over HTTP."""
    from hostgate_rdp import plugin as rdp

    return [memfs, rdp]


SIZE = 1000
CONTENT = os.urandom(SIZE)


def _header(raw: bytes) -> str:
    """Header bytes as the server reads them (latin-1); line breaks cannot reach it."""
    return raw.replace(b"\r", b"").replace(b"\n", b"").replace(b"\x00", b"").decode("latin-1")


HEADERS = st.one_of(
    st.binary(max_size=60).map(_header),
    st.builds(
        lambda unit, first, last: f"{unit}={first}-{last}",
        st.sampled_from(["bytes", "BYTES", " bytes ", "items", "byte"]),
        st.one_of(st.just(""), st.integers(0, 2 * SIZE).map(str), st.text(max_size=6)),
        st.one_of(st.just(""), st.integers(0, 2 * SIZE).map(str), st.text(max_size=6)),
    ),
    st.integers(1, 6000).map(lambda n: f"bytes=0-{'9' * n}"),
    st.integers(1, 6000).map(lambda n: f"bytes={'9' * n}-"),
    st.integers(1, 6000).map(lambda n: f"bytes=-{'9' * n}"),
)
ODD_HEADERS = [
    "bytes=²-",
    "bytes=0-²",
    "bytes=-²",
    "bytes=٣-",
    f"bytes=0-{'9' * 5000}",
    f"bytes={'9' * 5000}-",
    f"bytes=-{'9' * 5000}",
    f"bytes=0-{'0' * 5000}5",
]


@pytest.mark.parametrize("header", ODD_HEADERS)
def test_positions_are_ascii_digits_and_long_ones_lie_past_the_end(header: str) -> None:
    first, _, last = header.removeprefix("bytes=").partition("-")
    if not (first + last).isascii():
        assert requested_range(header, SIZE) is None  # malformed: the whole body
    elif len(first) > MAX_DIGITS:
        with pytest.raises(RangeNotSatisfiable):
            requested_range(header, SIZE)
    elif not first:
        assert requested_range(header, SIZE) == (0, SIZE)  # a suffix longer than the body
    else:
        digits = last.lstrip("0") or "0"
        end = SIZE - 1 if len(digits) > MAX_DIGITS else min(int(digits), SIZE - 1)
        assert requested_range(header, SIZE) == (0, end + 1)


async def _recording(client: Any, user: Any, make_connection: Any) -> str:
    connection = await make_connection(user, "rdp", "127.0.0.1", 3389, name="desktop")
    created = await client.post(
        "/api/v1/sessions/rdp-session", json={"connectionId": connection.id}, headers=user.headers
    )
    assert created.status_code == 200, await created.get_data()
    recording = f"/api/v1/sessions/{(await created.get_json())['sessionId']}/recording"
    stored = await client.post(f"{recording}/chunk", data=CONTENT, headers=user.headers)
    assert stored.status_code == 200, await stored.get_data()
    return recording


async def _download(client: Any, user: Any, connection: Any) -> str:
    stored = await client.post(
        url(connection, "upload"), query_string={"path": "/r"}, data=CONTENT, headers=user.headers
    )
    assert stored.status_code == 200, await stored.get_data()
    return url(connection, "download") + "?path=%2Fr"


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(route=st.sampled_from(["recording", "download"]), header=HEADERS)
@example(route="recording", header="bytes=²-")
@example(route="download", header="bytes=²-")
@example(route="recording", header=f"bytes=0-{'9' * 5000}")
@example(route="download", header=f"bytes=0-{'9' * 5000}")
async def test_every_ranged_route_answers_200_206_or_416(
    client: Any, owner: Any, memconn: Any, make_connection: Any, route: str, header: str
) -> None:
    if route == "recording":
        target = await _recording(client, owner, make_connection)
    else:
        target = await _download(client, owner, memconn)
    response = await client.get(target, headers={**owner.headers, "Range": header})
    assert response.status_code in (200, 206, 416), (header, await response.get_data())
    body = await response.get_data()
    if response.status_code == 200:
        assert body == CONTENT
    elif response.status_code == 206:
        first, _, last = response.headers["Content-Range"].split()[1].split("/")[0].partition("-")
        assert body == CONTENT[int(first) : int(last) + 1]
    else:
        assert response.headers["Content-Range"] == f"bytes */{SIZE}"
        assert (await response.get_json())["code"] == "range_not_satisfiable"
