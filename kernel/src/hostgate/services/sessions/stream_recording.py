"""Relay recordings (VNC): timed records of what passed, written off the relay loop.

The plaintext inside the encrypted recording file (``recording_format``)::

    header   "HGSTREAM" | version (uint16 BE, 1) | meta length (uint16 BE) | meta (UTF-8 JSON)
    record   elapsed ms (uint32 BE) | channel (uint8) | length (uint32 BE) | bytes

Channels: 0 a sync record (the state a player starts from: for VNC a ServerInit
with the current size), 1 the server's bytes, 2 the browser's input. The offset
of a sync record that starts a key frame goes into the session's key
frame index (``recording_keyframes``) once the relay has seen that what follows it
decodes alone (``key_frame``), so a seek reads from the nearest one.

Appends only add to a buffer on the event loop; one writer task per recording
encrypts and writes it in a worker thread. A writer that falls ``MAX_BEHIND``
bytes behind stops the recording (``behind``) rather than slowing the relay.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import struct
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...tasks import cancel_and_wait
from .recording_format import STORAGE_FAILED, RecordingWriter

MAGIC = b"HGSTREAM"
VERSION = 1
RECORD_HEAD = struct.Struct(">IBI")
CHANNEL_SYNC = 0
CHANNEL_SERVER = 1
CHANNEL_CLIENT = 2
MAX_BEHIND = 8 * 1024 * 1024
FLUSH_SECONDS = 1.0
MAX_META = 4096


class StreamFormatError(ValueError):
    """The plaintext is not a stream recording."""


@dataclass(frozen=True)
class StreamRecord:
    """One record of a stream recording."""

    elapsed_ms: int
    channel: int
    data: bytes
    offset: int
    """Where the record starts in the plaintext (what the key frame index holds)."""


def stream_header(meta: Mapping[str, Any]) -> bytes:
    """The header of a stream recording with its JSON ``meta``."""
    raw = json.dumps(dict(meta), separators=(",", ":")).encode()
    if len(raw) > MAX_META:
        raise StreamFormatError("stream recording meta is too large")
    return MAGIC + struct.pack(">HH", VERSION, len(raw)) + raw


def parse_header(data: bytes) -> tuple[dict[str, Any], int]:
    """The meta of a stream recording and the offset of its first record."""
    if len(data) < 12 or data[:8] != MAGIC:
        raise StreamFormatError("not a hostgate stream recording")
    version, length = struct.unpack(">HH", data[8:12])
    if version != VERSION or len(data) < 12 + length:
        raise StreamFormatError("unsupported or truncated stream recording header")
    return dict(json.loads(data[12 : 12 + length])), 12 + length


def iter_records(data: bytes, offset: int) -> Iterator[StreamRecord]:
    """The whole records in ``data`` from ``offset`` (a trailing partial record is left out)."""
    while offset + RECORD_HEAD.size <= len(data):
        elapsed, channel, length = RECORD_HEAD.unpack_from(data, offset)
        end = offset + RECORD_HEAD.size + length
        if end > len(data):
            return
        yield StreamRecord(elapsed, channel, data[offset + RECORD_HEAD.size : end], offset)
        offset = end


class StreamRecording:
    """The kernel's ``StreamRecorder``: buffers timed records, a task writes them.

    ``key_frames`` (offset, elapsed ms) and ``events`` (elapsed ms, type) collect
    what the session's tick stores (milliseconds, as every ``elapsed`` of the API).
    """

    def __init__(
        self,
        writer: RecordingWriter,
        *,
        started: float,
        meta: Mapping[str, Any],
        limit: int | None,
    ) -> None:
        self.writer = writer
        self.started = started
        self.limit = limit
        self.stopped: str | None = None
        self.key_frames: list[tuple[int, int]] = []
        """(offset, elapsed ms) of indexed sync records."""
        self.events: list[tuple[int, str]] = []
        """(elapsed ms, type): the timeline's input events."""
        self._pending = bytearray(stream_header(meta))
        self._offset = len(self._pending)
        self._last_sync: tuple[int, int] | None = None
        self._wake = asyncio.Event()
        self._closing = False
        self._task: asyncio.Task[None] | None = None

    @property
    def active(self) -> bool:
        """False once the recording has stopped (or is closing)."""
        return self.stopped is None and not self._closing

    @property
    def size(self) -> int:
        """Plaintext bytes recorded (written or still queued)."""
        return self._offset

    def start(self) -> None:
        """Start the writer task."""
        self._task = asyncio.create_task(self._run(), name="stream-recording")
        self._wake.set()

    def _elapsed_ms(self) -> int:
        return max(0, int((time.monotonic() - self.started) * 1000))

    def _append(self, channel: int, data: bytes, elapsed: int | None = None) -> int | None:
        if not self.active:
            return None
        length = RECORD_HEAD.size + len(data)
        if self.limit is not None and self._offset + length > self.limit:
            self.stop("size_limit")
            return None
        if len(self._pending) + length > MAX_BEHIND:
            self.stop("behind")
            return None
        offset = self._offset
        stamp = self._elapsed_ms() if elapsed is None else elapsed
        self._pending += RECORD_HEAD.pack(stamp, channel, len(data))
        self._pending += data
        self._offset += length
        self._wake.set()
        return offset

    def sync(self, data: bytes) -> int | None:
        """A sync record; its offset for ``key_frame`` (None once stopped)."""
        elapsed = self._elapsed_ms()
        offset = self._append(CHANNEL_SYNC, data, elapsed)
        if offset is not None:
            self._last_sync = (offset, elapsed)
        return offset

    def key_frame(self, offset: int) -> None:
        """Index the sync record at ``offset`` (the latest one) as a key frame."""
        if self._last_sync is not None and self._last_sync[0] == offset:
            self.key_frames.append(self._last_sync)

    def server(self, data: bytes) -> None:
        """The server's bytes."""
        if data:
            self._append(CHANNEL_SERVER, data)

    def client(self, data: bytes) -> None:
        """The browser's input."""
        if data:
            self._append(CHANNEL_CLIENT, data)

    def input_event(self, event_type: str) -> None:
        """A timeline event (``click``, ``key``)."""
        if self.active:
            self.events.append((self._elapsed_ms(), event_type[:32]))

    def stop(self, reason: str) -> None:
        """Record nothing more (what was queued is still written)."""
        self.stopped = self.stopped or reason

    def drain_marks(self) -> tuple[list[tuple[int, int]], list[tuple[int, str]]]:
        """Key frames and input events collected since the last call."""
        frames, self.key_frames = self.key_frames, []
        events, self.events = self.events, []
        return frames, events

    async def _run(self) -> None:
        # the only place the writer is used until close(): its calls never overlap
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), FLUSH_SECONDS)
            self._wake.clear()
            if self._pending:
                data, self._pending = self._pending, bytearray()
                await asyncio.to_thread(self._write, data)
            elif self._closing:
                return

    def _write(self, data: bytearray) -> None:
        self.writer.write(bytes(data))
        self.writer.flush()

    async def close(self) -> tuple[str, int, str]:
        """Write what is queued and close the file: (state, size, note) for the row."""
        self._closing = True
        self._wake.set()
        task = self._task
        if task is not None:
            try:
                await asyncio.wait_for(asyncio.shield(task), 30.0)
            except TimeoutError:
                await cancel_and_wait(task)
        if self._pending:
            data, self._pending = self._pending, bytearray()
            await asyncio.to_thread(self._write, data)
        await asyncio.to_thread(self.writer.close)
        if self.writer.failure:
            return "stopped", self.writer.kept_size(), STORAGE_FAILED
        if self.stopped:
            return "stopped", self.writer.size, self.stopped
        return "complete", self.writer.size, ""

    def discard(self) -> None:
        """The session never started: drop the file."""
        self._closing = True
        if self._task is not None:
            self._task.cancel()
        self.writer.discard()
