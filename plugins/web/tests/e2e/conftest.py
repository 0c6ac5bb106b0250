"""End-to-end fixtures: a real ``hostgate serve`` and Debian's Chromium driven by Playwright.

- ``gateway``: a server (temp data dir, free port, every installed pack) as it was just
  after its first start: no users, default settings. The tests of a module share one
  (``shared_gateway``), put back to that state before each test but the first
  (``Gateway.reset``); a module that overrides ``gateway_env`` gets one per test.
- ``page``: a Chromium page at 1280x800 in a fresh context; any console error or
  uncaught exception fails the test (the browser's own "Failed to load resource"
  lines for 4xx answers are expected where a test provokes them, and skipped).
- ``virtual_authenticator``: a CTAP2 authenticator in the page's Chromium (CDP
  ``WebAuthn.addVirtualAuthenticator``) for passkey tests (origin ``http://localhost``).
- ``screens``: ``screens.check(page, "name")`` runs axe-core (no serious or critical
  violation) and writes screenshots at 1280 and 390 px, light and dark, into
  ``test-artifacts/ui/`` at the repository root (git-ignored).

Under CI=true a browser that cannot start fails the test; elsewhere it skips.
"""

from __future__ import annotations

import re
import shutil
import signal
import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest
from hostgate.testreset import SNAPSHOT_ENV, done_path
from hostgate_web.assets import UI, ensure_built

from testsupport.gateway import ADMIN_PASSWORD, GatewayProcess
from testsupport.peers import peer_unavailable
from testsupport.sshd import SshdServer, sshd  # noqa: F401 - the fixture, for lab_ssh

from .terminals import NO_WEBGL

ROOT = Path(__file__).resolve().parents[4]
ARTIFACTS = ROOT / "test-artifacts" / "ui"
CHROMIUM = "/usr/bin/chromium"
AXE_SOURCE = str(UI / "node_modules" / "axe-core" / "axe.min.js")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# Chromium logs every 4xx/5xx answer to fetch() as a console error; 4xx ones are the
# API saying no (wrong password, 401 before sign-in), which the app handles. 5xx still fail.
EXPECTED_CONSOLE = re.compile(
    r"Failed to load resource: the server responded with a status of 4\d\d"
)


@pytest.fixture(scope="session")
def built_app() -> None:
    """The app's assets, built from ui/ if missing or stale."""
    ensure_built()


class Chromium:
    """One headless Debian Chromium for the e2e tests that run one after the other.

    Playwright's sync API keeps an event loop set while it is open: kept to the end of
    the session it would break every asyncio test that runs after these tests, so it is
    closed as soon as the next test is not an e2e one (``pytest_runtest_teardown``).
    Each test still has its own context (profile). Launching it per module cost 0.8 s of
    CPU each time, for about 30 modules.
    """

    def __init__(self) -> None:
        self.playwright: Any = None
        self.instance: Any = None

    def get(self) -> Any:
        """The running browser, launched first if needed."""
        if self.instance is not None:
            return self.instance
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as error:
            peer_unavailable("chromium", f"playwright is not installed: {error}")
        if not Path(CHROMIUM).exists():
            peer_unavailable("chromium", f"{CHROMIUM} is missing (apt-get install chromium)")
        self.playwright = sync_playwright().start()
        try:
            self.instance = self.playwright.chromium.launch(
                executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
            )
        except Exception as error:  # noqa: BLE001 - any launch failure means no browser
            self.close()
            peer_unavailable("chromium", f"cannot start: {error}")
        return self.instance

    def close(self) -> None:
        """Close the browser and Playwright (its event loop with it)."""
        if self.instance is not None:
            self.instance.close()
            self.instance = None
        if self.playwright is not None:
            self.playwright.stop()
            self.playwright = None


CHROMIUM_SHARED = Chromium()
E2E_DIR = Path(__file__).resolve().parent


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """After the test's own teardown (its context closed): the browser goes when the run
    leaves this directory."""
    yield
    if nextitem is None or Path(nextitem.path).resolve().parent != E2E_DIR:
        CHROMIUM_SHARED.close()
        SPARES.close()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """The next test's gateway starts when this test's set-up is done."""
    if SPARES.wanted is not None:
        SPARES.prepare(*SPARES.wanted)
        SPARES.wanted = None


