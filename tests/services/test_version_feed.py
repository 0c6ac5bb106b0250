"""/version against a local release feed."""

import asyncio
import importlib.metadata
import json
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from hostgate.app import create_app
from hostgate.config import Config

from testsupport.peers import free_port


class _Feed(BaseHTTPRequestHandler):
    hits = 0
    version = "99.0.0"

    def do_GET(self):  # noqa: N802
        type(self).hits += 1
        payload = json.dumps(
            {"info": {"version": type(self).version, "release_url": "https://example.invalid/r"}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


@pytest.fixture
def feed():
    port = free_port()
    server = HTTPServer(("127.0.0.1", port), _Feed)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    _Feed.hits = 0
    yield f"http://127.0.0.1:{port}/pypi/hostgate/json"
    server.shutdown()
    server.server_close()


def with_feed(config: Config, url: str, **changes) -> Config:
    defaults = {**config.setting_defaults, "updates.feed_url": url}
    return config.with_overrides(setting_defaults=defaults, **changes)


FEED_SECONDS = 30.0
"""The feed timeout of this module's gateways (the test kit's is 1 s).

The whole check (the policy's verdict, the ``network.denied`` audit write, the TLS
set-up, the local feed's answer) must fit in it plus 1 s: at load 10 the audit write
alone outlasted the kit's 2 s, and a denied feed read as ``remote_timeout``. The feed
here answers at once, so a passing test never waits for this; the hanging-feed test
sets its own.
"""


@pytest.fixture
def config(config, feed):
    return with_feed(config, feed, version_timeout_seconds=FEED_SECONDS)


async def test_version_from_feed_is_cached_and_force_bypasses(client, admin, kernel):
    body = await (await client.get("/api/v1/version")).get_json()
    assert body["latest"] == "99.0.0" and body["updateAvailable"] is True
    assert body["releaseUrl"] == "https://example.invalid/r" and body["fetchError"] is None
    await client.get("/api/v1/version")
    assert _Feed.hits == 1
    _Feed.version = "0.0.1"
    body = await (await client.get("/api/v1/version?force=true", headers=admin.headers)).get_json()
    assert _Feed.hits == 2 and body["updateAvailable"] is False and body["releaseUrl"] is None
    _Feed.version = "99.0.0"
    from hostgate.db.models.audit import AuditEntry
    from sqlmodel import select

    async with kernel.db.session() as session:
        types = (await session.exec(select(AuditEntry.event_type))).all()
    assert "system.version_check" in types


@asynccontextmanager
async def silent_feed(*, trickle: bool) -> AsyncIterator[str]:
    """A release feed that accepts connections and never finishes an answer.

    ``trickle=False``: it reads nothing and sends nothing. ``trickle=True``: it
    sends a status line and then one header byte at a time, forever, so that no
    single read ever waits long enough for a per-read timeout to fire.
    """
    forever = asyncio.Event()
    writers: list[asyncio.StreamWriter] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        if trickle:
            writer.write(b"HTTP/1.1 200 OK\r\n")
            while not writer.is_closing():
                writer.write(b"X")
                await writer.drain()
                await asyncio.sleep(0.05)
        await forever.wait()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}/pypi/hostgate/json"
    finally:
        forever.set()
        for writer in writers:
            writer.close()
        server.close()


@pytest.mark.parametrize("trickle", [False, True], ids=["silent", "trickling"])
async def test_hanging_feed_gives_fetch_error(config: Config, trickle: bool) -> None:
    """A feed that accepts and never answers yields fetchError, not a hung /version.

    The 20 s bound only catches a hang; the gateway's own feed timeout is lowered
    so the test is quick. ``current`` is still the kernel's installed version.
    """
    async with silent_feed(trickle=trickle) as url:
        app = create_app(with_feed(config, url, version_timeout_seconds=0.3))
        async with app.test_app():
            client = app.test_client()
            response = await asyncio.wait_for(client.get("/api/v1/version"), 20)
            assert response.status_code == 200
            body = await response.get_json()
    assert body["fetchError"] and "could not reach the release feed" in body["fetchError"]
    assert body["latest"] is None and body["updateAvailable"] is False
    assert body["current"] == importlib.metadata.version("hostgate-kernel")


async def test_anonymous_force_is_served_from_the_cache(client, admin):
    for _ in range(5):
        body = await (await client.get("/api/v1/version?force=true")).get_json()
        assert body["latest"] == "99.0.0"
    assert _Feed.hits == 1
    await client.get("/api/v1/version?force=1", headers=admin.headers)
    assert _Feed.hits == 2


async def test_forced_checks_are_rate_limited_per_user(client, admin, make_user):
    for _ in range(5):
        response = await client.get("/api/v1/version?force=true", headers=admin.headers)
        assert response.status_code == 200
    limited = await client.get("/api/v1/version?force=true", headers=admin.headers)
    assert limited.status_code == 429 and int(limited.headers["Retry-After"]) >= 1
    assert (await limited.get_json())["code"] == "rate_limited"
    other = await make_user("other")
    response = await client.get("/api/v1/version?force=true", headers=other.headers)
    assert response.status_code == 200
    assert _Feed.hits == 6


async def test_an_empty_feed_url_makes_no_outbound_call(client, admin, kernel):
    await kernel.settings.update({"updates.feed_url": ""})
    for headers in ({}, admin.headers):
        response = await client.get("/api/v1/version?force=true", headers=headers)
        body = await response.get_json()
        assert body["latest"] is None and body["fetchError"] is None
        assert body["updateAvailable"] is False
    assert _Feed.hits == 0
    # a new URL is used at once, whatever the cache holds
    bad = await client.put(
        "/api/v1/settings", headers=admin.headers, json={"updates.feed_url": "ftp://x/feed"}
    )
    assert bad.status_code == 400 and "updates.feed_url" in (await bad.get_json())["error"]


async def test_the_feed_ignores_proxy_variables(client, monkeypatch):
    closed = f"http://127.0.0.1:{free_port()}"
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "all_proxy"):
        monkeypatch.setenv(name, closed)
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    body = await (await client.get("/api/v1/version")).get_json()
    assert body["latest"] == "99.0.0" and _Feed.hits == 1


async def test_the_feed_obeys_the_network_policy(config, feed):
    """With the shipped defaults loopback is protected: the local feed is not contacted."""
    app = create_app(config.with_overrides(setting_defaults={"updates.feed_url": feed}))
    async with app.test_app():
        body = await (await app.test_client().get("/api/v1/version")).get_json()
        kernel = app.extensions["hostgate"]
        from hostgate.db.models.audit import AuditEntry
        from sqlmodel import select

        async with kernel.db.session() as session:
            query = select(AuditEntry).where(AuditEntry.event_type == "network.denied")
            [denied] = (await session.exec(query)).all()
    assert body["fetchError"] == "could not reach the release feed: target_denied"
    assert body["latest"] is None and _Feed.hits == 0
    assert denied.details["purpose"] == "update check"
