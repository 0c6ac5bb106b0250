"""Administration, settings: every key of the registry (packs' included) in its group, a
refusal said next to its field, the app's name and logo in the header and on the sign-in
screen, and LDAP's "Test connection" against the suite's real slapd.
"""

from __future__ import annotations

import base64
import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.slapd import SlapdServer, slapd_server  # noqa: F401 - the fixture

from .conftest import Gateway, Screens, signed_in
from .test_admin_users import open_admin

pytestmark = pytest.mark.peer("chromium")

# a 2x2 red PNG
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAIAAAACCAIAAAD91JpzAAAAEklEQVR4nGP4z8DAwMDAwMAAAAr+Af9xV/RqAAAAAElFTkSuQmCC"
)


def settings_of(gateway: Gateway, token: str) -> dict[str, Any]:
    response = gateway.api("GET", "/settings", token)
    assert response.status_code == 200, response.text
    return response.json()["settings"]  # type: ignore[no-any-return]


def test_every_setting_has_a_place_and_refusals_are_explained(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens, tmp_path: Path
) -> None:
    schema = gateway.api("GET", "/settings/schema", admin_token).json()["settings"]
    signed_in(page, gateway)
    open_admin(page)
    page.get_by_role("navigation", name="Administration").get_by_role(
        "link", name="Settings"
    ).click()
    expect(page.get_by_role("heading", name="Branding")).to_be_visible()
    assert page.url.endswith("/admin/settings/app")

    # every key of the registry is on the screen, in the group the API gives it, and
    # the settings the ldap pack registers say so
    groups = page.get_by_role("navigation", name="Setting groups").get_by_role("link")
    titles = groups.all_inner_texts()
    assert len(titles) == len({entry["group"] for entry in schema})
    seen: set[str] = set()
    for title in titles:
        groups.filter(has_text=title).first.click()
        expect(page.get_by_role("heading", name=title, exact=True)).to_be_visible()
        form = page.get_by_role("form", name=title)
        # the key is on the help's hover title, not in the help people read
        for hint in form.get_by_title(re.compile(r"^Setting ")).all():
            seen.add(str(hint.get_attribute("title")).removeprefix("Setting "))
    assert seen == {entry["key"] for entry in schema}
    from_ldap = [e["key"] for e in schema if e["pack"] == "ldap"]
    assert "auth.ldap_bind_password" in from_ldap
    page.goto(gateway.url + "/admin/settings/auth.ldap")
    expect(page.get_by_label("Bind password")).to_have_accessible_description(
        "Password of the service bind DN (stored encrypted). From the ldap pack."
    )

    # a value out of bounds: the server's reason beside the field, nothing stored
    page.goto(gateway.url + "/admin/settings/security")
    attempts = page.get_by_label("Max login attempts")
    expect(attempts).to_have_value("5")
    expect(attempts).to_have_accessible_description(
        "Failed logins before an account locks. From 1 to 1000. Default: 5."
    )
    attempts.fill("0")
    page.get_by_label("Session lifetime (days)").fill("3")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Must be at least 1.")).to_be_visible()
    expect(attempts).to_have_attribute("aria-invalid", "true")
    stored = settings_of(gateway, admin_token)
    assert stored["security.max_login_attempts"] == 5
    assert stored["security.session_lifetime_days"] != 3  # the change set is all or nothing
    attempts.fill("seven")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Must be a whole number.")).to_be_visible()
    attempts.fill("7")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Security: saved.")).to_be_visible()
    expect(page.get_by_role("button", name="Save changes")).to_be_disabled()
    stored = settings_of(gateway, admin_token)
    assert (stored["security.max_login_attempts"], stored["security.session_lifetime_days"]) == (
        7,
        3,
    )
    screens.check(page, "admin-settings")

    # name and logo: the header follows at once, the sign-in screen after signing out
    page.goto(gateway.url + "/admin/settings/app")
    page.get_by_label("Name", exact=True).fill("Acme Gate")
    logo = tmp_path / "logo.png"
    logo.write_bytes(PNG)
    page.get_by_label("Upload logo").set_input_files(str(logo))
    expect(page.get_by_role("img", name="The logo")).to_be_visible()
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Branding: saved.")).to_be_visible()
    stored = settings_of(gateway, admin_token)
    data_url = "data:image/png;base64," + base64.b64encode(PNG).decode()
    assert (stored["app.name"], stored["app.logo"]) == ("Acme Gate", data_url)
    brand = page.get_by_role("banner").get_by_role("link", name="Acme Gate")
    expect(brand).to_be_visible()
    expect(brand.locator("img")).to_have_attribute("src", data_url)
    screens.check(page, "admin-settings-branding")
    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_text("Acme Gate")).to_be_visible()
    expect(page.locator(f'img[src="{data_url}"]')).to_have_count(1)
    assert page.title() == "Acme Gate"

    # an unsupported file is refused before anything is sent
    signed_in(page, gateway)
    page.goto(gateway.url + "/admin/settings/app")
    text = tmp_path / "notes.txt"
    text.write_text("not an image")
    page.get_by_label("Replace logo").set_input_files(str(text))
    expect(page.get_by_role("alert")).to_have_text("Choose a PNG, SVG, JPEG, WebP or GIF image.")
    page.get_by_role("button", name="Remove logo").click()
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("Branding: saved.")).to_be_visible()
    assert settings_of(gateway, admin_token)["app.logo"] is None


