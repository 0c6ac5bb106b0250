"""/health and /version."""

from hostgate.timefmt import parse_iso


async def test_health_at_api_and_root(client):
    for path in ("/api/v1/health", "/health"):
        response = await client.get(path)
        assert response.status_code == 200
        body = await response.get_json()
        assert body["status"] == "ok"
        assert body["timestamp"].endswith("Z") and len(body["timestamp"]) == 24
        parse_iso(body["timestamp"])


async def test_version_offline_reports_fetch_error(client):
    response = await client.get("/api/v1/version")
    assert response.status_code == 200
    body = await response.get_json()
    assert set(body) == {"current", "latest", "updateAvailable", "releaseUrl", "fetchError"}
    assert body["latest"] is None and body["updateAvailable"] is False
    assert "could not reach" in body["fetchError"]


def test_version_tuple_ordering():
    from hostgate.services.version import version_tuple

    assert version_tuple("v1.10.0") > version_tuple("1.9.9")
    assert version_tuple("0.1.0") == (0, 1, 0)
    assert version_tuple("2.0.0rc1") == (2, 0, 0)
