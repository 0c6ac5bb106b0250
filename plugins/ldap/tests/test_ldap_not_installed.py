"""Without the pack there are no LDAP routes and /auth/providers says false."""

from __future__ import annotations

import pytest


@pytest.fixture
def plugins() -> list[object]:
    return []


async def test_no_routes_and_provider_false(client, kernel, admin):
    """Even with auth.ldap_enabled on, no pack means 404 on its routes and ``ldap: false``."""
    await kernel.settings.update({"auth.ldap_enabled": True})
    answer = await client.post(
        "/api/v1/auth/login/ldap", json={"username": "alice", "password": "x"}
    )
    assert answer.status_code == 404
    answer = await client.post("/api/v1/auth/ldap/test", json={}, headers=admin.headers)
    assert answer.status_code == 404
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["ldap"] is False
