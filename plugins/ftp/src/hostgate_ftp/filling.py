"""Plain data connections read into one large buffer, handed on in pieces of up to 4 MiB.

uvloop reads a plain protocol's socket 256,000 bytes at a time and copies
every read into a new ``bytes``; each piece then takes its own trip through
the file session, Quart, hypercorn, h11 and a socket send (about 4,400 trips
per GiB). A ``BufferedProtocol`` has the socket read straight into a buffer,
and what it holds is copied out once (the copy uvloop made) when the buffer
is full, when the reader is waiting for data, or at the end: the same copies,
but when the gateway is the slower side the pieces grow to ``CAPACITY`` and
the trips per GiB fall to about 260. The buffer starts at ``FIRST`` bytes and
doubles each time it fills.

Only the delivery of received bytes changes: flow control, the end of the
connection and errors go to the ``StreamReaderProtocol`` that ``open_tcp``
made (the ``StreamWriter`` waits on it), and the reader is the connection's
``ChunkReader`` as before. TLS data connections keep asyncio's path (their
transport's protocol is the TLS layer).
"""

from __future__ import annotations

import asyncio
from typing import cast

from hostgate import ChunkReader

CAPACITY = 4 * 1024 * 1024
"""Bytes the socket may read into before they are handed on (``files.READ_CHUNK`` matches)."""
FIRST = 256 * 1024
"""The buffer's first size; it doubles up to ``CAPACITY`` each time it fills (a listing or a
small file never needs the large one)."""


class FillingProtocol(asyncio.BufferedProtocol):
    """Reads into one buffer and feeds its contents to ``reader`` as ``bytes``."""

    def __init__(self, inner: asyncio.StreamReaderProtocol, reader: ChunkReader) -> None:
        self.inner = inner
        self.reader = reader
        self.view = memoryview(bytearray(FIRST))
        self.filled = 0

    def get_buffer(self, sizehint: int) -> memoryview:
        """The free part of the buffer (never empty: a full buffer is handed on at once)."""
        return self.view[self.filled :]

    def buffer_updated(self, nbytes: int) -> None:
        """Hand the bytes on when the buffer is full or the reader waits for them."""
        self.filled += nbytes
        if self.filled == len(self.view):
            self._hand_on()
            if len(self.view) < CAPACITY:  # a bulk transfer: a larger buffer
                self.view = memoryview(bytearray(min(2 * len(self.view), CAPACITY)))
        elif self.reader.waiting:
            self._hand_on()

    def _hand_on(self) -> None:
        if self.filled:
            data = bytes(self.view[: self.filled])
            self.filled = 0
            self.reader.feed_data(data)

    def eof_received(self) -> bool | None:
        """The bytes still held first, then the end as the stream protocol sees it."""
        self._hand_on()
        return self.inner.eof_received()

    def connection_lost(self, exc: Exception | None) -> None:
        """Hand on what arrived, then let the stream protocol end the reader and writer."""
        self._hand_on()
        self.inner.connection_lost(exc)

    def pause_writing(self) -> None:
        """The writer's flow control stays the stream protocol's."""
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        """See ``pause_writing``."""
        self.inner.resume_writing()


def fill_reads(writer: asyncio.StreamWriter, reader: asyncio.StreamReader) -> bool:
    """Have a plain connection's transport read through a ``FillingProtocol``.

    Returns whether it does: not with a reader other than a ``ChunkReader``, TLS
    (the transport's protocol is then the TLS layer) or a connection that has
    already ended.
    """
    transport = cast(asyncio.Transport, writer.transport)
    inner = transport.get_protocol()
    if (
        not isinstance(reader, ChunkReader)
        or type(inner) is not asyncio.StreamReaderProtocol
        or transport.get_extra_info("sslcontext") is not None
        or transport.is_closing()
        or reader.at_eof()
    ):
        return False
    paused = reader.reading_paused
    transport.pause_reading()  # restarted below so the loop reads into get_buffer()
    transport.set_protocol(FillingProtocol(inner, reader))
    if not paused:
        transport.resume_reading()
    return True
