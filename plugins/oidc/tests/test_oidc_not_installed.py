"""Without the pack there are no OIDC routes and /auth/providers says false."""

from __future__ import annotations

import pytest


@pytest.fixture
def plugins() -> list[object]:
    return []


async def test_no_routes_and_provider_false(client, kernel):
    """Even with auth.oidc_enabled on, no pack means 404 on its routes and ``oidc: false``."""
    await kernel.settings.update({"auth.oidc_enabled": True})
    assert (await client.get("/api/v1/auth/oidc/authorize")).status_code == 404
    assert (await client.get("/api/v1/auth/oidc/callback?code=x&state=y")).status_code == 404
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["oidc"] is False
