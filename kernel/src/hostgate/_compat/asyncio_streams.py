"""A ``StreamReader`` that keeps the received ``bytes`` instead of copying them.

Used where bulk data is read from a socket and handed on as it came: FTP data
connections (the ftp pack) and hypercorn's client connections (``_compat.hypercorn``).

Private names used: asyncio's ``StreamReader._wakeup_waiter``, ``_wait_for_data``,
``_waiter``, ``_maybe_resume_transport``, ``_paused``, ``_eof``, ``_limit``,
``_transport`` and ``_exception``. Guarded by ``RANGES``: outside them
``ChunkReader.supported()`` is false and callers read with asyncio's ``StreamReader``.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable
from typing import Any, SupportsIndex

from . import VersionRange, applies

RANGES = (VersionRange("python", "3.11.0", "3.12"),)
"""The versions of asyncio (the interpreter's) this reader was written and tested against."""

SMALL_CHUNK = 64 * 1024
"""Received pieces shorter than this are joined (up to the size asked for) on read."""


class ChunkReader(asyncio.StreamReader):
    """A ``StreamReader`` for bulk data that keeps the received ``bytes``.

    asyncio's reader copies every received piece into a ``bytearray`` and each
    ``read()`` copies it out again; this one queues the pieces the transport
    hands over and ``read(n)`` returns the next one as it is (split only when
    it is longer than ``n``; short pieces in a row are joined). Flow control is
    asyncio's: reading pauses above twice ``limit`` buffered bytes and resumes
    at ``limit`` or below, so memory stays bounded. Only ``read`` is offered:
    bulk data is read in pieces, never by lines.
    """

    _eof: bool
    _paused: bool
    _limit: int
    _transport: asyncio.ReadTransport | None
    _exception: BaseException | None

    @staticmethod
    def supported() -> bool:
        """Whether this asyncio is one ``ChunkReader`` was written for (and patches are on).

        Where it is not, read with ``asyncio.StreamReader`` instead.
        """
        return applies("asyncio_streams.ChunkReader", *RANGES)

    def __init__(self, limit: int, loop: asyncio.AbstractEventLoop | None = None) -> None:
        super().__init__(limit=limit, loop=loop)
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def feed_data(self, data: Iterable[SupportsIndex]) -> None:
        """Queue a received piece; pause reading above twice ``limit`` buffered bytes."""
        assert not self._eof, "feed_data after feed_eof"
        if not data:
            return
        if not isinstance(data, bytes):
            data = bytes(data)  # a view into a buffer the transport reuses
        self._chunks.append(data)
        self._size += len(data)
        self._wakeup_waiter()  # type: ignore[attr-defined]
        transport = self._transport
        if transport is not None and not self._paused and self._size > 2 * self._limit:
            try:
                transport.pause_reading()
            except NotImplementedError:
                self._transport = None
            else:
                self._paused = True

    def _maybe_resume_transport(self) -> None:
        if self._paused and self._size <= self._limit and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()

    def at_eof(self) -> bool:
        """True once the connection ended and every piece was read."""
        return self._eof and not self._chunks

    @property
    def reading_paused(self) -> bool:
        """Whether this reader paused its transport's reading (too much buffered)."""
        return self._paused

    @property
    def waiting(self) -> bool:
        """Whether a ``read()`` is waiting for the next piece."""
        return self._waiter is not None  # type: ignore[attr-defined]

    async def read(self, n: int = -1) -> bytes:
        """The next received piece, at most ``n`` bytes (all buffered ones for ``n < 0``)."""
        if self._exception is not None:
            raise self._exception
        if n == 0:
            return b""
        if not self._chunks and not self._eof:
            await self._wait_for_data("read")  # type: ignore[attr-defined]
        if not self._chunks:
            return b""
        chunks = self._chunks
        chunk = chunks.popleft()
        if n < 0:
            n = len(chunk) + self._size
        if len(chunk) > n:
            chunks.appendleft(chunk[n:])
            chunk = chunk[:n]
        elif len(chunk) < SMALL_CHUNK and chunks and len(chunk) + len(chunks[0]) <= n:
            parts = [chunk]
            total = len(chunk)
            while chunks and total < SMALL_CHUNK and total + len(chunks[0]) <= n:
                part = chunks.popleft()
                parts.append(part)
                total += len(part)
            chunk = b"".join(parts)
        self._size -= len(chunk)
        self._maybe_resume_transport()
        return chunk

    async def readline(self) -> bytes:
        """Not offered (see the class)."""
        raise NotImplementedError("a ChunkReader is read in pieces")

    async def readuntil(self, separator: Any = b"\n") -> bytes:
        """Not offered (see the class)."""
        raise NotImplementedError("a ChunkReader is read in pieces")

    async def readexactly(self, n: int) -> bytes:
        """Not offered (see the class)."""
        raise NotImplementedError("a ChunkReader is read in pieces")
