"""The pack author's test kit: a pytest plugin shipped with ``hostgate-kernel``.

Installed packs get it automatically (entry point ``pytest11``); every fixture
name starts with ``hostgate_``. A pack's ``conftest.py`` names its plugin
module and the tests use the rest::

    import pytest
    from hostgate_echo import plugin

    @pytest.fixture
    def hostgate_packs():
        return [plugin]

    async def test_settings(hostgate_client):
        response = await hostgate_client.get("/api/v1/settings")
        assert (await response.get_json())["echo.shout"] is False

Fixtures: ``hostgate_packs`` (override it), ``hostgate_config`` (override it
to set ``plugin_options``), ``hostgate_app`` (started, so ``startup`` hooks
ran, with :data:`HARNESS_SECONDS` for start-up and shut-down: an app a test starts
itself gets the same with ``async with PatientTestApp(app):``),
``hostgate_kernel`` (the ``KernelAPI`` your hooks receive),
``hostgate_client`` (logged in as the first admin, through ``/auth/setup``;
it sends request bodies in :data:`SERVED_PIECE` pieces, as the served gateway
hands them on), ``hostgate_connection`` (stores a connection to a test server on
127.0.0.1 through the API: loopback is allowed in the kit's config),
``hostgate_user`` (makes and logs in further users, with a role or exact
permissions) and ``hostgate_receiver`` (a real HTTP server on 127.0.0.1 that records
requests). :func:`audit_entries` and :func:`session_entries` read what the
gateway recorded through its API, so a pack's tests need no kernel table.
Async tests need pytest-asyncio (``hostgate-kernel[testing]``).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import shutil
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest
from quart.testing.app import TestApp
from quart.testing.connections import TestHTTPConnection

from .app import create_app, kernel_of
from .config import Config
from .upload_staging import STALE_AFTER, TEMP_PREFIX

try:
    from pytest_asyncio import fixture as async_fixture
except ImportError:  # pragma: no cover - without pytest-asyncio async fixtures cannot run
    async_fixture = pytest.fixture  # type: ignore[assignment]

if TYPE_CHECKING:
    import ssl

    from quart import Quart, Response

    from .contract import KernelAPI

TEST_KEY = "0f" * 32
# Test gateways reach local receivers on 127.0.0.1, which the shipped
# ``network.protected`` default refuses, and never ask the internet for releases.
TEST_SETTING_DEFAULTS = {
    "network.protected": "link-local, metadata",
    "updates.feed_url": "http://127.0.0.1:9/unreachable",
}
ADMIN_USERNAME = "admin"
ADMIN_PASSWORD = "correct horse battery"
USER_PASSWORD = "another horse battery"
"""The password ``hostgate_user`` gives the users it makes."""


async def eventually(check: Callable[[], Any], timeout: float = 15.0, what: str = "") -> Any:
    """Poll ``check`` (sync or async) until it returns something truthy; fail after ``timeout``.

    Work the app does in the background (deliveries, sessions) runs on the
    test's event loop, so waiting yields to it instead of sleeping.
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


# -- the app ---------------------------------------------------------------------

HARNESS_SECONDS = 30
"""Start-up and shut-down time of an in-process app (Quart's test harness gives 6 s)."""


class PatientTestApp(TestApp):
    """Quart's test harness with :data:`HARNESS_SECONDS` for start-up and shut-down.

    On a busy 2-core CI machine a start-up or shut-down (sessions closed, deliveries
    stored, the database migrated or closed) has run past Quart's 6 s. A hang still
    fails the test, after 30 s.
    """

    def __init__(
        self,
        app: Quart,
        startup_timeout: int = HARNESS_SECONDS,
        shutdown_timeout: int = HARNESS_SECONDS,
    ) -> None:
        super().__init__(app, startup_timeout, shutdown_timeout)


def migrated_database(path: Path) -> Path:
    """Create a migrated SQLite database file at ``path``."""
    from .db.engine import Database

    async def build() -> None:
        db = Database(f"sqlite+aiosqlite:///{path}")
        await db.migrate()
        await db.close()

    asyncio.run(build())
    return path


