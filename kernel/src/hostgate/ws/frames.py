"""The framing shared by terminal and relay sockets: parsing client frames, pumping output."""

from __future__ import annotations

import asyncio
import json
import math
from typing import Any

from quart import websocket

from ..adapters import TerminalSize
from ..services.terminal_sessions import Attachment

MAX_FRAME = 256 * 1024
MAX_DIMENSION = 1000


def control_message(text: str) -> dict[str, Any] | None:
    """A JSON control object (``{"type": ...}``), or None for raw input."""
    if not text.startswith("{"):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        return value
    return None


def _dimension(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None  # JSON's Infinity / NaN: int() would raise and end the socket
    number = int(value)
    return number if 1 <= number <= MAX_DIMENSION else None


def size_of(message: dict[str, Any]) -> TerminalSize | None:
    """The size a ``resize`` message asks for, or None when it is malformed."""
    cols, rows = _dimension(message.get("cols")), _dimension(message.get("rows"))
    if cols is None or rows is None:
        return None
    return TerminalSize(cols=cols, rows=rows)


async def send_json(message: dict[str, Any]) -> None:
    """A text frame with a JSON status or error message."""
    await websocket.send(json.dumps(message))


async def pump_output(attachment: Attachment) -> None:
    """Send queued output as binary frames (coalesced) until the session ends."""
    queue = attachment.queue
    while True:
        item = await queue.get()
        if item is None:
            return
        parts = [item]
        size = len(item)
        finished = False
        while size < MAX_FRAME:
            try:
                more = queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            if more is None:
                finished = True
                break
            parts.append(more)
            size += len(more)
        await websocket.send(parts[0] if len(parts) == 1 else b"".join(parts))
        if finished:
            return
