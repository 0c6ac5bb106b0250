"""Recording files: chunk framing under Range reads, and the asciicast writer on top of it."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hostgate.services.sessions.asciicast import CastRecorder
from hostgate.services.sessions.recording_format import (
    RecordingFormatError,
    RecordingReader,
    RecordingWriter,
    new_key,
)
from hypothesis import example, given
from hypothesis import strategies as st

KEY = bytes(range(32))


def _scratch() -> Path:
    return Path(tempfile.mkdtemp(prefix="hg-prop-rec-")) / "r.cast"


def _write(path: Path, pieces: list[bytes], chunk: int, flush_every: int) -> None:
    writer = RecordingWriter(path, KEY, chunk=chunk)
    for number, piece in enumerate(pieces, 1):
        writer.write(piece)
        if number % flush_every == 0:
            writer.flush()
    writer.close()


def _read(path: Path, start: int = 0, end: int | None = None) -> bytes:
    with RecordingReader(path, KEY) as reader:
        return b"".join(reader.chunks(start, end))


@given(
    pieces=st.lists(st.binary(max_size=300), max_size=30),
    chunk=st.integers(1, 97),
    flush_every=st.integers(1, 5),
    data=st.data(),
)
def test_any_range_reads_the_slice_of_the_plaintext(
    pieces: list[bytes], chunk: int, flush_every: int, data: st.DataObject
) -> None:
    path = _scratch()
    _write(path, pieces, chunk, flush_every)
    plain = b"".join(pieces)
    with RecordingReader(path, KEY) as reader:
        assert reader.size == len(plain)
    assert _read(path) == plain
    if plain:
        start = data.draw(st.integers(0, len(plain) - 1), label="start")
        end = data.draw(st.integers(start, len(plain) + 5), label="end")
        assert _read(path, start, end) == plain[start : end + 1]


@given(
    first=st.lists(st.binary(max_size=200), max_size=10),
    second=st.lists(st.binary(max_size=200), max_size=10),
    chunk=st.integers(1, 64),
)
def test_a_reopened_writer_continues_after_the_last_flushed_byte(
    first: list[bytes], second: list[bytes], chunk: int
) -> None:
    path = _scratch()
    writer = RecordingWriter(path, KEY, chunk=chunk)
    for piece in first:
        writer.write(piece)
    writer.flush()
    # no close: as after a crash, the file holds what the last flush wrote
    writer._sink._file.close()  # type: ignore[attr-defined]
    resumed = RecordingWriter(path, KEY, chunk=chunk)
    assert resumed.size == len(b"".join(first))
    for piece in second:
        resumed.write(piece)
    resumed.close()
    assert _read(path) == b"".join(first + second)


@given(
    plain=st.binary(min_size=1, max_size=400),
    chunk=st.integers(1, 64),
    data=st.data(),
)
def test_a_flipped_byte_never_reads_back_as_other_plaintext(
    plain: bytes, chunk: int, data: st.DataObject
) -> None:
    path = _scratch()
    _write(path, [plain], chunk, 1)
    raw = bytearray(path.read_bytes())
    index = data.draw(st.integers(0, len(raw) - 1), label="index")
    raw[index] ^= data.draw(st.integers(1, 255), label="mask")
    path.write_bytes(bytes(raw))
    try:
        read = _read(path)
    except RecordingFormatError:
        return
    # a flip in a size or length field can hide a trailing partial slot, never alter bytes
    assert plain.startswith(read)


def _events(path: Path) -> tuple[dict[str, object], list[list[object]]]:
    text = _read(path).decode()
    assert text.endswith("\n")
    # lines end at "\n" only: U+2028 or U+0085 inside a JSON string are not line breaks
    lines = text[:-1].split("\n")
    header = json.loads(lines[0])
    return header, [json.loads(line) for line in lines[1:]]


@example(stream=b"euro \xe2\x82", cuts=[6], chunk=4)  # regression: a cut-off last character
@given(
    stream=st.binary(max_size=2000),
    cuts=st.lists(st.integers(0, 2000), max_size=20),
    chunk=st.integers(1, 300),
)
def test_any_output_split_anywhere_decodes_to_the_same_text(
    stream: bytes, cuts: list[int], chunk: int
) -> None:
    path = _scratch()
    writer = RecordingWriter(path, KEY, chunk=chunk)
    recorder = CastRecorder(writer, width=80, height=24, timestamp=0, started=0.0, title="t")
    bounds = sorted({0, len(stream), *(c for c in cuts if c <= len(stream))})
    for number, (start, stop) in enumerate(zip(bounds, bounds[1:], strict=False)):
        recorder.output(stream[start:stop], float(number))
        if number % 3 == 0:
            writer.flush()
    recorder.finish(float(len(bounds)))
    writer.close()
    header, events = _events(path)
    assert header["version"] == 2 and header["width"] == 80
    assert all(kind == "o" for _, kind, _ in events)
    assert "".join(str(text) for _, _, text in events) == stream.decode("utf-8", "replace")
    times = [float(str(t)) for t, _, _ in events]
    assert times == sorted(times)


@given(
    texts=st.lists(st.text(max_size=80), max_size=40),
    resizes=st.lists(st.tuples(st.integers(1, 500), st.integers(1, 500)), max_size=5),
    limit=st.integers(0, 3000),
)
def test_a_size_cap_never_leaves_a_broken_line(
    texts: list[str], resizes: list[tuple[int, int]], limit: int
) -> None:
    path = _scratch()
    writer = RecordingWriter(path, KEY, chunk=128)
    recorder = CastRecorder(
        writer, width=80, height=24, timestamp=0, started=0.0, limit=limit, env={"TERM": "x"}
    )
    for number, text in enumerate(texts):
        recorder.output(text.encode(), float(number))
        if resizes and number % 7 == 0:
            recorder.resize(*resizes[number % len(resizes)], float(number))
    writer.close()
    raw = _read(path)
    assert len(raw) <= limit
    if not raw:
        assert recorder.stopped == "size_limit"
        return
    header, events = _events(path)
    assert header["env"] == {"TERM": "x"}
    written = "".join(str(e[2]) for e in events if e[1] == "o")
    assert "".join(texts).startswith(written)
    if recorder.stopped is None:
        assert written == "".join(texts)


def test_reading_with_another_key_fails_cleanly() -> None:
    path = _scratch()
    _write(path, [b"secret output"], 8, 1)
    with pytest.raises(RecordingFormatError), RecordingReader(path, new_key()) as reader:
        b"".join(reader.chunks())
