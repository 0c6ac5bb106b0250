"""``/ws/sessions/<id>/watch``: a live view of a running terminal, or joining it.

Authenticated by a single-use ticket like every socket; the caller needs
``sessions.view_any`` (close 4003 otherwise), the session must be a terminal
open on any node (4002; one held by another node is relayed through
Redis). Server to client: a text ``{"type":"watch", ...}``
naming the session and its size, a binary frame drawing the current screen,
then binary output frames as the session produces them, and a text
``{"type":"resize","cols","rows"}`` when the watched terminal changes size.
Client frames are read and ignored: nothing reaches the watched terminal.

``?mode=observer`` or ``?mode=participant`` joins the session instead (``sessions.join``
or the owner's invitation; the hello says the ``mode``): a participant's frames are
keys for the terminal, as on the terminal socket (binary, or ``{"type":"data"}``;
resizes are the owner's), attributed to them in the command log and the recording.
The owner can remove a joiner (4003 ``terminated``). The
socket closes with 1000 when the session ends, 4001/4003 when the watch is
ended from outside (revoked login, ``DELETE /sessions/active/<watch id>``); an
``{"type":"error","message","reason"}`` frame comes before each close it makes.
docs/terminals.md has it all.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from quart import websocket

from ..closereasons import CloseReason
from ..errors import InvalidInput
from ..services.sessions.terminal_watch import WATCH, Closing, Watch, Watching
from .frames import control_message, send_error
from .gate import close_socket, opening_failed, socket_caller

if TYPE_CHECKING:
    from ..kernel import Kernel

ENDED = "The watched session ended"


async def _send_output(watch: Watching) -> None:
    await websocket.send(watch.hello())
    await websocket.send(await watch.screen())
    while True:
        frames = await watch.next()
        if frames is None:
            return
        for frame in frames:
            await websocket.send(frame.data)


async def _ignore_input() -> None:
    while True:
        await websocket.receive()  # read-only: a viewer's keys go nowhere


async def _participant_input(watch: Watch) -> None:
    """A joiner's frames: a participant's keys reach the terminal (``Watch.type``)."""
    while True:
        frame = await websocket.receive()
        if isinstance(frame, bytes):
            await watch.type(frame)
            continue
        try:
            message = control_message(frame)
        except InvalidInput as refused:
            await send_error(refused.message, CloseReason.BAD_REQUEST)  # the socket stays open
            continue
        if message is None:
            await watch.type(frame.encode())
        elif message["type"] == "data" and isinstance(message.get("data"), str):
            await watch.type(message["data"].encode())


async def serve_watch(kernel: Kernel, session_id: str) -> None:
    """Run one live-view socket from ticket to close."""
    await websocket.accept()
    try:
        caller = await socket_caller(kernel)
        mode = websocket.args.get("mode", WATCH)
        watch = await kernel.live_view.watch(caller, session_id, mode)  # refusals: opening_failed
    except Exception as error:
        closed = opening_failed(error)
        with contextlib.suppress(Exception):
            await send_error(closed.reason, closed.reason_code)
            await close_socket(closed.code, closed.reason)
        return
    sender = asyncio.create_task(_send_output(watch))
    receiver = asyncio.create_task(
        _participant_input(watch)
        if isinstance(watch, Watch) and watch.mode != WATCH
        else _ignore_input()
    )
    try:
        done, _ = await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
        if sender in done and sender.exception() is None:
            closing: Closing = watch.closing or (1000, ENDED, CloseReason.SESSION_ENDED)
            close_code, reason, reason_code = closing
            with contextlib.suppress(Exception):
                await send_error(reason, reason_code)
                await close_socket(close_code, reason)
    finally:
        kernel.live_view.stop(watch)
        for task in (sender, receiver):
            if not task.done():
                task.cancel()
