"""Byte relays (``open_stream`` protocols): binary frames both ways, no JSON.

Mounted at ``/ws/<protocol>?connectionId=...`` and ``/ws/<protocol>/<connectionId>``
(the VNC form of WIRE-FACTS §5.2). The same ticket, caps, idle timeout, live
registry and audit apply as for terminals; server output is back-pressured the
same way.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING

from quart import websocket

from ..closereasons import CloseReason
from ..descriptors import ProtocolSpec
from ..services.sessions.attachment import Attachment
from ..services.sessions.relay_session import RelaySession
from .frames import pump_output, run_socket
from .gate import admit, close_socket, opening_failed

if TYPE_CHECKING:
    from ..kernel import Kernel


async def _receive_forever(session: RelaySession) -> None:
    while True:
        frame = await websocket.receive()
        await session.write(frame.encode() if isinstance(frame, str) else frame)


async def serve_relay(kernel: Kernel, spec: ProtocolSpec, connection_id: str | None) -> None:
    """Run one relay socket from ticket to close."""
    await websocket.accept()
    try:
        admission = await admit(kernel, spec, connection_id or websocket.args.get("connectionId"))
        session: RelaySession = await kernel.terminal_sessions.open_relay(admission)
    except Exception as error:
        closed = opening_failed(error)
        with contextlib.suppress(Exception):
            await close_socket(closed.code, closed.reason)
        return
    attachment = Attachment()
    session.attach(attachment)
    try:
        sender = asyncio.create_task(pump_output(attachment))
        receiver = asyncio.create_task(_receive_forever(session))
        await run_socket(attachment, sender, receiver, _close)
    finally:
        session.detach(attachment)


async def _close(code: int, reason: str, reason_code: CloseReason | None) -> None:
    await close_socket(code, reason)  # a relay's frames are the protocol's: no error frame
