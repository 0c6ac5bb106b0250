"""The framing shared by terminal and relay sockets: parsing client frames, pumping output."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
from collections.abc import Awaitable, Callable
from typing import Any

from quart import websocket

from .. import jsoninput
from ..adapters import TerminalSize
from ..closereasons import CloseReason
from ..services.sessions.attachment import Attachment
from .gate import INTERNAL_ERROR

log = logging.getLogger("hostgate.ws")

MAX_FRAME = 256 * 1024
MAX_DIMENSION = 1000
DRAIN_SECONDS = 5.0
"""How long an ended session's last output may take to reach a slow browser."""


def control_message(text: str) -> dict[str, Any] | None:
    """A JSON control object (``{"type": ...}``), or None for raw input.

    Raises ``InvalidInput`` for JSON that ``jsoninput`` refuses (nested too deep,
    a lone surrogate): such a frame is neither a control message nor input.
    """
    if not text.startswith("{"):
        return None
    try:
        value = jsoninput.decode(text)
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


async def send_error(message: str, reason: CloseReason | None) -> None:
    """The ``error`` frame: ``message`` for people, ``reason`` the stable code (when known)."""
    frame: dict[str, Any] = {"type": "error", "message": message}
    if reason is not None:
        frame["reason"] = reason.value
    await send_json(frame)


async def pump_output(attachment: Attachment) -> None:
    """Send queued output as binary frames (coalesced), and queued text frames, until the end."""
    queue = attachment.queue
    while True:
        item = await queue.get()
        if item is None:
            return
        if isinstance(item, str):
            await websocket.send(item)
            continue
        parts = [item]
        size = len(item)
        finished = False
        text: str | None = None
        while size < MAX_FRAME:
            try:
                more = queue.get_nowait()
            except asyncio.QueueEmpty:
                break
            if more is None:
                finished = True
                break
            if isinstance(more, str):
                text = more
                break
            parts.append(more)
            size += len(more)
        await websocket.send(parts[0] if len(parts) == 1 else b"".join(parts))
        if text is not None:
            await websocket.send(text)
        if finished:
            return


async def run_socket(
    attachment: Attachment,
    sender: asyncio.Task[None],
    receiver: asyncio.Task[None],
    close: Callable[[int, str, CloseReason | None], Awaitable[None]],
) -> None:
    """Wait until the client goes away or the session ends; then close with its code.

    When the session ends, the queued output gets ``DRAIN_SECONDS`` to reach the
    browser; a browser that does not read is closed on anyway.
    """
    ended = asyncio.ensure_future(attachment.ended.wait())
    try:
        done, _ = await asyncio.wait({sender, receiver, ended}, return_when=asyncio.FIRST_COMPLETED)
        if receiver in done:
            failure = None if receiver.cancelled() else receiver.exception()
            if failure is not None:
                # a bug: say so in the log and to the browser, not with a bare close
                log.error("unhandled error in a socket's input", exc_info=failure)
                closing = close(INTERNAL_ERROR, "Internal error", None)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(closing, DRAIN_SECONDS)
            return
        if sender in done and sender.exception() is not None:
            return
        receiver.cancel()
        if not sender.done():
            await asyncio.wait({sender}, timeout=DRAIN_SECONDS)
        with contextlib.suppress(Exception):
            closing = close(attachment.code, attachment.reason, attachment.reason_code)
            await asyncio.wait_for(closing, DRAIN_SECONDS)
    finally:
        ended.cancel()
        for task in (sender, receiver):
            if not task.done():
                task.cancel()