def pytest_sessionfinish(session: pytest.Session) -> None:
    """An interrupted run leaves no spare gateway behind."""
    SPARES.close()


@pytest.fixture
def browser(built_app: None, template_db: Path) -> Any:
    """The headless Debian Chromium of the e2e tests (``Chromium``).

    The session's template database is made first: it runs ``asyncio.run``, which
    cannot run while Playwright's loop is set (a later test's first use would fail).
    """
    return CHROMIUM_SHARED.get()


RESET_TIMEOUT = 60.0


class Gateway(GatewayProcess):
    """A ``hostgate serve`` with API helpers for checking what the server saw."""

    http: httpx.Client | None = None
    snapshot: Path | None = None  # its database just after the first start (``reset``)
    log_mark = 0  # where the current test's part of the log starts
    used = False  # a test had it (the next one needs a ``reset``)

    def take_snapshot(self) -> None:
        """Copy the database as it is now to ``snapshot`` (SQLite's backup API)."""
        assert self.snapshot is not None
        with (
            closing(sqlite3.connect(self.data_dir / "hostgate.db")) as live,
            closing(sqlite3.connect(self.snapshot)) as copy,
        ):
            live.backup(copy)

    def reset(self) -> None:
        """Put the running server back to ``snapshot`` and wait until it is.

        SIGUSR1, which the server answers only because the fixture started it with
        ``HOSTGATE_TEST_RESET_SNAPSHOT`` (``hostgate.testreset``): live sessions closed,
        every row back to the snapshot's, settings, audit chain, roles and the packs'
        state re-read, login-rate and lockout counters forgotten, recordings removed.
        A server a test stopped is started again first (same port and data dir).
        """
        assert self.snapshot is not None and self.process is not None
        if self.process.poll() is not None:
            self.start()
        done = done_path(self.snapshot)
        done.unlink(missing_ok=True)
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + RESET_TIMEOUT
        while not done.exists():
            if self.process.poll() is not None:
                pytest.fail(f"hostgate serve exited during its reset: {self.log()[-2000:]}")
            if time.monotonic() > deadline:
                pytest.fail(f"hostgate serve was not reset in time: {self.log()[-2000:]}")
            time.sleep(0.02)
        outcome = done.read_text().strip()
        if not outcome.endswith(" ok"):
            pytest.fail(f"hostgate serve could not be reset ({outcome}): {self.log()[-2000:]}")

    def mark_log(self) -> None:
        """Start the current test's part of the log here (``unhandled(since=log_mark)``)."""
        self.log_mark = len(self.log())

    def api(self, method: str, path: str, token: str, **kwargs: Any) -> httpx.Response:
        """One API call with a bearer token (``path`` under ``/api/v1``).

        Every call of the gateway goes through one client (many are polls; ``httpx.request``
        built a client and its TLS context each time, 20-40 ms of CPU); without keep-alive,
        each call still opens its own connection, as before.
        """
        if self.http is None:
            self.http = httpx.Client(timeout=60, limits=httpx.Limits(max_keepalive_connections=0))
        return self.http.request(
            method,
            f"{self.url}/api/v1{path}",
            headers={"Authorization": f"Bearer {token}"},
            **kwargs,
        )

    def stop(self) -> None:
        """SIGTERM (graceful), SIGKILL if it lingers; the API client is closed."""
        super().stop()
        if self.http is not None:
            self.http.close()
            self.http = None

    def set_settings(self, token: str, **values: Any) -> None:
        """PUT /settings with dotted keys given as ``a__b`` (``security__idle_timeout_minutes``)."""
        body = {key.replace("__", "."): value for key, value in values.items()}
        response = self.api("PUT", "/settings", token, json=body)
        assert response.status_code == 200, response.text

    def trust_host_key(self, token: str, connection_id: str) -> str:
        """Scan the connection's SSH host key and accept it (as the browser's prompt would).

        For tests about something else than host-key trust: the browser then opens the
        session without asking. The fingerprint trusted.
        """
        scan = self.api("POST", f"/connections/{connection_id}/host-key/scan", token)
        assert scan.status_code == 200, scan.text
        fingerprint = str(scan.json()["presented"]["fingerprint"])
        if scan.json()["state"] != "trusted":
            body = {"fingerprint": fingerprint}
            accepted = self.api(
                "POST", f"/connections/{connection_id}/host-key/accept", token, json=body
            )
            assert accepted.status_code == 200, accepted.text
        return fingerprint

    def audit_types(self, token: str) -> list[str]:
        """Event types in the audit log, newest first."""
        response = self.api("GET", "/audit", token, params={"limit": 200})
        assert response.status_code == 200, response.text
        body = response.json()
        entries = body["entries"] if isinstance(body, dict) else body
        return [entry.get("eventType") or entry.get("event_type") for entry in entries]


