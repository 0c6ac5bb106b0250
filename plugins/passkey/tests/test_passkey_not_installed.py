"""Without the pack there are no passkey routes and /auth/providers says false."""

from __future__ import annotations

import pytest


@pytest.fixture
def plugins() -> list[object]:
    return []


async def test_no_routes_and_provider_false(client, make_user):
    """Without the pack its routes answer 404 and /auth/providers has ``passkey: false``."""
    user = await make_user("uma")
    assert (await client.post("/api/v1/auth/login/passkey/options", json={})).status_code == 404
    assert (await client.post("/api/v1/auth/login/passkey", json={})).status_code == 404
    assert (await client.get("/api/v1/profile/passkeys", headers=user.headers)).status_code == 404
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["passkey"] is False
