"""/version against a local release feed."""

import json
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest

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


@pytest.fixture
def config(config, feed):
    return config.with_overrides(version_feed_url=feed)


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
