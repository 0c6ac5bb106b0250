"""The recent output of a terminal, kept for a socket that re-attaches and for live viewers."""

from __future__ import annotations

from collections import deque

REPLAY_BYTES = 512 * 1024
"""Output a re-attachable terminal keeps: replayed to the socket that comes back."""
RECENT_BYTES = 64 * 1024
"""Output every terminal keeps: what a live viewer's first screen is drawn from."""


class ReplayBuffer:
    """The last ``limit`` bytes of output or so, in the chunks they arrived in.

    The newest chunk is always kept whole, so the buffer may hold a little more
    than its limit.
    """

    def __init__(self) -> None:
        self._chunks: deque[bytes] = deque()
        self._size = 0

    def add(self, data: bytes, limit: int) -> None:
        """Keep ``data``, dropping the oldest chunks beyond ``limit`` bytes."""
        self._chunks.append(data)
        self._size += len(data)
        while self._size > limit and len(self._chunks) > 1:
            self._size -= len(self._chunks.popleft())

    def contents(self) -> bytes:
        """Everything kept, oldest first."""
        return b"".join(self._chunks)
