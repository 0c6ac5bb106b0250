"""The encrypted chunked recording format: round trips, resume after a crash, tampering."""

from __future__ import annotations

import os

import pytest
from hostgate.services.sessions.recording_format import (
    HEADER_SIZE,
    RecordingFormatError,
    RecordingReader,
    RecordingWriter,
    new_key,
    plaintext_size,
)


def read_all(path, key, start=0, end=None):
    with RecordingReader(path, key) as reader:
        return b"".join(reader.chunks(start, end))


def test_round_trip_across_chunks(tmp_path):
    key = new_key()
    path = tmp_path / "r.cast"
    data = os.urandom(300_000)
    writer = RecordingWriter(path, key, chunk=4096)
    for offset in range(0, len(data), 7_000):
        writer.write(data[offset : offset + 7_000])
    writer.close()
    assert plaintext_size(path, key) == len(data)
    assert read_all(path, key) == data
    assert read_all(path, key, 4090, 4200) == data[4090:4201]
    assert read_all(path, key, len(data) - 3) == data[-3:]
    assert data[:5000] not in path.read_bytes()


def test_flushed_data_survives_a_crash_and_writing_resumes(tmp_path):
    key = new_key()
    path = tmp_path / "r.cast"
    writer = RecordingWriter(path, key, chunk=1024)
    writer.write(b"a" * 1500)
    writer.flush()
    writer.write(b"lost-unflushed")
    # no close: the process "crashed"; the file holds what was flushed
    assert read_all(path, key) == b"a" * 1500
    resumed = RecordingWriter(path, key)
    assert resumed.size == 1500
    resumed.write(b"b" * 1000)
    resumed.close()
    assert read_all(path, key) == b"a" * 1500 + b"b" * 1000


def test_partial_tail_is_rewritten_in_place(tmp_path):
    key = new_key()
    path = tmp_path / "r.cast"
    writer = RecordingWriter(path, key, chunk=1024)
    for _ in range(5):
        writer.write(b"x" * 100)
        writer.flush()
    writer.close()
    assert path.stat().st_size == HEADER_SIZE + 500 + 32
    assert read_all(path, key) == b"x" * 500


def test_tampering_and_wrong_keys_are_detected(tmp_path):
    key = new_key()
    path = tmp_path / "r.cast"
    writer = RecordingWriter(path, key, chunk=1024)
    writer.write(os.urandom(3000))
    writer.close()
    with pytest.raises(RecordingFormatError):
        read_all(path, new_key())
    raw = bytearray(path.read_bytes())
    raw[HEADER_SIZE + 1024 + 32 + 40] ^= 1
    path.write_bytes(bytes(raw))
    with RecordingReader(path, key) as reader:
        reader.read_chunk(0)
        with pytest.raises(RecordingFormatError):
            reader.read_chunk(1)
    (tmp_path / "plain.cast").write_bytes(b'{"version": 2}\n')
    with pytest.raises(RecordingFormatError):
        RecordingReader(tmp_path / "plain.cast", key)


def test_torn_tail_is_dropped_on_resume(tmp_path):
    key = new_key()
    path = tmp_path / "r.cast"
    writer = RecordingWriter(path, key, chunk=1024)
    writer.write(b"y" * 1024 + b"z" * 10)
    writer.close()
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size - 3)
    assert read_all(path, key) == b"y" * 1024
    resumed = RecordingWriter(path, key)
    assert resumed.size == 1024
    resumed.close()


def test_resuming_with_another_key_is_refused(tmp_path):
    path = tmp_path / "r.webm"
    writer = RecordingWriter(path, new_key(), chunk=1024)
    writer.write(b"q" * 3000)
    writer.close()
    with pytest.raises(RecordingFormatError):
        RecordingWriter(path, new_key())


def test_the_size_of_an_unreadable_recording_is_an_error_not_zero(tmp_path):
    """A damaged header or a missing file is a ``RecordingFormatError``, never a size of 0
    (which a valid empty recording also has)."""
    key = new_key()
    empty = tmp_path / "empty.cast"
    RecordingWriter(empty, key).close()
    assert plaintext_size(empty, key) == 0
    damaged = tmp_path / "damaged.cast"
    damaged.write_bytes(b"\0" * 64)
    with pytest.raises(RecordingFormatError):
        plaintext_size(damaged, key)
    with pytest.raises(RecordingFormatError):
        plaintext_size(tmp_path / "missing.cast", key)
