"""A byte relay (VNC, RDP): the server's bytes to the socket and back."""

from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from ...adapters import Stream
from ...closereasons import CloseReason
from .remote_session import Admission, LiveRemoteSession

if TYPE_CHECKING:
    from .session_service import TerminalSessions


class RelaySession(LiveRemoteSession):
    """A byte relay (VNC, RDP): no recording, the same caps, idle and audit rules."""

    kind = "stream"

    def __init__(
        self, service: TerminalSessions, admission: Admission, session_id: str, stream: Stream
    ) -> None:
        super().__init__(service, admission, session_id)
        self.stream = stream

    def start(self) -> None:
        """Begin pumping the server's bytes."""
        self._reader = asyncio.create_task(self._read_loop(), name=f"relay-{self.id}")

    async def _read_loop(self) -> None:
        await self._pump(self.stream.read, "Connection closed", CloseReason.CONNECTION_CLOSED)

    async def write(self, data: bytes) -> None:
        """Bytes from the browser."""
        if self.ended or not data:
            return
        self.last_input = time.monotonic()
        self.bytes_in += len(data)
        await self._forward(self.stream.write, data)

    async def _close_backend(self) -> None:
        await self.stream.close()