@pytest.fixture
def gateway_env() -> dict[str, str]:
    """Extra environment for the gateway (override in a test module)."""
    return {}


class Spares:
    """Gateways started ahead, so that a module does not wait for its own.

    A module's shared gateway (``shared_gateway``) is launched during the test before
    its first test, as soon as that test's set-up is done: while it runs, the next
    module's ``hostgate serve`` is already importing and opening its database (a copy
    of the template: no users, empty caches). Only the default environment is started
    ahead (a module's ``gateway_env`` override gets one per test, at set-up). The spare
    goes when the run leaves this directory.
    """

    def __init__(self) -> None:
        self.spare: Gateway | None = None
        self.spawned = 0  # gateways launched through this pool (its test counts them)
        self.wanted: tuple[Path, Path] | None = None

    def fresh(self, root: Path, template_db: Path, env: dict[str, str]) -> Gateway:
        """A gateway on a copy of ``template_db`` in a new directory under ``root``,
        launched (not yet waited for), able to ``reset`` to a snapshot at ``root``."""
        data = root / "data"
        data.mkdir(mode=0o700, parents=True)
        shutil.copy(template_db, data / "hostgate.db")
        (data / "hostgate.db").chmod(0o600)
        self.spawned += 1
        snapshot = root / "first-state.db"
        process = Gateway(data, env={SNAPSHOT_ENV: str(snapshot), **env})
        process.snapshot = snapshot
        return process.spawn()

    def take(self, root: Path, template_db: Path, env: dict[str, str]) -> Gateway:
        """The started-ahead spare if the environment is the default one (a new one in
        ``root`` otherwise), waited for until it answers."""
        process = self.spare if not env else None
        if process is None:
            process = self.fresh(root, template_db, env)
        else:
            self.spare = None
        process.wait_started()
        return process

    def prepare(self, root: Path, template_db: Path) -> None:
        """Start a default-environment gateway in ``root`` for the next module."""
        if self.spare is None:
            self.spare = self.fresh(root, template_db, {})

    def close(self) -> None:
        """Stop the spare nobody took."""
        if self.spare is not None:
            self.spare.stop()
            self.spare = None


SPARES = Spares()
SHARED: dict[Path, Gateway] = {}  # the running ``shared_gateway`` of a module, by its file


def wants_default_gateway(item: pytest.Item | None) -> bool:
    """True if ``item`` is an e2e test that will ask for ``gateway`` with no module
    override of ``gateway_env``."""
    if item is None or Path(item.path).resolve().parent != E2E_DIR:
        return False
    info = getattr(item, "_fixtureinfo", None)
    if info is None or "gateway" not in item.fixturenames:
        return False
    return len(info.name2fixturedefs.get("gateway_env", ())) == 1


def wants_spare(item: pytest.Item | None) -> bool:
    """True if ``item`` will start its module's shared gateway (none runs for it yet)."""
    return wants_default_gateway(item) and Path(item.path) not in SHARED  # type: ignore[union-attr]


