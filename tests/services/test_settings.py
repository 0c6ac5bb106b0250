"""The settings registry over HTTP."""

import pytest
from hostgate import SECRET_MASK
from hostgate.default_settings import KERNEL_SETTINGS

SPEC_PUBLIC = {
    "app.name",
    "app.logo",
    "health_monitor.enabled",
    "ssh.font_family",
    "ssh.font_size",
    "ssh.cursor_style",
    "ssh.cursor_blink",
    "ssh.theme",
    "ssh.scrollback",
    "auth.ldap_enabled",
    "auth.oidc_enabled",
    "auth.oidc_button_label",
    "security.idle_timeout_minutes",
    "system.insecure_key",
}
SPEC_PRIVATE = {
    "security.max_login_attempts",
    "security.lockout_duration_minutes",
    "security.session_lifetime_days",
    "recordings.enabled",
    "recordings.max_size_mb",
    "auth.ldap_url",
    "auth.ldap_bind_dn",
    "auth.ldap_search_base",
    "auth.ldap_username_attr",
    "auth.oidc_issuer",
    "auth.oidc_client_id",
}


async def test_public_settings_are_exactly_the_spec_keys(client):
    response = await client.get("/api/v1/settings/public")
    assert response.status_code == 200
    settings = (await response.get_json())["settings"]
    assert set(settings) == SPEC_PUBLIC
    assert settings["system.insecure_key"] is False  # the test key comes from config
    assert settings["ssh.font_size"] == 14 and isinstance(settings["ssh.cursor_blink"], bool)


async def test_every_spec_key_is_registered(kernel):
    assert set(kernel.settings.specs) >= SPEC_PUBLIC | SPEC_PRIVATE
    assert {s.key for s in KERNEL_SETTINGS} <= set(kernel.settings.specs)


async def test_admin_sees_all_and_updates_with_audit(client, admin, kernel):
    response = await client.get("/api/v1/settings", headers=admin.headers)
    settings = (await response.get_json())["settings"]
    assert set(settings) >= SPEC_PUBLIC | SPEC_PRIVATE
    response = await client.put(
        "/api/v1/settings",
        json={"app.name": "Gate", "security.max_login_attempts": 7, "ssh.font_size": 13.5},
        headers=admin.headers,
    )
    assert response.status_code == 200
    assert await response.get_json() == {"success": True}
    public = (await (await client.get("/api/v1/settings/public")).get_json())["settings"]
    assert public["app.name"] == "Gate" and public["ssh.font_size"] == 13.5
    assert kernel.settings.get("security.max_login_attempts") == 7
    from hostgate.db.models.audit import AuditEntry
    from sqlmodel import select

    async with kernel.db.session() as session:
        entries = (
            await session.exec(
                select(AuditEntry).where(AuditEntry.event_type == "settings.updated")
            )
        ).all()
    assert len(entries) == 1
    assert entries[0].details["after"]["app.name"] == "Gate"
    assert entries[0].user_id == admin.id


async def test_bad_values_change_nothing(client, admin, kernel):
    cases = [
        {"app.name": 5},
        {"security.max_login_attempts": "7"},
        {"security.max_login_attempts": 2.5},
        {"ssh.cursor_blink": "true"},
        {"ssh.cursor_style": "triangle"},
        {"security.idle_timeout_minutes": -1},
        {"no.such.key": 1},
        {"system.insecure_key": True},
        {"app.logo": None, "recordings.enabled": "yes"},
        {"ssh.font_size": float("nan")} if False else {"ssh.font_size": 1000},
    ]
    for body in cases:
        response = await client.put("/api/v1/settings", json=body, headers=admin.headers)
        assert response.status_code == 400, body
        assert (await response.get_json())["code"] == "invalid_input"
    assert kernel.settings.get("app.logo") is None
    assert kernel.settings.get("recordings.enabled") is True
    assert kernel.settings.get("app.name") == "hostgate"


async def test_nullable_setting_accepts_null(client, admin, kernel):
    response = await client.put(
        "/api/v1/settings", json={"app.logo": "data:image/png;base64,AA=="}, headers=admin.headers
    )
    assert response.status_code == 200
    response = await client.put("/api/v1/settings", json={"app.logo": None}, headers=admin.headers)
    assert response.status_code == 200
    assert kernel.settings.get("app.logo") is None


