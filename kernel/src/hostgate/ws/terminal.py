"""``/ws/<protocol>`` for terminals (ssh, telnet): WIRE-FACTS §5.3 framing.

Client to server: text JSON ``{"type":"resize","cols","rows"}`` and
``{"type":"data","data"}``; any other frame is written raw. Server to client:
binary frames of terminal output, text JSON ``{"type":"status","message"}`` and
``{"type":"error","message","reason"}`` before every close the server makes (``reason``
a stable ``CloseReason`` code); the close code and reason say why it ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from typing import TYPE_CHECKING

from quart import websocket

from ..adapters import SessionClosed, TerminalSize
from ..closereasons import CloseReason
from ..descriptors import ProtocolSpec
from ..errors import InvalidInput
from ..services.sessions.attachment import Attachment
from ..services.sessions.interactive_terminal import TerminalSession
from ..services.sessions.remote_session import Admission
from .frames import control_message, pump_output, run_socket, send_error, send_json, size_of
from .gate import admit, close_socket, opening_failed

if TYPE_CHECKING:
    from ..kernel import Kernel

log = logging.getLogger("hostgate.ws")

FIRST_FRAME_SECONDS = 1.0
AUTH_FRAME_SECONDS = 30.0
MAX_EARLY_FRAMES = 64


async def _receive(timeout: float) -> str | bytes | None:
    try:
        return await asyncio.wait_for(websocket.receive(), timeout)
    except TimeoutError:
        return None


async def _prompted_password(admission: Admission) -> Admission:
    """Connections with ``promptOnConnect``: the first frame carries the password."""
    if not admission.target.extra.get("promptOnConnect"):
        return admission
    frame = await _receive(AUTH_FRAME_SECONDS)
    if frame is None:
        raise SessionClosed(4007, "Authentication timeout", CloseReason.AUTH_TIMEOUT)
    try:
        message = control_message(frame) if isinstance(frame, str) else None
    except InvalidInput as refused:
        raise SessionClosed(4007, refused.message, CloseReason.AUTH_TIMEOUT) from None
    password = message.get("password") if message and message["type"] == "auth" else None
    if not isinstance(password, str):
        raise SessionClosed(4007, "Expected an auth message", CloseReason.AUTH_TIMEOUT)
    target = dataclasses.replace(admission.target, password=password)
    return dataclasses.replace(admission, target=target)


def _query_size() -> TerminalSize | None:
    args = websocket.args
    try:
        return size_of({"cols": int(args["cols"]), "rows": int(args["rows"])})
    except (KeyError, ValueError):
        return None


async def _initial_size(early: list[str | bytes]) -> TerminalSize:
    """The size from the query, else the first frame when it is a resize (80x24 otherwise)."""
    size = _query_size()
    if size is not None:
        return size
    frame = await _receive(FIRST_FRAME_SECONDS)
    if frame is None:
        return TerminalSize()
    try:
        message = control_message(frame) if isinstance(frame, str) else None
    except InvalidInput:
        message = None  # handle_frame answers it once the session runs
    if message is not None and message["type"] == "resize":
        size = size_of(message)
        if size is not None:
            return size
    early.append(frame)
    return TerminalSize()


async def handle_frame(session: TerminalSession, frame: str | bytes) -> None:
    """Apply one client frame to the session."""
    if isinstance(frame, bytes):
        await session.write(frame)
        return
    try:
        message = control_message(frame)
    except InvalidInput as refused:
        await send_error(refused.message, CloseReason.BAD_REQUEST)  # the socket stays open
        return
    if message is None:
        await session.write(frame.encode())
        return
    kind = message["type"]
    if kind == "data":
        data = message.get("data")
        if isinstance(data, str):
            await session.write(data.encode())
    elif kind == "resize":
        size = size_of(message)
        if size is not None:
            await session.resize(size)


async def _receive_forever(session: TerminalSession) -> None:
    while True:
        await handle_frame(session, await websocket.receive())


async def serve_terminal(kernel: Kernel, spec: ProtocolSpec) -> None:
    """Run one terminal socket from ticket to close."""
    await websocket.accept()
    early: list[str | bytes] = []
    try:
        admission = await admit(kernel, spec, websocket.args.get("connectionId"))
        session = kernel.terminal_sessions.find_detached(admission)
        reattached = session is not None
        if session is None:
            kernel.terminal_sessions.check_caps(admission.caller)
            admission = await _prompted_password(admission)
            size = await _initial_size(early)
            session = await kernel.terminal_sessions.open_terminal(admission, size)
    except Exception as error:
        closed = opening_failed(error)
        with contextlib.suppress(Exception):
            await send_error(closed.reason, closed.reason_code)
            await close_socket(closed.code, closed.reason)
        return
    await attach_and_run(session, early, reattached=reattached)


async def attach_and_run(
    session: TerminalSession, early: list[str | bytes], *, reattached: bool
) -> None:
    """Attach this socket to the session and pump both ways until one side ends."""
    attachment = Attachment()
    session.attach(attachment)
    replay = session.replay() if reattached else b""
    try:
        await send_json({"type": "status", "message": "Reattached" if reattached else "Connected"})
        await send_json({"type": "session", "sessionId": session.id})  # what invitations name
        for notice in (session.notice, session.moderation):
            if notice is not None:
                await websocket.send(notice)
        if replay:
            await websocket.send(replay)
        for frame in early[:MAX_EARLY_FRAMES]:
            await handle_frame(session, frame)
        sender = asyncio.create_task(pump_output(attachment))
        receiver = asyncio.create_task(_receive_forever(session))
        await run_socket(attachment, sender, receiver, _close_with_error)
    finally:
        session.detach(attachment)


async def _close_with_error(code: int, reason: str, reason_code: CloseReason | None) -> None:
    await send_error(reason, reason_code)
    await close_socket(code, reason)
