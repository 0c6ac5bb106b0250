"""Real notification receivers for tests: an SMTP server (aiosmtpd) and an HTTP server.

``smtp_receiver`` collects every message it accepts. ``http_receiver`` records
every request and answers like a webhook endpoint, Slack's incoming webhooks
(``/slack/...``) or the Telegram Bot API (``/bot<token>/sendMessage``); it can be
told to fail the next N requests, or to fail until told otherwise. ``silent_receiver``
accepts TCP connections and never says a word (a hung HTTP or SMTP peer).
"""

from __future__ import annotations

import email
import email.policy
import socket
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import EmailMessage
from pathlib import Path
from typing import Any

import pytest
from hostgate.testing import (
    HttpReceiver,
    Reply,
    RunningReceiver,
    eventually,
    start_receiver,
)

from testsupport.peers import free_port, peer_unavailable, wait_for_port

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


def _as_service_emulator(receiver: HttpReceiver) -> HttpReceiver:
    """Answer ``/slack...`` like Slack's incoming webhooks and ``/bot...`` like Telegram."""
    receiver.reply(
        "/slack",
        ok=Reply(200, b"ok", "text/plain"),
        failing=Reply(None, b"no_service", "text/plain"),
    )
    receiver.reply(
        "/bot",
        ok=Reply(200, b'{"ok": true, "result": {"message_id": 1}}'),
        failing=Reply(
            400, b'{"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}'
        ),
    )
    return receiver


@pytest.fixture
def http_receiver() -> Iterator[HttpReceiver]:
    """An HTTP server on 127.0.0.1 answering as a webhook, Slack and the Telegram Bot API."""
    running = start_receiver()
    try:
        yield _as_service_emulator(running.receiver)
    finally:
        running.stop()


@pytest.fixture
def https_receiver_factory() -> Iterator[Callable[[Path, Path], HttpReceiver]]:
    """``start(cert_path, key_path)`` -> the same receiver behind TLS with that certificate."""
    started: list[RunningReceiver] = []

    def start(cert: Path, key: Path) -> HttpReceiver:
        started.append(start_receiver(server_tls_context(cert, key)))
        return _as_service_emulator(started[-1].receiver)

    try:
        yield start
    finally:
        for running in started:
            running.stop()


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
