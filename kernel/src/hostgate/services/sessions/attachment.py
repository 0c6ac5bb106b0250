"""A WebSocket's view of a live session: a bounded output queue and how the socket ended.

The queue is bounded so a slow browser makes the backend's reader wait (and the
backend pause) instead of the gateway buffering without bound.
"""

from __future__ import annotations

import asyncio

from ...closereasons import CloseReason

OUTPUT_QUEUE_CHUNKS = 8


class Attachment:
    """One WebSocket watching a session: a bounded queue of output and how it ended.

    The queue holds output (bytes) and, rarely, a text frame (str) such as the
    notice that someone is watching the session.
    """

    def __init__(self, maxsize: int = OUTPUT_QUEUE_CHUNKS) -> None:
        self.queue: asyncio.Queue[bytes | str | None] = asyncio.Queue(maxsize)
        self.finished = False
        self.ended = asyncio.Event()
        self.code = 1000
        self.reason = ""
        self.reason_code: CloseReason | None = None
        self._closer: asyncio.Task[None] | None = None
        self._notices: set[asyncio.Task[None]] = set()

    def notify(self, text: str) -> None:
        """Send a text frame after the output queued so far."""
        if self.finished:
            return
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            task = asyncio.ensure_future(self.queue.put(text))
            self._notices.add(task)
            task.add_done_callback(self._notices.discard)

    def finish(self, code: int, reason: str, reason_code: CloseReason | None = None) -> None:
        """End the socket after the queued output: the sender sees ``None`` last."""
        if self.finished:
            return
        self.finished = True
        self.code, self.reason, self.reason_code = code, reason, reason_code
        self.ended.set()
        try:
            self.queue.put_nowait(None)
        except asyncio.QueueFull:
            self._closer = asyncio.ensure_future(self.queue.put(None))

    def discard(self) -> None:
        """Drop queued output (the socket is gone) so a blocked reader moves on."""
        while True:
            try:
                self.queue.get_nowait()
            except asyncio.QueueEmpty:
                return
