"""Invite links, "choose your own password at the first sign-in" and required two-step
set-up, in Chromium against a real gateway (one per module).

Each step checks what the gateway stored (users, audit) as well as the screen.
"""

from __future__ import annotations

from typing import Any

import pyotp
import pytest
from playwright.sync_api import expect

from .conftest import AXE_SOURCE, DESKTOP, PHONE, Gateway, Screens, signed_in
from .test_admin_users import open_admin, row_menu, user_named

pytestmark = pytest.mark.peer("chromium")

NINA_PASSWORD = "nina picks four words"
PAUL_GIVEN = "paul was given this one"
PAUL_OWN = "paul chose another one"
UMA_PASSWORD = "uma has a passphrase"


def second_person(browser: Any, viewport: dict[str, int] = DESKTOP) -> Any:
    """Another person's browser profile, with axe-core for the screen checks."""
    other = browser.new_context(viewport=viewport, locale="en-GB")
    other.add_init_script(path=AXE_SOURCE)
    return other


def test_invite_link_sets_own_password_and_a_used_link_says_so(
    page: Any, browser: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    open_admin(page)
    page.get_by_role("button", name="Invite user").click()
    dialog = page.get_by_role("dialog", name="Invite a user")
    expect(dialog.get_by_label("Password")).to_have_count(0)  # they choose it
    dialog.get_by_label("Username").fill("nina")
    dialog.get_by_label("Display name").fill("Nina Novak")
    dialog.get_by_label("Link works for").select_option("168")
    screens.check(page, "admin-users-invite")
    dialog.get_by_role("button", name="Create invite link").click()
    shown = page.get_by_role("dialog", name="Invite link for nina")
    link = shown.get_by_label("Invite link").input_value()
    assert link.startswith(gateway.url + "/invite#")
    screens.check(page, "admin-users-invite-link")
    shown.get_by_role("button", name="Done").click()
    row = page.get_by_role("row", name="nina")
    expect(row).to_contain_text("Invited")
    nina = user_named(gateway, admin_token, "nina")
    assert nina is not None and nina["invite"]["expired"] is False
    assert "user.invite_created" in gateway.audit_types(admin_token)

    other = second_person(browser)
    try:
        invitee = other.new_page()
        invitee.goto(link)
        expect(invitee.get_by_role("heading", name="Welcome")).to_be_visible()
        expect(invitee.get_by_text("You are invited as nina (Nina Novak)")).to_be_visible()
        screens.check(invitee, "invite-accept")
        # the one strength rule: a very weak password is refused before it is sent
        invitee.get_by_label("Choose a password").fill("password")
        invitee.get_by_label("Confirm password").fill("password")
        invitee.get_by_role("button", name="Set password and sign in").click()
        expect(invitee.get_by_label("Choose a password")).to_have_attribute("aria-invalid", "true")
        invitee.get_by_label("Choose a password").fill(NINA_PASSWORD)
        invitee.get_by_label("Confirm password").fill(NINA_PASSWORD)
        invitee.get_by_role("button", name="Set password and sign in").click()
        expect(invitee.get_by_role("heading", name="Welcome, Nina Novak")).to_be_visible()
        assert "#" not in invitee.url  # the secret left the address bar
        assert "user.invite_accepted" in gateway.audit_types(admin_token)

        # the same link again: a clear page, not an error
        used = other.new_page()
        used.goto(link)
        expect(used.get_by_role("heading", name="This invite was already used")).to_be_visible()
        screens.check(used, "invite-used")
        used.get_by_role("link", name="Go to sign-in").click()
        expect(used.get_by_role("heading", name="Welcome, Nina Novak")).to_be_visible()
    finally:
        other.close()
    page.reload()
    expect(row).to_contain_text("Can sign in")
    assert user_named(gateway, admin_token, "nina")["invite"] is None  # type: ignore[index]


def test_a_withdrawn_invite_and_a_new_link(
    page: Any, browser: Any, gateway: Gateway, admin_token: str
) -> None:
    made = gateway.api("POST", "/users/invite", admin_token, json={"username": "omar"})
    assert made.status_code == 201, made.text
    first = gateway.url + made.json()["invite"]["path"]
    signed_in(page, gateway)
    open_admin(page)
    row_menu(page, "omar")
    page.get_by_role("button", name="Withdraw invite").click()
    page.get_by_role("dialog", name="Withdraw omar's invite?").get_by_role(
        "button", name="Withdraw invite"
    ).click()
    expect(page.get_by_text("omar's invite link no longer works.")).to_be_visible()
    assert "user.invite_revoked" in gateway.audit_types(admin_token)
    assert user_named(gateway, admin_token, "omar")["invite"] is None  # type: ignore[index]

    visitor = second_person(browser, PHONE)
    try:
        gone = visitor.new_page()
        gone.goto(first)
        expect(gone.get_by_role("heading", name="This invite was withdrawn")).to_be_visible()
    finally:
        visitor.close()


def test_must_choose_own_password_before_anything_else(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    created = gateway.api(
        "POST",
        "/users",
        admin_token,
        json={"username": "paul", "password": PAUL_GIVEN, "mustChangePassword": True},
    )
    assert created.status_code == 201, created.text
    page.goto(gateway.url + "/")
    page.get_by_label("Username").fill("paul")
    page.get_by_label("Password").fill(PAUL_GIVEN)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("heading", name="Choose a new password")).to_be_visible()
    expect(page.get_by_role("navigation", name="Connections")).to_have_count(0)
    screens.check(page, "onboarding-password")
    # the API refuses everything else with the step's code until then
    code = page.evaluate("""async () => (await (await fetch("/api/v1/connections")).json()).code""")
    assert code == "password_change_required"
    page.get_by_label("Password you were given").fill(PAUL_GIVEN)
    page.get_by_label("New password").fill(PAUL_OWN)
    page.get_by_label("Confirm password").fill(PAUL_OWN)
    page.get_by_role("button", name="Change password and continue").click()
    page.get_by_role("navigation", name="Connections").wait_for()
    paul = user_named(gateway, admin_token, "paul")
    assert paul is not None and paul["mustChangePassword"] is False


def test_required_two_step_enrols_right_after_the_password(
    page: Any, browser: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    created = gateway.api(
        "POST", "/users", admin_token, json={"username": "uma", "password": UMA_PASSWORD}
    )
    assert created.status_code == 201, created.text
    # the administrator requires it of the role "user" in Settings › Security
    signed_in(page, gateway)
    page.goto(gateway.url + "/admin/settings/security")
    page.get_by_label("Require two-step verification", exact=True).select_option("roles")
    page.get_by_label("Require two-step verification roles").fill("user")
    page.get_by_role("button", name="Save changes").click()
    expect(page.get_by_role("button", name="Save changes")).to_be_disabled()
    screens.check(
        page,
        "admin-settings-require-mfa",
        scroll_to=page.get_by_label("Require two-step verification roles"),
    )
    settings = gateway.api("GET", "/settings", admin_token).json()["settings"]
    assert settings["security.require_mfa"] == "roles"

    other = second_person(browser)
    try:
        uma = other.new_page()
        uma.goto(gateway.url + "/")
        uma.get_by_label("Username").fill("uma")
        uma.get_by_label("Password").fill(UMA_PASSWORD)
        uma.get_by_role("button", name="Sign in", exact=True).click()
        expect(
            uma.get_by_role("heading", name="Set up two-step verification").first
        ).to_be_visible()
        expect(uma.get_by_role("navigation", name="Connections")).to_have_count(0)
        uma.get_by_role("button", name="Set up two-step verification").click()
        key = uma.get_by_text("Key:").locator("code").inner_text()
        screens.check(uma, "onboarding-totp")
        uma.get_by_label("Code from the app").fill(pyotp.TOTP(key).now())
        uma.get_by_role("button", name="Verify and turn on").click()
        uma.get_by_role("navigation", name="Connections").wait_for()
        listed = user_named(gateway, admin_token, "uma")
        assert listed is not None and listed["mfaEnabled"] is True
    finally:
        other.close()
