"""Helpers for terminal socket tests."""

from __future__ import annotations

import asyncio
import json
from typing import Any
from urllib.parse import urlencode

from testsupport.wire import STEP, Frames


def ticket_for(kernel: Any, user: Any) -> str:
    """A WebSocket ticket bound to the user's test session (the in-memory store's)."""
    sid = kernel.identity.decode(user.token, "session")["sid"]
    return kernel.tickets.issue_sync(user.id, sid)


def socket_path(protocol: str, ticket: str | None, connection_id: str | None, **extra: Any) -> str:
    query: dict[str, Any] = {}
    if ticket is not None:
        query["ticket"] = ticket
    if connection_id is not None:
        query["connectionId"] = connection_id
    query.update({k: v for k, v in extra.items() if v is not None})
    return f"/ws/{protocol}?{urlencode(query)}"


class Screen(Frames):
    """What a test socket has received: output bytes, JSON messages, the close code."""

    @property
    def output(self) -> bytearray:
        """Every output byte so far."""
        return self.buffer

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The JSON messages so far."""
        return [json.loads(frame) for frame in self.text_frames]

    async def until(self, text: str | bytes, timeout: float = STEP) -> bytes:
        """Receive until the output contains ``text``."""
        wanted = text.encode() if isinstance(text, str) else text
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while wanted not in self.output:
            left = deadline - loop.time()
            if left <= 0 or not await self.pump(left):
                raise AssertionError(f"{wanted!r} not seen; got {bytes(self.output[-400:])!r}")
        return bytes(self.output)

    async def send(self, data: str) -> None:
        await self.socket.send(json.dumps({"type": "data", "data": data}))

    async def resize(self, cols: int, rows: int) -> None:
        await self.socket.send(json.dumps({"type": "resize", "cols": cols, "rows": rows}))

    async def run(self, command: str, marker: str, timeout: float = STEP) -> bytes:
        """Type a command and wait for ``marker`` in the output."""
        await self.send(command + "\r")
        return await self.until(marker, timeout)

    async def prompt(self, prompt: bytes = b"$ ", timeout: float = STEP) -> None:
        """Wait until the output rests on the shell prompt (nothing typed ahead)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while not self.output.endswith(prompt):
            left = deadline - loop.time()
            if left <= 0 or not await self.pump(left):
                raise AssertionError(f"no prompt; got {bytes(self.output[-400:])!r}")

    async def step(self, command: str, marker: str, timeout: float = STEP) -> bytes:
        """Run a command at a quiet prompt, wait for ``marker`` and the next prompt."""
        start = len(self.output)
        await self.send(command + "\r")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        wanted = marker.encode()
        while wanted not in self.output[start:]:
            left = deadline - loop.time()
            if left <= 0 or not await self.pump(left):
                raise AssertionError(f"{wanted!r} not seen; got {bytes(self.output[-400:])!r}")
        await self.prompt(timeout=max(0.1, deadline - loop.time()))
        return bytes(self.output[start:])
