"""Bigger socket reads for hypercorn, so a streamed upload costs fewer trips through Python.

hypercorn reads at most 64 KiB per call from a connection whose asyncio
stream buffer pauses the socket above 128 KiB. A 1 GiB upload then takes
16,000 trips through h11, hypercorn's protocol objects, the ASGI queue and
the request body, and the transport is paused and resumed (two epoll
changes) on most of them. Reads of up to 256 KiB with room for 1 MiB in the
stream buffer cut the gateway's CPU per GiB uploaded by about a fifth
(``bench/files.py``); small requests read what arrived, as before. The
connection reads with ``ChunkReader``, which hands on the pieces the
transport delivered instead of copying each into a buffer and out again.

The body of a request with a ``Content-Length`` then passes h11 by: h11 copies
every received piece into its buffer, twice out of it (``maybe_extract_at_most``
slices before it extracts) and hypercorn once more into ``bytes``, four
copies of every uploaded byte before the view sees it. A piece that holds
only body bytes (h11's buffer empty, no more than the body still to come)
goes to the request as the very object the transport delivered; h11 is told
how much of the body it no longer has to read, and parses the end of the
body, and whatever follows it, as before.

Private names used: hypercorn's ``tcp_server.MAX_RECV``, ``TCPServer.__init__`` and
``H11Protocol.handle`` (replaced), ``H11Protocol._handle_events``; asyncio's
``StreamReaderProtocol._stream_reader``/``_stream_reader_wr``, ``StreamReader._buffer``,
``_paused``, ``_eof``, ``_limit`` and ``StreamWriter._reader``; h11's
``Connection._receive_buffer``/``_receive_buffer_closed``/``_reader`` and
``ContentLengthReader._remaining``. Guarded by ``RANGES``; outside them hypercorn
reads and parses as it ships.
"""

from __future__ import annotations

import asyncio
import weakref
from typing import Any

import h11
import hypercorn.asyncio.tcp_server as tcp_server
import hypercorn.protocol.h11 as h11_protocol
from h11._readers import ContentLengthReader
from hypercorn.events import RawData
from hypercorn.protocol.events import Body

from . import VersionRange, applies
from .asyncio_streams import RANGES as STREAM_RANGES
from .asyncio_streams import ChunkReader

RANGES = (
    VersionRange("hypercorn", "0.18.0", "0.19"),
    VersionRange("h11", "0.16.0", "0.17"),
    *STREAM_RANGES,
)
"""The versions this patch was written and tested against."""

READ_BYTES = 256 * 1024
"""Most bytes one read takes from a client socket (asyncio's transport reads up to this)."""
BUFFER_LIMIT = 512 * 1024
"""The stream buffer's limit; asyncio pauses the socket at twice this."""

_original_init = tcp_server.TCPServer.__init__
_original_handle = h11_protocol.H11Protocol.handle
_original_max_recv: int = tcp_server.MAX_RECV  # type: ignore[attr-defined]


def _keeping_chunks(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> Any:
    """A ``ChunkReader`` in place of ``reader`` on the connection (``reader`` if that fails).

    ``asyncio.start_server`` made ``reader`` before the connection existed and may
    have fed it already: what it holds moves over, in order.
    """
    protocol = writer.transport.get_protocol()
    if (
        not isinstance(protocol, asyncio.StreamReaderProtocol)
        or protocol._stream_reader is not reader  # type: ignore[attr-defined]
    ):
        return reader
    chunks = ChunkReader(limit=BUFFER_LIMIT)
    chunks.set_transport(writer.transport)
    chunks._paused = reader._paused  # type: ignore[attr-defined]  # it paused the transport
    buffered = reader._buffer  # type: ignore[attr-defined]
    if buffered:
        chunks.feed_data(bytes(buffered))
    error = reader.exception()
    if error is not None:
        chunks.set_exception(error)
    elif reader._eof:  # type: ignore[attr-defined]
        chunks.feed_eof()
    protocol._stream_reader_wr = weakref.ref(chunks)  # type: ignore[attr-defined]
    writer._reader = chunks  # type: ignore[attr-defined]
    return chunks


def _init(
    self: Any,
    app: Any,
    loop: Any,
    config: Any,
    context: Any,
    state: Any,
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
) -> None:
    # read with ChunkReader where it runs: asyncio's StreamReader copies every
    # received piece into its buffer and out again
    reader = _keeping_chunks(reader, writer)
    if not isinstance(reader, ChunkReader):
        # asyncio.start_server takes the limit only as an argument, and hypercorn
        # does not pass one; the reader keeps it in this attribute
        reader._limit = BUFFER_LIMIT  # type: ignore[attr-defined]
    _original_init(self, app, loop, config, context, state, reader, writer)


def _body_reader(protocol: Any, size: int) -> ContentLengthReader | None:
    """h11's reader of the request body, when ``size`` received bytes are all body bytes."""
    connection = protocol.connection
    if type(connection) is not h11.Connection or not isinstance(
        protocol.stream, h11_protocol.HTTPStream
    ):
        return None  # a WebSocket, or no request yet
    if (
        connection.their_state is not h11.SEND_BODY
        or connection.client_is_waiting_for_100_continue  # h11 clears it on the first body bytes
        or connection._receive_buffer  # earlier bytes come first
        or connection._receive_buffer_closed
    ):
        return None
    reader = connection._reader
    if type(reader) is not ContentLengthReader or not 0 < size <= reader._remaining:
        return None  # chunked, or the end of the body with what follows it: h11 parses
    return reader


async def _handle(self: Any, event: Any) -> None:
    if isinstance(event, RawData):
        data = event.data
        reader = _body_reader(self, len(data))
        if reader is not None:
            reader._remaining -= len(data)
            await self.stream.handle(Body(stream_id=h11_protocol.STREAM_ID, data=data))
            if reader._remaining == 0:
                await self._handle_events()  # h11 ends the body (EndOfMessage)
            return
    await _original_handle(self, event)


def install() -> bool:
    """Make hypercorn read up to ``READ_BYTES`` at a time and pass bodies by h11 (idempotent).

    Outside ``RANGES`` (or with the patches off) hypercorn's own reads run; returns
    whether the patch is in place.
    """
    if not applies("hypercorn.socketreads", *RANGES):
        tcp_server.MAX_RECV = _original_max_recv  # type: ignore[attr-defined]
        tcp_server.TCPServer.__init__ = _original_init  # type: ignore[method-assign]
        h11_protocol.H11Protocol.handle = _original_handle  # type: ignore[method-assign]
        return False
    tcp_server.MAX_RECV = READ_BYTES  # type: ignore[attr-defined]
    tcp_server.TCPServer.__init__ = _init  # type: ignore[method-assign]
    h11_protocol.H11Protocol.handle = _handle  # type: ignore[method-assign]
    return True
