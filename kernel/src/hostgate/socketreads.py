"""Bigger socket reads for hypercorn, so a streamed upload costs fewer trips through Python.

hypercorn reads at most 64 KiB per call from a connection whose asyncio
stream buffer pauses the socket above 128 KiB. A 1 GiB upload then takes
16,000 trips through h11, hypercorn's protocol objects, the ASGI queue and
the request body, and the transport is paused and resumed (two epoll
changes) on most of them. Reads of up to 256 KiB with room for 1 MiB in the
stream buffer cut the gateway's CPU per GiB uploaded by about a fifth
(``bench/files.py``); small requests read what arrived, as before.
"""

from __future__ import annotations

import asyncio
from typing import Any

import hypercorn.asyncio.tcp_server as tcp_server

READ_BYTES = 256 * 1024
"""Most bytes one read takes from a client socket (asyncio's transport reads up to this)."""
BUFFER_LIMIT = 512 * 1024
"""The stream buffer's limit; asyncio pauses the socket at twice this."""

_original_init = tcp_server.TCPServer.__init__


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
    # asyncio.start_server takes the limit only as an argument, and hypercorn
    # does not pass one; the reader keeps it in this attribute
    reader._limit = BUFFER_LIMIT  # type: ignore[attr-defined]
    _original_init(self, app, loop, config, context, state, reader, writer)


def install() -> None:
    """Make hypercorn read up to ``READ_BYTES`` at a time (idempotent)."""
    tcp_server.MAX_RECV = READ_BYTES  # type: ignore[attr-defined]
    tcp_server.TCPServer.__init__ = _init  # type: ignore[method-assign]
