"""``/ws/events``: the open app's live nudges (``services/events.py``).

Authenticated by a single-use ticket like every socket. Server to client: a text
``{"type":"ready"}`` once subscribed, then ``{"type":"changed","topic":"access-requests"}``
whenever something of that topic changed for this user (the page fetches it again from
the API). Client frames are read and ignored. The socket closes with 4001 (after an
``error`` frame) when its login session ends; the app opens a new one with a new ticket.
docs/connections.md ("Live updates") has it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from quart import websocket

from ..closereasons import CloseReason
from .frames import send_error, send_json
from .gate import close_socket, opening_failed, socket_caller

if TYPE_CHECKING:
    from ..kernel import Kernel
    from ..services.events import Listener

LOGIN_CHECK_SECONDS = 30.0
"""How often an open socket checks that its login session still stands."""


async def _send_nudges(kernel: Kernel, listener: Listener, login_session_id: str | None) -> None:
    await send_json({"type": "ready"})
    while True:
        try:
            topics = await asyncio.wait_for(listener.next(), LOGIN_CHECK_SECONDS)
        except TimeoutError:
            if login_session_id and not await kernel.identity.check_login_session(login_session_id):
                return
            continue
        for topic in topics:
            await send_json({"type": "changed", "topic": topic})


async def _ignore_input() -> None:
    while True:
        await websocket.receive()


async def serve_events(kernel: Kernel) -> None:
    """Run one events socket from ticket to close."""
    await websocket.accept()
    try:
        caller = await socket_caller(kernel)
    except Exception as error:
        closed = opening_failed(error)
        with contextlib.suppress(Exception):
            await send_error(closed.reason, closed.reason_code)
            await close_socket(closed.code, closed.reason)
        return
    listener = kernel.events.listen(caller)
    sender = asyncio.create_task(_send_nudges(kernel, listener, caller.login_session_id))
    receiver = asyncio.create_task(_ignore_input())
    try:
        done, _ = await asyncio.wait({sender, receiver}, return_when=asyncio.FIRST_COMPLETED)
        if sender in done and sender.exception() is None:
            with contextlib.suppress(Exception):
                await send_error("Session has been revoked", CloseReason.REVOKED)
                await close_socket(4001, "Session has been revoked")
    finally:
        kernel.events.stop(listener)
        for task in (sender, receiver):
            if not task.done():
                task.cancel()
