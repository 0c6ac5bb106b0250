"""The kernel's StreamRecorder (relay recordings): framing, key frame index, caps."""

from __future__ import annotations

import asyncio
import time

from hostgate import StreamRecorder
from hostgate.services.sessions import stream_recording
from hostgate.services.sessions.recording_format import RecordingReader, RecordingWriter, new_key
from hostgate.services.sessions.stream_recording import (
    CHANNEL_CLIENT,
    CHANNEL_SERVER,
    CHANNEL_SYNC,
    StreamRecording,
    iter_records,
    parse_header,
)


def read_back(path, key) -> bytes:
    with RecordingReader(path, key) as reader:
        return b"".join(reader.chunks())


async def test_records_key_frames_and_events_round_trip(tmp_path):
    key = new_key()
    path = tmp_path / "one.rfb"
    recording = StreamRecording(
        RecordingWriter(path, key), started=time.monotonic(), meta={"protocol": "vnc"}, limit=None
    )
    recorder: StreamRecorder = recording  # the kernel's object satisfies the pack contract
    recording.start()
    assert recorder.sync(b"init") is not None
    recorder.server(b"A" * 70_000)  # more than one encrypted chunk
    recorder.client(b"\x05\x01\x00\x0a\x00\x14")
    recorder.input_event("click")
    offset = recorder.sync(b"again")
    assert offset is not None
    recorder.key_frame(offset)
    recorder.key_frame(offset - 1)  # not a sync record: ignored
    recorder.server(b"B")
    frames, events = recording.drain_marks()
    assert [frame[0] for frame in frames] == [offset]
    assert [kind for _, kind in events] == ["click"]
    assert await recording.close() == ("complete", recording.size, "")

    data = read_back(path, key)
    assert len(data) == recording.size
    meta, start = parse_header(data)
    assert meta == {"protocol": "vnc"}
    records = list(iter_records(data, start))
    assert [(r.channel, len(r.data)) for r in records] == [
        (CHANNEL_SYNC, 4),
        (CHANNEL_SERVER, 70_000),
        (CHANNEL_CLIENT, 6),
        (CHANNEL_SYNC, 5),
        (CHANNEL_SERVER, 1),
    ]
    assert records[3].offset == offset
    # a seek: the records from the key frame's offset on, read alone
    assert [r.data for r in iter_records(data[offset:], 0)] == [b"again", b"B"]


async def test_the_size_cap_stops_recording_and_keeps_what_fits(tmp_path):
    key = new_key()
    path = tmp_path / "capped.rfb"
    recording = StreamRecording(
        RecordingWriter(path, key), started=time.monotonic(), meta={}, limit=1000
    )
    recording.start()
    recording.sync(b"init")
    recording.server(b"x" * 500)
    recording.server(b"y" * 500)  # over the cap: dropped, and the recording stops
    assert not recording.active
    recording.server(b"z")
    recording.input_event("key")
    assert recording.drain_marks() == ([], [])
    state, size, note = await recording.close()
    assert (state, note) == ("stopped", "size_limit")
    assert size <= 1000
    data = read_back(path, key)
    _, start = parse_header(data)
    assert [r.data[:1] for r in iter_records(data, start)] == [b"i", b"x"]


async def test_a_writer_that_falls_behind_stops_the_recording_not_the_caller(tmp_path, monkeypatch):
    monkeypatch.setattr(stream_recording, "MAX_BEHIND", 4096)
    key = new_key()
    recording = StreamRecording(
        RecordingWriter(tmp_path / "slow.rfb", key), started=time.monotonic(), meta={}, limit=None
    )
    # the writer task has not run yet: every append queues
    for _ in range(10):
        recording.server(b"q" * 1000)
    assert recording.stopped == "behind"
    recording.start()
    await asyncio.sleep(0)
    state, _, note = await recording.close()
    assert (state, note) == ("stopped", "behind")
