"""/auth/providers and /settings/public follow auth.ldap_enabled when the pack is installed."""

from __future__ import annotations


async def test_providers_follow_the_setting(client, kernel):
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["ldap"] is False
    await kernel.settings.update({"auth.ldap_enabled": True})
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["ldap"] is True
    public = await (await client.get("/api/v1/settings/public")).get_json()
    assert public["settings"]["auth.ldap_enabled"] is True


async def test_pack_settings_are_registered_and_not_public(client, kernel, admin):
    public = await (await client.get("/api/v1/settings/public")).get_json()
    assert "auth.ldap_bind_password" not in public["settings"]
    everything = await (await client.get("/api/v1/settings", headers=admin.headers)).get_json()
    for key in ("auth.ldap_bind_password", "auth.ldap_starttls", "auth.ldap_tls_verify"):
        assert key in everything["settings"]
    assert everything["settings"]["auth.ldap_tls_verify"] is True
