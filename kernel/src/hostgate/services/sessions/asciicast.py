"""asciicast v2 for terminal recordings: a JSON header, then ``[t, "o"|"r"|"m", text]`` lines."""

from __future__ import annotations

import codecs
from collections.abc import Mapping
from typing import Any

import orjson

from .recording_format import RecordingWriter

NEWLINE = b"\n"


class CastRecorder:
    """Writes one terminal session as asciicast v2 into an encrypted recording.

    Output bytes are decoded incrementally as UTF-8 (a character split across two
    reads stays whole); ``r`` events record resizes as ``"COLSxROWS"``. When the
    size cap is reached the recorder stops writing (the file stays a valid cast
    up to its last whole line) and ``stopped`` says why.
    """

    def __init__(
        self,
        writer: RecordingWriter,
        *,
        width: int,
        height: int,
        timestamp: int,
        started: float,
        title: str = "",
        env: Mapping[str, str] | None = None,
        limit: int | None = None,
    ) -> None:
        self.writer = writer
        self.started = started
        self.limit = limit
        self.stopped: str | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        header = {
            "version": 2,
            "width": width,
            "height": height,
            "timestamp": timestamp,
            "env": dict(env or {}),
        }
        if title:
            header["title"] = title
        self._emit(header)

    def _emit(self, event: Any) -> None:
        # orjson writes UTF-8 JSON straight to bytes, an order of magnitude faster than
        # the standard library's escape-then-encode on large terminal output
        if self.stopped or self.writer.closed:
            return
        data = orjson.dumps(event) + NEWLINE
        if self.limit is not None and self.writer.size + len(data) > self.limit:
            self.stopped = "size_limit"
            return
        self.writer.write(data)

    def _elapsed(self, now: float) -> float:
        return round(max(0.0, now - self.started), 6)

    def output(self, data: bytes, now: float) -> None:
        """Record terminal output."""
        text = self._decoder.decode(data)
        if text:
            self._emit([self._elapsed(now), "o", text])

    def finish(self, now: float) -> None:
        """Record what the decoder still holds (an incomplete character at the very end)."""
        text = self._decoder.decode(b"", final=True)
        if text:
            self._emit([self._elapsed(now), "o", text])

    def resize(self, cols: int, rows: int, now: float) -> None:
        """Record a window size change."""
        self._emit([self._elapsed(now), "r", f"{cols}x{rows}"])

    def marker(self, label: str, now: float) -> None:
        """Record an ``m`` (marker) event, e.g. whose keys follow in a joined session."""
        self._emit([self._elapsed(now), "m", label])

    def stop(self, reason: str) -> None:
        """Write nothing more (e.g. the disk is low)."""
        self.stopped = self.stopped or reason

    @property
    def size(self) -> int:
        """Plaintext bytes written."""
        return self.writer.size
