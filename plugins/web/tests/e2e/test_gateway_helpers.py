"""The e2e helpers: the ``Gateway``'s API calls share one HTTP client, closed when it
stops; consecutive e2e tests share one Chromium; a module's tests share one gateway,
put back to its first state before each test (``Gateway.reset``), started during the
module before it (``Spares``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from hostgate.testing import start_receiver

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import CHROMIUM_SHARED, SHARED, Gateway, Spares, wants_default_gateway

SEEN: list[Any] = []
PIDS: list[int] = []


def test_api_calls_share_one_client_until_the_gateway_stops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[httpx.Client] = []

    class Counted(httpx.Client):
        def __init__(self, *args: object, **kwargs: object) -> None:
            super().__init__(*args, **kwargs)  # type: ignore[arg-type]
            built.append(self)

    monkeypatch.setattr(httpx, "Client", Counted)
    running = start_receiver()  # stands in for the served gateway's port
    try:
        gateway = Gateway(tmp_path / "data")
        gateway.port = running.receiver.port
        for n in range(3):
            response = gateway.api("GET", f"/sessions?n={n}", "token-1")
            assert response.status_code == 200
        received = running.receiver.received("/api/v1/sessions")
        assert [r.headers.get("Authorization") for r in received] == ["Bearer token-1"] * 3
        assert len(built) == 1  # one client (and TLS context) for the three calls
        gateway.stop()  # never started: only the client is closed
        assert built[0].is_closed and gateway.http is None
        assert gateway.api("GET", "/health", "token-2").status_code == 200  # a new one
        assert len(built) == 2
        gateway.stop()
    finally:
        running.stop()


def test_a_test_gets_the_running_chromium(browser: Any) -> None:
    assert browser is CHROMIUM_SHARED.instance and browser.is_connected()
    SEEN.append(browser)


def test_the_next_test_gets_the_same_one(browser: Any) -> None:
    """Run after the test above (file order): not closed and launched again in between.
    Run alone, the browser is the one running (nothing was seen before it)."""
    assert browser is CHROMIUM_SHARED.instance and browser.is_connected()
    assert SEEN in ([], [browser])
    context = browser.new_context()  # each test's own profile, as the ``context`` fixture
    try:
        assert context.pages == [] and context.cookies() == []
    finally:
        context.close()


def test_a_gateway_started_ahead_is_handed_out_fresh_and_only_for_the_default_env(
    tmp_path: Path, template_db: Path, built_app: None, request: pytest.FixtureRequest
) -> None:
    spares = Spares()
    taken: list[Gateway] = []
    try:
        spares.prepare(tmp_path / "ahead", template_db)
        spare = spares.spare
        assert spare is not None and spare.process is not None
        assert spare.process.poll() is None  # launched before any test asked for it
        spares.prepare(tmp_path / "again", template_db)
        assert spares.spare is spare and spares.spawned == 1  # one spare at most

        # a module's own environment does not get the default spare
        own = spares.take(tmp_path / "own", template_db, {"HOSTGATE_LOG_LEVEL": "INFO"})
        taken.append(own)
        assert own is not spare and spares.spare is spare and spares.spawned == 2
        assert own.data_dir == tmp_path / "own" / "data"

        default = spares.take(tmp_path / "unused", template_db, {})
        taken.append(default)
        assert default is spare and spares.spare is None and spares.spawned == 2
        assert not (tmp_path / "unused").exists()
        # fresh: no users yet (the first-admin set-up is open), its own data dir and port
        default.setup_admin()
        assert default.data_dir == tmp_path / "ahead" / "data"
        assert default.pid != own.pid and default.port != own.port
        assert own.setup_admin()  # the other one's admin is not in this one
    finally:
        for process in taken:
            process.stop()
        spares.close()
    assert all(p.process is not None and p.process.poll() is not None for p in taken)
    assert not wants_default_gateway(request.node)  # this test asks for no ``gateway``


def login_status(gateway: Gateway, username: str, password: str = ADMIN_PASSWORD) -> int:
    """The status of one password login."""
    body = {"username": username, "password": password}
    return httpx.post(f"{gateway.url}/api/v1/auth/login", json=body, timeout=60).status_code


def test_the_tests_of_a_module_share_its_gateway(
    gateway: Gateway, admin_token: str, request: pytest.FixtureRequest
) -> None:
    """Leaves the shared gateway with an admin, a setting, a connection, an audit trail
    and an unknown username locked out: the next test finds none of it."""
    assert SHARED[request.path] is gateway
    gateway.set_settings(admin_token, app__name="left by the test before")
    body = {"name": "left", "protocol": "ssh", "host": "192.0.2.1", "port": 22}
    assert gateway.api("POST", "/connections", admin_token, json=body).status_code == 201
    statuses = [login_status(gateway, "nobody", "wrong") for _ in range(6)]
    assert statuses[-1] == 429  # locked (the default: 5 failed attempts)
    PIDS.append(gateway.pid)


def test_the_next_test_finds_it_as_after_its_first_start(gateway: Gateway) -> None:
    """Run after the test above (file order): the same process, reset. Run alone: the
    module's first test, on a gateway just started."""
    assert PIDS in ([], [gateway.pid])
    token = gateway.setup_admin()  # no users: the first-admin set-up is open again
    settings = gateway.api("GET", "/settings", token).json()["settings"]
    assert settings["app.name"] == "hostgate"
    listing = gateway.api("GET", "/connections", token).json()
    assert listing["groups"] == [] and listing["ungrouped"] == []
    assert login_status(gateway, "nobody", "wrong") == 401  # no lockout left over
    assert "connection.created" not in gateway.audit_types(token)