def next_item(request: pytest.FixtureRequest) -> pytest.Item | None:
    """The test that runs after this one, if any."""
    items = request.session.items
    try:
        index = items.index(request.node)  # type: ignore[arg-type]
    except ValueError:
        return None
    return items[index + 1] if index + 1 < len(items) else None


@pytest.fixture(scope="module")
def shared_gateway(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    built_app: None,
    template_db: Path,
) -> Iterator[Gateway]:
    """The module's ``hostgate serve`` (default environment), shared by its tests.

    Started on a copy of the session's migrated, empty database (the first start's work
    still runs: roles, key check), usually during the module before (``Spares``). Its
    database is copied right after the start (``Gateway.snapshot``); the ``gateway``
    fixture puts it back to that copy before every test but the first (``Gateway.reset``).
    """
    process = SPARES.take(tmp_path_factory.mktemp("gateway"), template_db, {})
    process.take_snapshot()
    module = Path(request.path)
    SHARED[module] = process
    try:
        yield process
    finally:
        SHARED.pop(module, None)
        process.stop()
    assert not process.unhandled(since=process.log_mark), process.unhandled(process.log_mark)


@pytest.fixture
def gateway(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    built_app: None,
    gateway_env: dict[str, str],
    template_db: Path,
) -> Iterator[Gateway]:
    """A ``hostgate serve`` as just after its first start (no users, default settings).

    The module's ``shared_gateway``, reset before this test if an earlier test of the
    module used it; with a ``gateway_env`` override, a gateway of this test alone. When
    the next test starts its module's gateway, that one is launched as soon as this
    test's set-up is done (``pytest_runtest_call``): launched here, it slowed the admin's
    argon2 and the sign-in of this test's set-up (A/B in docs/performance-log/2026-11-lab-notes.md).
    """
    if gateway_env:
        process = SPARES.take(tmp_path, template_db, gateway_env)
    else:
        process = request.getfixturevalue("shared_gateway")
        if process.used:  # an earlier test of the module had it
            process.reset()
            # what the last test's teardown or the reset logged is theirs, not this test's
            leftover = process.unhandled(since=process.log_mark)
            assert not leftover, f"after the previous test: {leftover}"
        process.used = True
        process.mark_log()
    if wants_spare(next_item(request)):
        SPARES.wanted = (tmp_path_factory.mktemp("gateway"), template_db)
    yield process
    if gateway_env:
        process.stop()
        assert not process.unhandled(), process.unhandled()
    else:
        assert not process.unhandled(since=process.log_mark), process.unhandled(process.log_mark)


@pytest.fixture
def admin_token(gateway: Gateway) -> str:
    """The first admin created through the API (``admin`` / ADMIN_PASSWORD)."""
    return gateway.setup_admin()


@dataclass
class Console:
    """What the page logged that a test must not ignore."""

    errors: list[str] = field(default_factory=list)
    expected: list[re.Pattern[str]] = field(default_factory=list)

    def expect(self, pattern: str) -> None:
        """Allow console errors matching ``pattern`` (a 5xx the test provokes on purpose)."""
        self.expected.append(re.compile(pattern))

    def on_message(self, message: Any) -> None:
        if message.type != "error" or EXPECTED_CONSOLE.search(message.text):
            return
        if not any(pattern.search(message.text) for pattern in self.expected):
            self.errors.append(f"console: {message.text}")

    def on_page_error(self, error: Any) -> None:
        self.errors.append(f"uncaught: {error}")


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    """A fresh browser profile (cookies, storage) with axe-core injected into every page."""
    ctx = browser.new_context(viewport=DESKTOP, color_scheme="light", locale="en-GB")
    # an init script is injected by the browser itself, so the page's CSP does not apply
    ctx.add_init_script(path=AXE_SOURCE)
    yield ctx
    ctx.close()


@pytest.fixture
def console() -> Console:
    """The page's console watch: ``console.expect(pattern)`` allows an error on purpose."""
    return Console()


