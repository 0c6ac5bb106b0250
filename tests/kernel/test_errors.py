"""One error shape for every failure under /api/v1, never a 500."""

import pytest


def assert_error_shape(body, code=None):
    assert set(body) >= {"error", "code"}
    assert isinstance(body["error"], str) and body["error"]
    if code:
        assert body["code"] == code


async def test_unknown_route_is_json_404(client):
    response = await client.get("/api/v1/no/such/route")
    assert response.status_code == 404
    assert_error_shape(await response.get_json(), "not_found")


async def test_wrong_method_is_json_405(client):
    response = await client.delete("/api/v1/health")
    assert response.status_code == 405
    assert_error_shape(await response.get_json(), "method_not_allowed")
    assert "GET" in response.headers["Allow"]


async def test_no_token_is_401_whatever_the_body(client):
    response = await client.put(
        "/api/v1/settings", data=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert response.status_code == 401
    assert_error_shape(await response.get_json(), "not_authenticated")


@pytest.mark.parametrize(
    "payload",
    [b"{not json", b"[1, 2", b"\xff\xfe", b'"just a string"', b"[]", b"{}", b"null"],
)
async def test_garbage_bodies_are_400(client, admin, payload):
    response = await client.put(
        "/api/v1/settings",
        data=payload,
        headers={**admin.headers, "Content-Type": "application/json"},
    )
    assert response.status_code == 400, await response.get_data()
    assert_error_shape(await response.get_json())


async def test_oversize_body_is_413(client, admin, kernel):
    big = b'{"app.name": "' + b"x" * (kernel.config.max_body_bytes + 10) + b'"}'
    response = await client.put(
        "/api/v1/settings", data=big, headers={**admin.headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 413
    assert_error_shape(await response.get_json(), "payload_too_large")


async def test_bad_token_is_401(client):
    response = await client.get("/api/v1/settings", headers={"Authorization": "Bearer nonsense"})
    assert response.status_code == 401
    assert_error_shape(await response.get_json(), "invalid_token")


async def test_missing_permission_is_403(client, make_user):
    plain = await make_user("plain", role="user")
    response = await client.get("/api/v1/settings", headers=plain.headers)
    assert response.status_code == 403
    assert_error_shape(await response.get_json(), "forbidden")


async def test_responses_carry_request_id_and_no_store(client):
    response = await client.get("/api/v1/health", headers={"X-Request-Id": "abc123"})
    assert response.headers["X-Request-Id"] == "abc123"
    assert response.headers["Cache-Control"] == "no-store"
