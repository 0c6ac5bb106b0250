"""Admission to a session socket: ticket, login session, caller, connection access.

Every failure becomes a ``SessionClosed`` carrying the close code of WIRE-FACTS
§5.3: 4001 for a missing, used or expired ticket or a dead login session, 4002
for a connection that is not there (or not of this protocol), 4003 for
everything the caller may not do or the remote side refused; 1013 (Try Again
Later) when the shared state of several nodes (Redis) cannot check the ticket or
the database cannot take the session (``opening_failed``); 1011 for a bug.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from quart import g, websocket

from ..adapters import SessionClosed
from ..closereasons import CloseReason
from ..descriptors import ProtocolSpec
from ..errors import ApiError, SharedStateUnavailable, storage_error
from ..security.clientinfo import client_ip, parse_user_agent
from ..services.identity.identity import ClientInfo
from ..services.netpolicy import conceal
from ..services.sessions.remote_session import Admission, close_code_for, close_reason_for

if TYPE_CHECKING:
    from ..kernel import Kernel
    from ..principals import Caller

log = logging.getLogger("hostgate.ws")

MAX_CLIENT_SESSION_ID = 128
TRY_AGAIN_LATER = 1013
INTERNAL_ERROR = 1011


def socket_client(kernel: Kernel) -> ClientInfo:
    """Client IP (trusted proxies honoured) and User-Agent of the current WebSocket."""
    agent = websocket.headers.get("User-Agent", "")
    browser, system = parse_user_agent(agent)
    ip = client_ip(websocket.remote_addr, websocket.headers, kernel.config.trusted_proxies)
    return ClientInfo(ip_address=ip, user_agent=agent[:512], browser=browser, os=system)


async def socket_caller(kernel: Kernel) -> Caller:
    """Redeem the ``ticket`` query parameter: the caller, whose login session is live."""
    try:
        ticket = await kernel.tickets.redeem(websocket.args.get("ticket"))
    except SharedStateUnavailable as exc:
        raise SessionClosed(TRY_AGAIN_LATER, exc.message, CloseReason.UNAVAILABLE) from None
    if ticket is None:
        raise SessionClosed(4001, "Invalid or expired ticket", CloseReason.TICKET_INVALID)
    client = socket_client(kernel)
    if not await kernel.identity.check_login_session(ticket.login_session_id):
        # deleting a user ends their login sessions too: a ticket of theirs says which
        if await kernel.identity.caller_for_user(ticket.user_id, None, client) is None:
            raise SessionClosed(4001, "User not found", CloseReason.USER_DELETED)
        raise SessionClosed(4001, "Session has been revoked", CloseReason.REVOKED)
    caller = await kernel.identity.caller_for_user(ticket.user_id, ticket.login_session_id, client)
    if caller is None:
        raise SessionClosed(4001, "User not found", CloseReason.USER_DELETED)
    g.caller = caller  # the access log names the user
    return caller


async def admit(kernel: Kernel, spec: ProtocolSpec, connection_id: str | None) -> Admission:
    """Redeem the ``ticket`` query parameter and check access to the connection."""
    caller = await socket_caller(kernel)
    if not connection_id:
        raise SessionClosed(4001, "Missing connectionId", CloseReason.BAD_REQUEST)
    try:
        target = await kernel.connections.target_for(caller, connection_id, spec)
    except ApiError as exc:
        shown = conceal(caller, exc)
        raise SessionClosed(
            close_code_for(shown), shown.message[:500], close_reason_for(shown)
        ) from None
    client_session = (websocket.args.get("sessionId") or "").strip()
    if len(client_session) > MAX_CLIENT_SESSION_ID:
        raise SessionClosed(4001, "sessionId is too long", CloseReason.BAD_REQUEST)
    recording = (websocket.args.get("recording") or "").strip()
    if len(recording) > MAX_CLIENT_SESSION_ID:
        raise SessionClosed(4001, "recording is too long", CloseReason.BAD_REQUEST)
    return Admission(
        caller=caller,
        spec=spec,
        target=target,
        client_session_id=client_session or None,
        recording_id=recording or None,
    )


def opening_failed(error: Exception) -> SessionClosed:
    """How a socket closes whose opening raised ``error`` (``SessionClosed``: as it says).

    An ``ApiError`` closes as ``admit`` maps it; a busy database is 1013, try again
    later (the HTTP API's 503 ``storage_busy``); a full disk says so; anything else is
    a bug: logged with its traceback, 1011.
    """
    if isinstance(error, SessionClosed):
        return error
    if isinstance(error, ApiError):  # a refusal raised past the steps that map their own
        return SessionClosed(close_code_for(error), error.message[:500], close_reason_for(error))
    storage = storage_error(error)
    if storage is not None:
        log.warning("socket refused (%s): %s", storage.code, getattr(error, "orig", error))
        busy = CloseReason.UNAVAILABLE if storage.code == "storage_busy" else None
        return SessionClosed(TRY_AGAIN_LATER, storage.message, busy)
    log.error("unhandled error while opening a socket", exc_info=error)
    return SessionClosed(INTERNAL_ERROR, "Internal error", None)


async def close_socket(code: int, reason: str) -> None:
    """Close the accepted WebSocket with a code and a reason (trimmed to fit a frame)."""
    g.close_code = code  # for the access log
    encoded = reason.encode()[:123]
    await websocket.close(code, encoded.decode(errors="ignore"))
