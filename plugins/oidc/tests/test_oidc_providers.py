"""/auth/providers follows auth.oidc_enabled; without the pack there are no OIDC routes."""

from __future__ import annotations


async def test_providers_follow_the_setting(client, kernel):
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["oidc"] is False
    await kernel.settings.update(
        {"auth.oidc_enabled": True, "auth.oidc_button_label": "Sign in with Keycloak"}
    )
    providers = await (await client.get("/api/v1/auth/providers")).get_json()
    assert providers["oidc"] is True
    assert providers["oidcButtonLabel"] == "Sign in with Keycloak"
    public = await (await client.get("/api/v1/settings/public")).get_json()
    assert public["settings"]["auth.oidc_enabled"] is True
    assert "auth.oidc_client_secret" not in public["settings"]


async def test_bad_settings_are_refused(client, admin):
    for change in (
        {"auth.oidc_scope": "email profile"},
        {"auth.oidc_role_map": "[]"},
        {"auth.oidc_redirect_uri": "/relative/callback"},
        {"auth.oidc_token_auth_method": "private_key_jwt"},
        {"auth.oidc_ca_cert": "nope"},
    ):
        answer = await client.put("/api/v1/settings", json=change, headers=admin.headers)
        assert answer.status_code == 400, change