@pytest.fixture(scope="session")
def hostgate_database_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A migrated SQLite file, copied into each test's data dir (migrating once is faster)."""
    return migrated_database(tmp_path_factory.mktemp("hostgate-template") / "hostgate.db")


@pytest.fixture
def hostgate_packs() -> list[object]:
    """The plugin modules (or objects) to load; override it in your conftest."""
    return []


@pytest.fixture
def hostgate_config(tmp_path: Path, hostgate_database_template: Path) -> Config:
    """A config in a temporary data dir: fixed key, no entry-point loading, loopback reachable."""
    data = tmp_path / "hostgate-data"
    data.mkdir()
    shutil.copy(hostgate_database_template, data / "hostgate.db")
    return Config(
        data_dir=data,
        encryption_key=TEST_KEY,
        load_entry_points=False,
        version_timeout_seconds=1.0,
        setting_defaults=TEST_SETTING_DEFAULTS,
    )


@async_fixture
async def hostgate_app(
    hostgate_config: Config, hostgate_packs: list[object]
) -> AsyncIterator[Quart]:
    """The app with ``hostgate_packs`` loaded, started (``startup`` ran) and stopped after."""
    application = create_app(hostgate_config, plugins=hostgate_packs)
    async with PatientTestApp(application):
        yield application


@pytest.fixture
def hostgate_kernel(hostgate_app: Quart) -> KernelAPI:
    """The kernel as your hooks receive it."""
    return kernel_of(hostgate_app)


class LoggedInClient:
    """A Quart test client that sends a session token with every request."""

    def __init__(self, client: Any, token: str, user: dict[str, Any]) -> None:
        self.raw = client
        self.token = token
        self.user = user

    @property
    def headers(self) -> dict[str, str]:
        """The ``Authorization`` header, for helpers that take headers."""
        return {"Authorization": f"Bearer {self.token}"}

    async def request(self, method: str, path: str, **kwargs: Any) -> Response:
        """Send ``method path`` with the token (``headers``, ``json``... as Quart takes them)."""
        headers = {**self.headers, **(kwargs.pop("headers", None) or {})}
        data = kwargs.get("data")
        if isinstance(data, bytes) and not any(k.lower() == "content-length" for k in headers):
            headers["Content-Length"] = str(len(data))  # as a browser declares a body
        response: Response = await self.raw.open(path, method=method, headers=headers, **kwargs)
        return response

    async def get(self, path: str, **kwargs: Any) -> Response:
        """``GET path``."""
        return await self.request("GET", path, **kwargs)

    async def post(self, path: str, **kwargs: Any) -> Response:
        """``POST path``."""
        return await self.request("POST", path, **kwargs)

    async def put(self, path: str, **kwargs: Any) -> Response:
        """``PUT path``."""
        return await self.request("PUT", path, **kwargs)

    async def patch(self, path: str, **kwargs: Any) -> Response:
        """``PATCH path``."""
        return await self.request("PATCH", path, **kwargs)

    async def delete(self, path: str, **kwargs: Any) -> Response:
        """``DELETE path``."""
        return await self.request("DELETE", path, **kwargs)


SERVED_PIECE = 1 << 20
"""The largest piece of a request body the served gateway hands a view (its flow
control's high-water mark); an upload reaches ``RemoteFiles.write`` in such pieces."""


class ServedPiecesConnection(TestHTTPConnection):
    """A test HTTP connection that sends a body in :data:`SERVED_PIECE` pieces.

    Quart's test client hands a view the whole body as one chunk; ``hostgate serve``
    hands it on as it arrives, at most 1 MiB at a time. A file pack's ``write`` sees
    the same pieces under the kit as in production.
    """

    async def send(self, data: bytes) -> None:
        """Send ``data`` as the body's next pieces."""
        if len(data) <= SERVED_PIECE:
            await super().send(data)
            return
        for start in range(0, len(data), SERVED_PIECE):
            await super().send(data[start : start + SERVED_PIECE])


