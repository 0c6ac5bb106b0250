"""Real notification receivers for tests: an SMTP server (aiosmtpd) and an HTTP server.

``smtp_receiver`` collects every message it accepts. ``http_receiver`` records
every request and answers like a webhook endpoint, Slack's incoming webhooks
(``/slack/...``) or the Telegram Bot API (``/bot<token>/sendMessage``); it can be
told to fail the next N requests, or to fail until told otherwise. ``silent_receiver``
accepts TCP connections and never says a word (a hung HTTP or SMTP peer).
"""

from __future__ import annotations

import asyncio
import email
import email.policy
import inspect
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from testsupport.peers import free_port, peer_unavailable, wait_for_port


async def eventually(check: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    """Poll ``check`` (sync or async) until it returns something truthy, yielding to the loop.

    The app's delivery worker runs on the test's event loop, so waiting must
    never block it. Fails the test after ``timeout`` seconds.
    """
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        if time.monotonic() > deadline:
            pytest.fail(f"{what or 'condition'} not reached within {timeout} s")
        await asyncio.sleep(0.05)


# -- SMTP ----------------------------------------------------------------------------


@dataclass
class ReceivedMail:
    """One message as the SMTP server received it."""

    sender: str
    recipients: list[str]
    message: EmailMessage

    @property
    def subject(self) -> str:
        return str(self.message["Subject"])

    @property
    def body(self) -> str:
        part = self.message.get_body(("plain",))
        return str(part.get_content()) if part is not None else ""


@dataclass
class SmtpReceiver:
    """A running aiosmtpd server and what it received."""

    host: str
    port: int
    messages: list[ReceivedMail] = field(default_factory=list)
    logins: list[tuple[str, str]] = field(default_factory=list)

    async def wait_for(self, count: int = 1, timeout: float = 15.0) -> list[ReceivedMail]:
        """Wait until at least ``count`` messages arrived."""
        await eventually(lambda: len(self.messages) >= count, timeout, "mail arrival")
        return list(self.messages)


def _start_smtp(
    *,
    auth: dict[str, str] | None = None,
    tls_context: ssl.SSLContext | None = None,
    implicit_tls: bool = False,
) -> tuple[Any, SmtpReceiver]:
    try:
        from aiosmtpd.controller import Controller
        from aiosmtpd.smtp import AuthResult, LoginPassword
    except ImportError as exc:  # pragma: no cover - dev dependency
        peer_unavailable("aiosmtpd", str(exc))
        raise

    port = free_port()
    receiver = SmtpReceiver("127.0.0.1", port)

    class Handler:
        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # noqa: N802
            parsed = email.message_from_bytes(envelope.content, policy=email.policy.default)
            receiver.messages.append(
                ReceivedMail(
                    envelope.mail_from,
                    list(envelope.rcpt_tos),
                    parsed,  # type: ignore[arg-type]
                )
            )
            return "250 Message accepted for delivery"

    def authenticator(server: Any, session: Any, envelope: Any, mechanism: str, data: Any) -> Any:
        if not isinstance(data, LoginPassword) or auth is None:
            return AuthResult(success=False, handled=False)
        user, password = data.login.decode(), data.password.decode()
        if auth.get(user) == password:
            receiver.logins.append((user, password))
            return AuthResult(success=True)
        return AuthResult(success=False, handled=False)

    kwargs: dict[str, Any] = {}
    if auth is not None:
        # Without TLS, AUTH is offered but not required (aiosmtpd warns otherwise).
        kwargs.update(
            authenticator=authenticator,
            auth_require_tls=tls_context is not None,
            auth_required=tls_context is not None,
        )
    if tls_context is not None and not implicit_tls:
        kwargs.update(tls_context=tls_context, require_starttls=True)
    controller = Controller(
        Handler(),
        hostname="127.0.0.1",
        port=port,
        ssl_context=tls_context if implicit_tls else None,
        ready_timeout=10,
        server_hostname="localhost",
        **kwargs,
    )
    try:
        controller.start()
    except Exception as exc:
        peer_unavailable("aiosmtpd", f"{type(exc).__name__}: {exc}")
    if not wait_for_port(port, 10):
        controller.stop()
        peer_unavailable("aiosmtpd", f"nothing listens on port {port}")
    return controller, receiver


@pytest.fixture
def smtp_receiver() -> Iterator[SmtpReceiver]:
    """A plain SMTP server on 127.0.0.1 (no TLS, no authentication)."""
    controller, receiver = _start_smtp()
    try:
        yield receiver
    finally:
        controller.stop()


@pytest.fixture
def smtp_receiver_factory() -> Iterator[Callable[..., SmtpReceiver]]:
    """``start(auth={user: password}, tls_context=ctx, implicit_tls=False)`` -> receiver."""
    controllers: list[Any] = []

    def start(**kwargs: Any) -> SmtpReceiver:
        controller, receiver = _start_smtp(**kwargs)
        controllers.append(controller)
        return receiver

    try:
        yield start
    finally:
        for controller in controllers:
            controller.stop()


def server_tls_context(cert: Path, key: Path) -> ssl.SSLContext:
    """A server-side TLS context from PEM files."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(str(cert), str(key))
    return context


# -- HTTP ----------------------------------------------------------------------------


@dataclass
class ReceivedRequest:
    """One request as the HTTP server received it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class HttpReceiver:
    """A running HTTP server, what it received, and how it should answer."""

    port: int
    scheme: str = "http"
    requests: list[ReceivedRequest] = field(default_factory=list)
    fail_next: int = 0
    failing: bool = False
    fail_status: int = 500
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        return f"{self.base}{path}"

    def received(self, prefix: str = "") -> list[ReceivedRequest]:
        with self.lock:
            return [r for r in self.requests if r.path.startswith(prefix)]

    async def wait_for(
        self, prefix: str = "", count: int = 1, timeout: float = 15.0
    ) -> list[ReceivedRequest]:
        """Wait until at least ``count`` requests under ``prefix`` arrived."""
        await eventually(lambda: len(self.received(prefix)) >= count, timeout, "HTTP request")
        return self.received(prefix)

    def should_fail(self) -> bool:
        with self.lock:
            if self.failing:
                return True
            if self.fail_next > 0:
                self.fail_next -= 1
                return True
            return False


def _handler(receiver: HttpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with receiver.lock:
                receiver.requests.append(
                    ReceivedRequest(self.command, self.path, dict(self.headers.items()), body)
                )
            failing = receiver.should_fail()
            telegram = "/sendMessage" in self.path
            if telegram:
                payload: Any = (
                    {"ok": False, "error_code": 400, "description": "Bad Request: chat not found"}
                    if failing
                    else {"ok": True, "result": {"message_id": len(receiver.requests)}}
                )
                status = 400 if failing else 200
                data = json.dumps(payload).encode()
                content_type = "application/json"
            elif self.path.startswith("/slack"):
                status = receiver.fail_status if failing else 200
                data = b"no_service" if failing else b"ok"
                content_type = "text/plain"
            else:
                status = receiver.fail_status if failing else 200
                data = b'{"error": "receiver is down"}' if failing else b'{"received": true}'
                content_type = "application/json"
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_PUT = do_PATCH = do_GET = _answer  # noqa: N815

    return Handler


def _start_http(
    ssl_context: ssl.SSLContext | None = None,
) -> tuple[ThreadingHTTPServer, HttpReceiver]:
    port = free_port()
    receiver = HttpReceiver(port, scheme="https" if ssl_context else "http")
    try:
        server = ThreadingHTTPServer(("127.0.0.1", port), _handler(receiver))
    except OSError as exc:
        peer_unavailable("http receiver", str(exc))
        raise
    if ssl_context is not None:
        server.socket = ssl_context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="http-receiver", daemon=True)
    thread.start()
    return server, receiver


def _stop_http(server: ThreadingHTTPServer) -> None:
    server.shutdown()
    server.server_close()


@pytest.fixture
def http_receiver() -> Iterator[HttpReceiver]:
    """An HTTP server on 127.0.0.1 answering as a webhook, Slack and the Telegram Bot API."""
    server, receiver = _start_http()
    try:
        yield receiver
    finally:
        _stop_http(server)


@pytest.fixture
def https_receiver_factory() -> Iterator[Callable[[Path, Path], HttpReceiver]]:
    """``start(cert_path, key_path)`` -> the same receiver behind TLS with that certificate."""
    servers: list[ThreadingHTTPServer] = []

    def start(cert: Path, key: Path) -> HttpReceiver:
        server, receiver = _start_http(server_tls_context(cert, key))
        servers.append(server)
        return receiver

    try:
        yield start
    finally:
        for server in servers:
            _stop_http(server)


# -- a peer that hangs ---------------------------------------------------------------


@dataclass
class SilentReceiver:
    """A TCP server that accepts every connection, reads nothing and never answers."""

    port: int
    accepted: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def host(self) -> str:
        return "127.0.0.1"

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def connections(self) -> int:
        """How many connections were accepted so far."""
        with self.lock:
            return self.accepted


@pytest.fixture
def silent_receiver() -> Iterator[SilentReceiver]:
    """A listener on 127.0.0.1 that holds every connection open in silence until the test ends."""
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.1)
    receiver = SilentReceiver(listener.getsockname()[1])
    held: list[socket.socket] = []
    stopping = threading.Event()

    def serve() -> None:
        while not stopping.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            held.append(connection)
            with receiver.lock:
                receiver.accepted += 1

    thread = threading.Thread(target=serve, name="silent-receiver", daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        stopping.set()
        thread.join(5)
        listener.close()
        for connection in held:
            connection.close()


# -- helpers for notification tests --------------------------------------------------

LOG = "/api/v1/notifications/log"


async def log_entries(client: Any, headers: dict[str, str], **query: Any) -> dict[str, Any]:
    """``GET /notifications/log`` with query arguments; asserts 200."""
    args = "&".join(f"{k}={v}" for k, v in query.items())
    response = await client.get(f"{LOG}?{args}" if args else LOG, headers=headers)
    assert response.status_code == 200, await response.get_data()
    body: dict[str, Any] = await response.get_json()
    return body


async def settled_entries(
    client: Any, headers: dict[str, str], count: int = 1, timeout: float = 15.0, **query: Any
) -> list[dict[str, Any]]:
    """Wait until at least ``count`` log entries exist and none is pending; return them."""

    async def check() -> list[dict[str, Any]] | None:
        body = await log_entries(client, headers, limit=200, **query)
        entries: list[dict[str, Any]] = body["entries"]
        if len(entries) >= count and all(e["status"] != "pending" for e in entries):
            return entries
        return None

    result: list[dict[str, Any]] = await eventually(check, timeout, "settled log entries")
    return result
