"""The access log: one line per HTTP request and per WebSocket, logger ``hostgate.access``.

Each line has the method, the path (never the query string: WebSocket tickets,
OIDC codes and file paths travel there), the status, the duration, the user id
(``-`` when nobody is signed in), the client address and the request id. With
``HOSTGATE_LOG_FORMAT=json`` the same values are fields of the JSON object. A
WebSocket is logged when it ends, with status 101 and the close code hostgate
sent, if any.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from quart import Quart, Request, g, websocket

from .config import IPNetwork
from .logging_setup import request_id
from .security.clientinfo import client_ip

log = logging.getLogger("hostgate.access")


def _user_id() -> str:
    caller = g.get("caller")
    return str(getattr(caller, "user_id", "") or "-")


def _emit(method: str, path: str, status: int, started: float, client: str, **extra: Any) -> None:
    duration_ms = round((time.perf_counter() - started) * 1000, 1)
    user = _user_id()
    fields: dict[str, Any] = {
        "method": method,
        "path": path,
        "status": status,
        "duration_ms": duration_ms,
        "user_id": user,
        "client": client,
        **extra,
    }
    suffix = "".join(f" {k}={v}" for k, v in extra.items())
    log.info(
        "%s %s %d %.1fms user=%s client=%s%s",
        method,
        path,
        status,
        duration_ms,
        user,
        client,
        suffix,
        extra={"fields": fields},
    )


def request_logger(
    trusted_proxies: tuple[IPNetwork, ...] = (),
) -> Callable[[Request, int], None]:
    """What logs one finished HTTP request; the app calls it from its one after-request hook."""

    def log_request(current: Request, status: int) -> None:
        if not log.isEnabledFor(logging.INFO):
            return  # the line would be dropped: build nothing
        started = g.get("request_started", time.perf_counter())
        address = client_ip(current.remote_addr, current.headers, trusted_proxies) or "-"
        _emit(current.method, current.path, status, started, address)

    return log_request


def install(app: Quart, trusted_proxies: tuple[IPNetwork, ...] = ()) -> None:
    """Log every WebSocket of ``app`` to ``hostgate.access`` (requests: ``request_logger``)."""

    def client(remote: str | None, headers: Any) -> str:
        return client_ip(remote, headers, trusted_proxies) or "-"

    @app.before_websocket
    async def _start_socket() -> None:
        request_id.set(websocket.headers.get("X-Request-Id", "")[:64] or os.urandom(8).hex())
        g.request_started = time.perf_counter()

    @app.after_websocket
    async def _log_socket(response: Any) -> Any:
        if not log.isEnabledFor(logging.INFO):
            return response
        started = g.get("request_started", time.perf_counter())
        status = response.status_code if response is not None else 101
        extra = {"close": g.get("close_code")} if g.get("close_code") is not None else {}
        address = client(websocket.remote_addr, websocket.headers)
        _emit("GET", websocket.path, status, started, address, **extra)
        return response
