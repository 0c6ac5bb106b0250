"""Backup archive framing: any payload round-trips; any flipped byte or cut is detected."""

from __future__ import annotations

import dataclasses
import io

import pytest
from hostgate.errors import ApiError
from hostgate.services.backup.archive import FrameReader, FrameWriter, Header, read_header
from hostgate.services.backup.records import (
    META,
    Begin,
    Chunk,
    End,
    Finished,
    PartSealer,
    read_parts,
)
from hypothesis import example, given
from hypothesis import strategies as st

KEY = bytes(range(32))
# Readers accept records up to the frame size plus 64 bytes of structure; the JSON records
# (part begin/end, final) are under 128 bytes, so frames from 64 bytes up (1 MiB in real
# archives) hold them all, while small data frames still split parts into many pieces.
FRAMES = st.integers(64, 300)
PAYLOADS = st.lists(
    st.tuples(st.from_regex(r"[a-z]{1,8}\.bin", fullmatch=True), st.binary(max_size=600)),
    max_size=4,
    unique_by=lambda part: part[0],
)


def archive(parts: list[tuple[str, bytes]], frame: int) -> bytes:
    """A complete archive (the key is given; argon2 is not what is tested here)."""
    header = dataclasses.replace(Header.new(), frame_plaintext=frame)
    frames = FrameWriter(header, KEY)
    sealer = PartSealer(frames)
    out = [frames.start(), *sealer.whole(META, "meta", b'{"version":1}')]
    for name, content in parts:
        out.append(sealer.begin(name, "data"))
        # written in uneven pieces, as the exporter streams files
        for start in range(0, len(content), 97):
            out.extend(sealer.data(content[start : start + 97]))
        out.append(sealer.end())
    out.extend(sealer.finish({"version": 1}))
    return b"".join(out)


def read_back(raw: bytes) -> dict[str, bytes]:
    """Every part's content; raises an ApiError when anything is off."""
    stream = io.BytesIO(raw)
    header = read_header(stream)
    contents: dict[str, bytes] = {}
    current: str | None = None
    finished = False
    for item in read_parts(FrameReader(stream, header, KEY)):
        if isinstance(item, Begin):
            current = item.name
            contents[current] = b""
        elif isinstance(item, Chunk):
            assert current is not None
            contents[current] += item.data
        elif isinstance(item, End):
            current = None
        elif isinstance(item, Finished):
            finished = True
    assert finished
    return contents


@given(parts=PAYLOADS, frame=FRAMES)
def test_any_payload_round_trips(parts: list[tuple[str, bytes]], frame: int) -> None:
    contents = read_back(archive(parts, frame))
    assert contents == {META: b'{"version":1}', **dict(parts)}


@example(parts=[], frame=64, data=None).via("regression: the reserved header byte")
@given(parts=PAYLOADS, frame=FRAMES, data=st.data())
def test_any_flipped_byte_is_detected(
    parts: list[tuple[str, bytes]], frame: int, data: st.DataObject | None
) -> None:
    raw = bytearray(archive(parts, frame))
    if data is None:
        index, mask = 63, 1
    else:
        index = data.draw(st.integers(0, len(raw) - 1), label="index")
        mask = data.draw(st.integers(1, 255), label="mask")
    raw[index] ^= mask
    with pytest.raises(ApiError) as refused:
        read_back(bytes(raw))
    assert refused.value.status in (400, 422)


@given(parts=PAYLOADS, frame=FRAMES, data=st.data())
def test_any_truncation_or_trailing_data_is_detected(
    parts: list[tuple[str, bytes]], frame: int, data: st.DataObject
) -> None:
    raw = archive(parts, frame)
    cut = data.draw(st.integers(0, len(raw) - 1), label="cut")
    with pytest.raises(ApiError):
        read_back(raw[:cut])
    extra = data.draw(st.binary(min_size=1, max_size=40), label="extra")
    with pytest.raises(ApiError):
        read_back(raw + extra)
