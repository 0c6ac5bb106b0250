"""A byte-level view of a relay socket for tests: exact reads and the close code."""

from __future__ import annotations

import asyncio
from typing import Any

from quart.testing.connections import WebsocketDisconnectError

STEP = 10.0


class Frames:
    """Frames received from a test socket: binary ones appended to ``buffer``, text kept."""

    def __init__(self, socket: Any) -> None:
        self.socket = socket
        self.buffer = bytearray()
        self.closed: int | None = None
        self.text_frames: list[str] = []

    async def pump(self, timeout: float = STEP) -> bool:
        """Receive one frame (or time out); False once the socket closed."""
        if self.closed is not None:
            return False
        try:
            frame = await asyncio.wait_for(self.socket.receive(), timeout)
        except TimeoutError:
            return True
        except WebsocketDisconnectError as closed:
            self.closed = closed.args[0] if closed.args else 1000
            return False
        if isinstance(frame, bytes):
            self.buffer += frame
        else:
            self.text_frames.append(frame)
        return True

    async def until_closed(self, timeout: float = STEP) -> int:
        """Receive until the server closes; the close code."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while await self.pump(max(0.01, deadline - loop.time())):
            if loop.time() > deadline:
                raise AssertionError(f"socket did not close; got {bytes(self.buffer[-400:])!r}")
        assert self.closed is not None
        return self.closed


class Wire(Frames):
    """Binary frames received so far, read back by byte counts."""

    async def read(self, count: int, timeout: float = STEP) -> bytes:
        """Exactly ``count`` bytes."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(self.buffer) < count:
            left = deadline - loop.time()
            if left <= 0 or not await self.pump(left):
                raise AssertionError(
                    f"wanted {count} bytes, got {bytes(self.buffer)!r} (closed: {self.closed})"
                )
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    async def send(self, data: bytes) -> None:
        await self.socket.send(data)