@async_fixture
async def hostgate_client(hostgate_app: Quart) -> LoggedInClient:
    """A client logged in as the instance's first admin (created through ``/auth/setup``).

    Request bodies go in :data:`SERVED_PIECE` pieces (see :class:`ServedPiecesConnection`).
    """
    client = hostgate_app.test_client()
    client.http_connection_class = ServedPiecesConnection
    response = await client.post(
        "/api/v1/auth/setup",
        json={"username": ADMIN_USERNAME, "password": ADMIN_PASSWORD, "displayName": "Admin"},
    )
    body = await response.get_json()
    if response.status_code != 200:
        pytest.fail(f"setting up the first admin failed: {response.status_code} {body}")
    return LoggedInClient(client, body["token"], body["user"])


async def _logged_in(app: Quart, username: str, password: str) -> LoggedInClient:
    """A new client of ``app`` logged in through ``POST /auth/login``."""
    client = app.test_client()
    client.http_connection_class = ServedPiecesConnection
    response = await client.post(
        "/api/v1/auth/login", json={"username": username, "password": password}
    )
    body = await response.get_json()
    if response.status_code != 200 or "token" not in body:
        pytest.fail(f"logging in as {username} failed: {response.status_code} {body}")
    return LoggedInClient(client, body["token"], body["user"])


class MakeUser(Protocol):
    """The ``hostgate_user`` fixture: ``await hostgate_user("bob", role=..., permissions=...)``."""

    async def __call__(
        self,
        username: str,
        *,
        role: str = "user",
        permissions: Sequence[str] | None = None,
        password: str = USER_PASSWORD,
    ) -> LoggedInClient:
        """A new local user, logged in: a client sending that user's token."""
        ...


@pytest.fixture
def hostgate_user(hostgate_app: Quart, hostgate_client: LoggedInClient) -> MakeUser:
    """Makes local users through the API (as the admin) and logs them in.

    ``role`` names an existing role (``user``, ``admin`` or one the test made);
    ``permissions`` instead makes a role of its own holding exactly those (names a
    pack registers included). The client's ``.user`` is the API's user object.
    """

    async def make(
        username: str,
        *,
        role: str = "user",
        permissions: Sequence[str] | None = None,
        password: str = USER_PASSWORD,
    ) -> LoggedInClient:
        if permissions is not None:
            role = f"{username} role"
            made = await hostgate_client.post(
                "/api/v1/roles", json={"name": role, "permissions": list(permissions)}
            )
            if made.status_code != 201:
                pytest.fail(f"making the role {role!r} failed: {await made.get_json()}")
        created = await hostgate_client.post(
            "/api/v1/users", json={"username": username, "password": password, "role": role}
        )
        if created.status_code != 201:
            pytest.fail(f"making the user {username!r} failed: {await created.get_json()}")
        return await _logged_in(hostgate_app, username, password)

    return make


async def audit_entries(
    client: LoggedInClient, *event_types: str, **filters: str
) -> list[dict[str, Any]]:
    """The audit entries ``client`` may see (``GET /audit``), newest first, at most 200.

    ``event_types`` keep only those types; ``filters`` are further query arguments of
    ``GET /audit`` (``userId``, ``search``...). Each entry is the API's audit entry:
    ``eventType``, ``username``, ``target``, ``details``...
    """
    query = {"limit": "200", **filters}
    if event_types:
        query["eventType"] = ",".join(event_types)
    response = await client.get("/api/v1/audit", query_string=query)
    body = await response.get_json()
    if response.status_code != 200:
        pytest.fail(f"GET /audit failed: {response.status_code} {body}")
    entries: list[dict[str, Any]] = body["entries"]
    return entries


async def session_entries(client: LoggedInClient, **filters: str) -> list[dict[str, Any]]:
    """The terminal and desktop sessions ``client`` may see (``GET /sessions``), newest first.

    ``filters`` are query arguments of ``GET /sessions`` (``protocol``, ``userId``,
    ``connectionId``, ``recorded``...); at most 200 sessions.
    """
    response = await client.get("/api/v1/sessions", query_string={"limit": "200", **filters})
    body = await response.get_json()
    if response.status_code != 200:
        pytest.fail(f"GET /sessions failed: {response.status_code} {body}")
    sessions: list[dict[str, Any]] = body["sessions"]
    return sessions