async def test_secret_settings_are_sealed_and_masked(app, client, admin, kernel):
    from hostgate import SettingSpec, hookimpl

    kernel.settings.specs["test.secret"] = SettingSpec("test.secret", str, "", secret=True)
    response = await client.put(
        "/api/v1/settings", json={"test.secret": "hunter22"}, headers=admin.headers
    )
    assert response.status_code == 200
    listed = (await (await client.get("/api/v1/settings", headers=admin.headers)).get_json())[
        "settings"
    ]
    assert listed["test.secret"] == SECRET_MASK
    assert kernel.settings.get("test.secret") == "hunter22"
    # Sending the mask back keeps the stored value.
    await client.put("/api/v1/settings", json={"test.secret": SECRET_MASK}, headers=admin.headers)
    assert kernel.settings.get("test.secret") == "hunter22"
    from hostgate.db.models.settings import SettingValue

    async with kernel.db.session() as session:
        row = await session.get(SettingValue, "test.secret")
    assert row.value.startswith("hg1:") and "hunter22" not in row.value
    del hookimpl


def test_the_config_files_settings_table_replaces_defaults(tmp_path, config):
    import pytest
    from hostgate.app import create_app
    from hostgate.config import ConfigError, load_config

    toml = tmp_path / "hostgate.toml"
    toml.write_text('port = 7001\n[settings]\n"network.protected" = "metadata"\n')
    assert load_config(env={}, config_file=toml).setting_defaults == {
        "network.protected": "metadata"
    }
    # the older variable names the default of updates.feed_url; empty turns the check off
    assert load_config(env={"HOSTGATE_VERSION_URL": ""}).setting_defaults == {
        "updates.feed_url": ""
    }
    for bad, message in [
        ({"no.such_key": 1}, "[settings] no.such_key: no such setting"),
        ({"security.max_login_attempts": "many"}, "must be a whole number"),
    ]:
        with pytest.raises(ConfigError) as refused:
            create_app(config.with_overrides(setting_defaults=bad))
        assert message in str(refused.value)


async def test_a_stored_value_wins_over_the_configured_default(config, admin, client, kernel):
    # the suite's config file defaults (TEST_SETTING_DEFAULTS) are such defaults
    assert kernel.settings.get("network.protected") == "link-local, metadata"
    await kernel.settings.update({"network.protected": "loopback"})
    assert kernel.settings.get("network.protected") == "loopback"
    await kernel.settings.load()
    assert kernel.settings.get("network.protected") == "loopback"


BAD_URLS = [
    ("auth.ldap_url", "http://ldap.example.org", "must be an ldap:// or ldaps:// URL"),
    ("auth.ldap_url", "ldap.example.org", "must be an ldap:// or ldaps:// URL"),
    ("auth.ldap_url", "ldap://[::1", "must be an ldap:// or ldaps:// URL"),
    ("auth.ldap_url", "ldap://", "must be an ldap:// or ldaps:// URL"),
    ("auth.ldap_url", "ldap://host:99999", "must be an ldap:// or ldaps:// URL"),
    ("auth.ldap_url", "ldap://ho st", "no spaces or control characters"),
    ("auth.oidc_issuer", "http://idp.example.org", "must be an https:// URL"),
    ("auth.oidc_issuer", "idp.example.org", "must be an https:// URL"),
    ("auth.oidc_issuer", "https://[::1", "must be an https:// URL"),
    ("auth.oidc_issuer", "https://idp.example.org/\x00", "no spaces or control characters"),
    ("auth.oidc_issuer", "https://idp.example.org/?realm=x", "without a query or fragment"),
]


@pytest.mark.parametrize(("key", "value", "problem"), BAD_URLS)
async def test_a_bad_url_setting_is_refused_when_saved_and_changes_nothing(
    client, admin, kernel, key, value, problem
):
    response = await client.put(
        "/api/v1/settings", json={"app.name": "Changed", key: value}, headers=admin.headers
    )
    assert response.status_code == 400
    body = await response.get_json()
    assert body["code"] == "invalid_input"
    assert body["error"].startswith(f"{key}: ") and problem in body["error"]
    # the request's other key is not written either
    assert kernel.settings.get("app.name") == "hostgate"
    assert kernel.settings.get(key) == ""


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("auth.ldap_url", "ldaps://ldap.example.org"),
        ("auth.ldap_url", "LDAP://[::1]:1389"),
        ("auth.ldap_url", " ldap://127.0.0.1:389 "),
        ("auth.oidc_issuer", "https://idp.example.org/realms/main/"),
        ("auth.oidc_issuer", "http://127.0.0.1:8080"),
        ("auth.oidc_issuer", "http://localhost/issuer"),
        ("auth.ldap_url", ""),
    ],
)
async def test_a_usable_url_setting_is_stored(client, admin, kernel, key, value):
    response = await client.put("/api/v1/settings", json={key: value}, headers=admin.headers)
    assert response.status_code == 200, await response.get_json()
    assert kernel.settings.get(key) == value


async def test_the_schema_marks_url_settings_as_checked(client, admin):
    response = await client.get("/api/v1/settings/schema", headers=admin.headers)
    described = {s["key"]: s for s in (await response.get_json())["settings"]}
    assert described["auth.ldap_url"]["checked"] is True
    assert described["auth.oidc_issuer"]["checked"] is True