@pytest.fixture
def page(context: Any, console: Console) -> Iterator[Any]:
    """A page whose console errors and uncaught exceptions fail the test."""
    tab = context.new_page()
    tab.set_default_timeout(15_000)
    tab.on("console", console.on_message)
    tab.on("pageerror", console.on_page_error)
    # every peer of the suite is on this machine: a request anywhere else is the app
    # loading something from another origin (a CDN, a web font), which it must not
    elsewhere: list[str] = []
    tab.context.on(
        "request", lambda request: None if local(request.url) else elsewhere.append(request.url)
    )
    yield tab
    assert not console.errors, "\n".join(console.errors)
    assert not elsewhere, f"requests to other hosts: {elsewhere}"


def local(url: str) -> bool:
    """True for a URL of this machine (or data:/blob:)."""
    parts = urlsplit(url)
    return parts.scheme in {"data", "blob"} or parts.hostname in {"127.0.0.1", "::1", "localhost"}


@pytest.fixture
def virtual_authenticator(page: Any) -> Iterator[str]:
    """A virtual CTAP2 authenticator in this page's Chromium (CDP WebAuthn domain)."""
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable", {"enableUI": False})
    added = cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    yield added["authenticatorId"]
    cdp.send("WebAuthn.disable")
    cdp.detach()


def signed_in(page: Any, gateway: Gateway, username: str = "admin") -> None:
    """Sign in through the form (the admin password)."""
    page.goto(gateway.url + "/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("navigation", name="Connections").wait_for()


AXE_RUN = """async () => {
  const result = await axe.run(document, { resultTypes: ["violations"] });
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
  }));
}"""


def server_connection(
    gateway: Gateway,
    token: str,
    server: Any,
    *,
    name: str = "lab-ssh",
    protocol: str = "ssh",
    trust: bool = True,
) -> str:
    """A connection to one of the suite's servers (``host``, ``port``, ``username``,
    ``password``), its host key trusted unless ``trust=False`` (the prompts: test_hostkeys.py).
    """
    body = {
        "name": name,
        "protocol": protocol,
        "host": server.host,
        "port": server.port,
        "username": server.username,
        "password": server.password,
    }
    response = gateway.api("POST", "/connections", token, json=body)
    assert response.status_code == 201, response.text
    connection_id = str(response.json()["id"])
    if trust:
        gateway.trust_host_key(token, connection_id)
    return connection_id


@pytest.fixture
def lab_ssh(page: Any, gateway: Gateway, admin_token: str, sshd: SshdServer) -> str:  # noqa: F811
    """The usual start of a terminal test: an SSH connection ``lab-ssh`` of the admin's to
    the suite's sshd (host key trusted), the page with xterm's DOM renderer (the text
    readable), signed in as admin. The connection's id; ``terminals.open_terminal`` opens it.
    """
    connection_id = server_connection(gateway, admin_token, sshd)
    page.context.add_init_script(NO_WEBGL)
    signed_in(page, gateway)
    return connection_id


class Screens:
    """Accessibility check and screenshots of a screen in every size and theme."""

    def check(self, page: Any, name: str, scroll_to: Any = None) -> None:
        """axe-core finds no serious/critical violation; screenshots at 1280/390, light/dark.

        ``scroll_to`` (a locator) is scrolled into view in every size before the screenshot.
        """
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        original = page.viewport_size
        try:
            for scheme in ("light", "dark"):
                page.emulate_media(color_scheme=scheme)
                for label, size in (("1280", DESKTOP), ("390", PHONE)):
                    page.set_viewport_size(size)
                    page.wait_for_timeout(50)  # one frame for the layout to settle
                    if scroll_to is not None:
                        scroll_to.scroll_into_view_if_needed()
                    violations = [
                        v for v in page.evaluate(AXE_RUN) if v["impact"] in {"serious", "critical"}
                    ]
                    assert not violations, f"{name} ({label}px, {scheme}): {violations}"
                    page.screenshot(path=str(ARTIFACTS / f"{name}-{label}-{scheme}.png"))
        finally:
            page.emulate_media(color_scheme="light")
            page.set_viewport_size(original)


@pytest.fixture
def screens() -> Screens:
    """``screens.check(page, name)``."""
    return Screens()