def test_ldap_test_connection(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    screens: Screens,
    slapd_server: SlapdServer,  # noqa: F811
) -> None:
    signed_in(page, gateway)
    page.goto(gateway.url + "/admin/settings/auth.ldap")
    expect(page.get_by_role("heading", name="LDAP directory")).to_be_visible()
    page.get_by_label("Enabled").check()
    page.get_by_label("URL", exact=True).fill(slapd_server.url)
    page.get_by_label("Bind DN").fill(slapd_server.bind_dn)
    page.get_by_label("Bind password").fill("not the password")
    page.get_by_label("Search base", exact=True).fill(slapd_server.suffix)

    # unsaved values are tested; LDAP must be on for the test, so save "enabled" only first
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_role("alert")).to_contain_text("LDAP")
    gateway.set_settings(admin_token, auth__ldap_enabled=True)

    page.get_by_role("button", name="Test connection").click()
    failure = page.get_by_role("alert")
    expect(failure).to_contain_text("The test failed:")
    assert "not the password" not in failure.inner_text()

    page.get_by_label("Bind password").fill(slapd_server.bind_password)
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_text("The directory answered")).to_be_visible()
    screens.check(page, "admin-settings-ldap")

    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_text("LDAP directory: saved.")).to_be_visible()
    stored = settings_of(gateway, admin_token)
    assert stored["auth.ldap_url"] == slapd_server.url
    assert stored["auth.ldap_bind_password"] not in ("", slapd_server.bind_password)  # masked
    # the stored password is "set" now and stays write-only
    expect(page.get_by_role("group", name="Bind password")).to_contain_text("set")
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_text("The directory answered")).to_be_visible()
    assert "auth.ldap_tested" in gateway.audit_types(admin_token)


def test_a_non_empty_allow_list_is_explained_before_it_is_saved(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    channel = gateway.api(
        "PUT", "/notifications/channels/webhook", admin_token,
        json={"enabled": True, "config": {"url": "https://hooks.example.org/in"}},
    )  # fmt: skip
    assert channel.status_code == 200, channel.text
    before = settings_of(gateway, admin_token)
    # the shipped protected list (the suite's gateway allows loopback for its servers)
    gateway.set_settings(
        admin_token,
        updates__feed_url="https://updates.example.com/feed.json",
        network__protected="loopback, link-local, metadata",
    )
    try:
        allow_list_warning(page, gateway, admin_token, screens)
    finally:
        gateway.set_settings(
            admin_token,
            network__allow=before["network.allow"],
            network__protected=before["network.protected"],
            updates__feed_url=before["updates.feed_url"],
        )
        gateway.api(
            "PUT", "/notifications/channels/webhook", admin_token, json={"enabled": False}
        )  # fmt: skip


def allow_list_warning(page: Any, gateway: Gateway, admin_token: str, screens: Screens) -> None:
    """The steps of the test above, with the shipped protected list in place."""
    signed_in(page, gateway)
    page.goto(gateway.url + "/admin/settings/network")
    help_box = page.get_by_test_id("network-policy-help")
    expect(help_box).to_contain_text("A non-empty allow list means “only these”")

    # adding loopback to the allow list, as one would: the warning says what it refuses
    page.get_by_label("Allow", exact=True).fill("loopback")
    page.get_by_role("button", name="Save changes").click()
    warning = page.get_by_role("alertdialog", name="Allow only the targets listed?")
    expect(warning).to_contain_text("every connection target the list does not cover")
    expect(warning).to_contain_text("Notification channel Webhook (hooks.example.org)")
    expect(warning).to_contain_text("The update check (updates.example.com)")
    screens.check(page, "settings-allow-list-warning")
    warning.get_by_role("button", name="Cancel").click()
    assert settings_of(gateway, admin_token)["network.allow"] == ""

    # "allow loopback" is really the protected-list change: the allow list stays empty
    page.get_by_role("button", name="Save changes").click()
    warning.get_by_role("button", name="Allow loopback instead").click()
    expect(page.get_by_role("status").filter(has_text="saved")).to_be_visible()
    stored = settings_of(gateway, admin_token)
    assert stored["network.allow"] == ""
    assert "loopback" not in stored["network.protected"]
    expect(help_box).to_contain_text("Loopback is not protected")

    # saving a real allow list anyway is a choice made knowingly
    page.get_by_label("Allow", exact=True).fill("10.0.0.0/8")
    page.get_by_role("button", name="Save changes").click()
    warning.get_by_role("button", name="Allow only these").click()
    expect(page.get_by_role("status").filter(has_text="saved")).to_be_visible()
    assert settings_of(gateway, admin_token)["network.allow"] == "10.0.0.0/8"
