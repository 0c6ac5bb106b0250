"""The e2e helpers: the ``Gateway``'s API calls share one HTTP client, closed when it
stops; consecutive e2e tests share one Chromium."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from hostgate.testing import start_receiver

from .conftest import CHROMIUM_SHARED, Gateway

SEEN: list[Any] = []


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
    """Run after the test above (file order): not closed and launched again in between."""
    assert len(SEEN) == 1 and SEEN[0] is browser and browser.is_connected()
    context = browser.new_context()  # each test's own profile, as the ``context`` fixture
    try:
        assert context.pages == [] and context.cookies() == []
    finally:
        context.close()
