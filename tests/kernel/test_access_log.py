"""The access log (``hostgate.access``): one line per request, no query string, JSON fields."""

import json
import logging

import httpx
from hostgate.app import create_app

from tests.kernel.test_serve import start, stop_gracefully
from testsupport.logcapture import json_log  # noqa: F401

SECRET = "query-secret-7f3a"


def access(caplog):
    return [r for r in caplog.records if r.name == "hostgate.access"]


async def test_each_request_is_logged_with_its_fields(client, admin, caplog, json_log):  # noqa: F811
    caplog.set_level(logging.INFO)
    response = await client.get(
        f"/api/v1/audit?search={SECRET}&userId={SECRET}",
        headers={**admin.headers, "X-Request-Id": "req-abc-123"},
    )
    assert response.status_code == 200
    failed = await client.post(
        f"/api/v1/auth/login?password={SECRET}", json={"username": "nobody", "password": "x"}
    )
    assert failed.status_code == 401

    [listing, login] = access(caplog)
    assert listing.getMessage().startswith("GET /api/v1/audit 200 ")
    assert f"user={admin.id}" in listing.getMessage()
    assert listing.request_id == "req-abc-123"
    assert login.getMessage().startswith("POST /api/v1/auth/login 401 ")
    assert "user=-" in login.getMessage()

    [first, second] = json_log.lines("hostgate.access")
    assert first["method"] == "GET" and first["path"] == "/api/v1/audit"
    assert first["status"] == 200 and first["user_id"] == admin.id
    assert first["request_id"] == "req-abc-123"
    assert isinstance(first["duration_ms"], float) and first["duration_ms"] >= 0
    assert first["client"]
    assert second["status"] == 401 and second["user_id"] == "-"
    assert second["request_id"] not in ("", "-", "req-abc-123")
    assert SECRET not in caplog.text and SECRET not in json_log.text()


async def test_the_access_log_can_be_turned_off(config, caplog):
    caplog.set_level(logging.INFO)
    app = create_app(config.with_overrides(access_log=False))
    async with app.test_app() as running:
        response = await running.test_client().get("/health")
        assert response.status_code == 200
    assert not access(caplog)


def test_hostgate_serve_writes_json_access_lines(tmp_path):
    """Through a real ``hostgate serve --log-format json``: fields, and no query string."""
    process, port = start(tmp_path, "--log-format", "json")
    try:
        response = httpx.get(
            f"http://127.0.0.1:{port}/api/v1/health?ticket={SECRET}",
            headers={"X-Request-Id": "serve-req-1"},
        )
        assert response.status_code == 200
    finally:
        assert stop_gracefully(process) == 0
    output = process.stdout.read().decode()
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    [line] = [o for o in lines if o["logger"] == "hostgate.access"]
    assert line["method"] == "GET" and line["path"] == "/api/v1/health"
    assert line["status"] == 200 and line["user_id"] == "-"
    assert line["request_id"] == "serve-req-1" and line["client"] == "127.0.0.1"
    assert line["level"] == "INFO"
    assert SECRET not in output