class MakeConnection(Protocol):
    """The ``hostgate_connection`` fixture: ``await hostgate_connection(protocol, port, ...)``."""

    async def __call__(
        self,
        protocol: str,
        port: int,
        *,
        host: str = "127.0.0.1",
        username: str = "",
        password: str | None = None,
        private_key: str | None = None,
        extra: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """Store a connection owned by the admin; the API's connection object."""
        ...


@pytest.fixture
def hostgate_connection(hostgate_client: LoggedInClient) -> MakeConnection:
    """Stores a connection to a test server (127.0.0.1 by default) as the admin.

    Created through ``POST /api/v1/connections`` as a user would; the kit's config
    allows loopback targets (``network.protected`` leaves it out), so the gateway may
    reach a server the test started. Returns the connection object (``["id"]``); the
    pack's routes are then ``/api/v1/<protocol>/<id>/...``. Pack-declared fields go in
    ``extra`` (``extraConfig``).
    """

    async def make(
        protocol: str,
        port: int,
        *,
        host: str = "127.0.0.1",
        username: str = "",
        password: str | None = None,
        private_key: str | None = None,
        extra: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "name": name or f"{protocol} test server {host}:{port}",
            "protocol": protocol,
            "host": host,
            "port": port,
            "username": username,
            "extraConfig": extra or {},
        }
        if password is not None:
            body["password"] = password
        if private_key is not None:
            body["privateKey"] = private_key
        response = await hostgate_client.post("/api/v1/connections", json=body)
        created: dict[str, Any] = await response.get_json()
        if response.status_code != 201:
            pytest.fail(f"storing the {protocol} connection failed: {created}")
        return created

    return make


# -- a local HTTP receiver ---------------------------------------------------------


@dataclass
class ReceivedRequest:
    """One request as the receiver got it."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        """The body parsed as JSON."""
        return json.loads(self.body)


@dataclass(frozen=True)
class Reply:
    """How the receiver answers; ``status`` None means the receiver's ``fail_status``."""

    status: int | None = 200
    body: bytes = b'{"received": true}'
    content_type: str = "application/json"


@dataclass
class HttpReceiver:
    """A real HTTP server on 127.0.0.1: what it received, and how it answers.

    By default every request gets ``200 {"received": true}``. ``reply(prefix,
    ok=..., failing=...)`` sets the answers for paths under a prefix (the
    longest prefix wins). ``fail_next = n`` fails the next n requests;
    ``failing = True`` fails every request until set back. ``delay`` seconds
    pass between receiving a request (it is recorded at once) and answering it.
    """

    port: int
    scheme: str = "http"
    requests: list[ReceivedRequest] = field(default_factory=list)
    fail_next: int = 0
    failing: bool = False
    fail_status: int = 500
    delay: float = 0.0
    lock: threading.Lock = field(default_factory=threading.Lock)
    replies: dict[str, tuple[Reply, Reply]] = field(
        default_factory=lambda: {
            "": (Reply(), Reply(None, b'{"error": "receiver is down"}')),
        }
    )

    @property
    def base(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"{self.scheme}://127.0.0.1:{self.port}"

    def url(self, path: str) -> str:
        """The receiver's URL for ``path``."""
        return f"{self.base}{path}"

    def reply(self, prefix: str, *, ok: Reply, failing: Reply | None = None) -> None:
        """Answer requests under ``prefix`` with ``ok`` (``failing`` while failing)."""
        self.replies[prefix] = (ok, failing or Reply(None, ok.body, ok.content_type))

    def received(self, prefix: str = "") -> list[ReceivedRequest]:
        """The requests whose path starts with ``prefix``, oldest first."""
        with self.lock:
            return [r for r in self.requests if r.path.startswith(prefix)]

    async def wait_for(
        self, prefix: str = "", count: int = 1, timeout: float = 15.0
    ) -> list[ReceivedRequest]:
        """Wait until at least ``count`` requests under ``prefix`` arrived; return them."""
        await eventually(lambda: len(self.received(prefix)) >= count, timeout, "HTTP request")
        return self.received(prefix)

    def answer(self, request: ReceivedRequest) -> tuple[int, bytes, str]:
        """Record ``request``; ``(status, body, content type)`` to answer with."""
        with self.lock:
            self.requests.append(request)
            failing = self.failing or self.fail_next > 0
            if self.fail_next > 0 and not self.failing:
                self.fail_next -= 1
            prefix = max((p for p in self.replies if request.path.startswith(p)), key=len)
            ok, failed = self.replies[prefix]
        chosen = failed if failing else ok
        status = self.fail_status if chosen.status is None else chosen.status
        return status, chosen.body, chosen.content_type


def _handler(receiver: HttpReceiver) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            return

        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            request = ReceivedRequest(self.command, self.path, dict(self.headers.items()), body)
            status, data, content_type = receiver.answer(request)
            if receiver.delay > 0:
                time.sleep(receiver.delay)
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_POST = do_PUT = do_PATCH = do_GET = do_DELETE = _answer  # noqa: N815

    return Handler


@dataclass
class RunningReceiver:
    """A started receiver and its server (``stop()`` shuts it down)."""

    receiver: HttpReceiver
    server: ThreadingHTTPServer

    def stop(self) -> None:
        """Stop serving and close the socket."""
        self.server.shutdown()
        self.server.server_close()


def start_receiver(ssl_context: ssl.SSLContext | None = None) -> RunningReceiver:
    """Start an HttpReceiver on a free port of 127.0.0.1 (behind TLS with ``ssl_context``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(HttpReceiver(0)))
    port = server.server_address[1]
    receiver = HttpReceiver(int(port), scheme="https" if ssl_context else "http")
    server.RequestHandlerClass = _handler(receiver)
    if ssl_context is not None:
        server.socket = ssl_context.wrap_socket(server.socket, server_side=True)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="http-receiver", daemon=True)
    thread.start()
    return RunningReceiver(receiver, server)


@pytest.fixture
def hostgate_receiver() -> Iterator[HttpReceiver]:
    """A real HTTP server on 127.0.0.1 recording every request (see ``HttpReceiver``)."""
    running = start_receiver()
    try:
        yield running.receiver
    finally:
        running.stop()


# -- file packs ------------------------------------------------------------------


class StalledBody:
    """An upload body whose client sends ``first`` and then nothing more.

    For a file pack's test that a cancelled upload leaves nothing: hand ``chunks()``
    to ``write``, wait for ``taken`` (the adapter took ``first`` and asked for more),
    then cancel the task, as the gateway does when the client goes away.
    """

    def __init__(self, first: bytes) -> None:
        self.first = first
        self.taken = asyncio.Event()

    async def chunks(self) -> AsyncIterator[bytes]:
        """``first``, then a wait that only a cancellation ends."""
        yield self.first
        self.taken.set()
        await asyncio.Event().wait()


@dataclass(frozen=True)
class PlantedLeftovers:
    """What :func:`plant_upload_leftovers` put in a directory."""

    stale: tuple[str, ...]
    """Temporary upload files a killed gateway left: the next upload there removes them."""
    kept: tuple[str, ...]
    """Look-alikes that must stay: a fresh temporary file (an upload in progress), a name
    not of the pattern, an old ordinary file, a directory of the pattern."""


def plant_upload_leftovers(directory: Path) -> PlantedLeftovers:
    """Put into a directory a test server serves what a killed gateway leaves behind.

    For a file pack's test that its uploads go through ``hostgate.UploadStaging``: after
    one upload into ``directory`` (by a fresh adapter, as after a restart), exactly the
    ``stale`` names are gone. The entries are writable by anyone, so the server's user
    may delete them; hand them to that user if the server needs it.
    """
    long_ago = time.time() - STALE_AFTER.total_seconds() - 3600
    stale = f"{TEMP_PREFIX}0123456789abcdef"
    fresh = f"{TEMP_PREFIX}fedcba9876543210"
    lookalike = f"{TEMP_PREFIX}notours"
    ordinary = "notes.txt"
    folder = f"{TEMP_PREFIX}00112233445566aa"
    for name in (stale, fresh, lookalike, ordinary):
        (directory / name).write_bytes(b"left behind")
        (directory / name).chmod(0o666)
    (directory / folder).mkdir()
    (directory / folder).chmod(0o777)
    for name in (stale, lookalike, ordinary, folder):
        os.utime(directory / name, (long_ago, long_ago))
    return PlantedLeftovers(stale=(stale,), kept=(fresh, lookalike, ordinary, folder))
