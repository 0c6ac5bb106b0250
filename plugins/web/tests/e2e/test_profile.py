"""The profile screen: details, password, TOTP, passkeys, sign-in sessions, terminal settings.

Each test checks what the gateway stored (through the API with a token) as well as
what the screen shows.
"""

from __future__ import annotations

import re
from typing import Any

import httpx
import pyotp
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import Gateway, Screens, signed_in
from .terminals import NO_WEBGL

pytestmark = pytest.mark.peer("chromium")

FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
NEW_PASSWORD = "a much longer new passphrase"


def open_profile(page: Any) -> None:
    """Through the account menu, the way a person gets there."""
    page.get_by_role("button", name="account menu").click()
    page.get_by_role("link", name="Your profile").click()
    expect(page.get_by_role("heading", name="Your profile")).to_be_visible()


def profile_of(gateway: Gateway, token: str) -> dict[str, Any]:
    response = gateway.api("GET", "/profile", token)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def me_status(gateway: Gateway, token: str) -> int:
    return gateway.api("GET", "/auth/me", token).status_code


def test_details_and_password(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    open_profile(page)
    assert page.url.endswith("/profile")
    screens.check(page, "profile")

    # a bad e-mail: the sentence sits next to the e-mail field, nothing is stored
    page.get_by_label("Display name").fill("Ada Admin")
    page.get_by_label("E-mail").fill("not-an-address")
    page.get_by_role("button", name="Save details").click()
    email = page.get_by_label("E-mail")
    expect(email).to_have_attribute("aria-invalid", "true")
    expect(email).to_have_accessible_description(re.compile("Must be an e-mail address"))
    assert profile_of(gateway, admin_token)["displayName"] == "Admin"

    page.get_by_label("E-mail").fill("ada@example.org")
    page.get_by_role("button", name="Save details").click()
    expect(page.get_by_text("Your details are saved.")).to_be_visible()
    stored = profile_of(gateway, admin_token)
    assert (stored["displayName"], stored["email"]) == ("Ada Admin", "ada@example.org")
    assert "profile.updated" in gateway.audit_types(admin_token)
    # the top bar follows at once
    expect(page.get_by_role("button", name="account menu")).to_contain_text("Ada Admin")

    # password: the wrong current one is said next to that field, nothing changes
    page.get_by_label("Current password").fill("wrong password!")
    page.get_by_label("New password", exact=True).fill(NEW_PASSWORD)
    page.get_by_label("New password again").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_label("Current password")).to_have_accessible_description(
        "That is not your current password."
    )
    assert me_status(gateway, admin_token) == 200

    page.get_by_label("New password again").fill(NEW_PASSWORD + "x")
    page.get_by_label("Current password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_label("New password again")).to_have_accessible_description(
        "The two new passwords differ."
    )

    page.get_by_label("New password again").fill(NEW_PASSWORD)
    page.get_by_role("button", name="Change password").click()
    expect(page.get_by_text("Your password is changed")).to_be_visible()
    # the other session (the API token) is ended, this browser stays signed in
    assert me_status(gateway, admin_token) == 401
    login = httpx.post(
        f"{gateway.url}/api/v1/auth/login",
        json={"username": "admin", "password": NEW_PASSWORD},
        timeout=60,
    )
    assert login.status_code == 200, login.text
    page.reload()
    expect(page.get_by_role("heading", name="Your profile")).to_be_visible()


def test_totp_set_up_with_the_qr_code_and_turned_off(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    page.goto(gateway.url + "/profile")
    page.get_by_role("button", name="Set up two-step verification").click()
    qr = page.get_by_role("img", name="QR code for your authenticator app")
    expect(qr).to_be_visible()
    assert qr.get_attribute("src").startswith("data:image/png;base64,")
    assert page.evaluate("(img) => img.naturalWidth", qr.element_handle()) > 0
    key = page.get_by_text(re.compile(r"^Key: ")).inner_text().removeprefix("Key: ").strip()
    totp = pyotp.TOTP(key)
    screens.check(page, "profile-totp-setup", scroll_to=qr)

    code = page.get_by_label("Code from the app")
    code.fill("000000" if totp.now() != "000000" else "111111")
    page.get_by_role("button", name="Verify and turn on").click()
    expect(code).to_have_accessible_description(re.compile("That code is not right"))
    status = gateway.api("GET", "/profile/mfa/status", admin_token).json()
    assert status == {"enabled": False}

    code.fill(totp.now())
    page.get_by_role("button", name="Verify and turn on").click()
    expect(page.get_by_text("Two-step verification is on.")).to_be_visible()
    assert gateway.api("GET", "/profile/mfa/status", admin_token).json() == {"enabled": True}
    assert "auth.mfa_enabled" in gateway.audit_types(admin_token)

    # off again: the password is required and a wrong one is said next to the field
    page.get_by_role("button", name="Turn off two-step verification").click()
    password = page.get_by_label("Your password, to confirm")
    expect(password).to_have_accessible_description("Enter your password to turn it off.")
    password.fill("not my password")
    page.get_by_role("button", name="Turn off two-step verification").click()
    expect(password).to_have_accessible_description("That is not your current password.")
    assert gateway.api("GET", "/profile/mfa/status", admin_token).json() == {"enabled": True}
    password.fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Turn off two-step verification").click()
    expect(page.get_by_text("Two-step verification is off")).to_be_visible()
    assert gateway.api("GET", "/profile/mfa/status", admin_token).json() == {"enabled": False}


def test_passkeys_register_rename_delete(
    page: Any, gateway: Gateway, admin_token: str, virtual_authenticator: str, screens: Screens
) -> None:
    # WebAuthn needs a domain for the relying party: localhost, not 127.0.0.1
    origin = f"http://localhost:{gateway.port}"
    page.goto(origin + "/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("navigation", name="Connections").wait_for()
    page.goto(origin + "/profile")
    expect(page.get_by_text("You have no passkeys yet.")).to_be_visible()

    name = page.get_by_label("Name of the new passkey")
    page.get_by_role("button", name="Add passkey").click()
    expect(name).to_have_accessible_description(re.compile("Give the passkey a name"))

    name.fill("Work laptop")
    page.get_by_role("button", name="Add passkey").click()
    keys = page.get_by_role("list", name="Your passkeys")
    expect(keys).to_contain_text("Work laptop")
    stored = gateway.api("GET", "/profile/passkeys", admin_token).json()["passkeys"]
    assert [p["name"] for p in stored] == ["Work laptop"]
    screens.check(page, "profile-passkeys", scroll_to=keys)

    page.get_by_role("button", name="Rename Work laptop").click()
    page.get_by_label("New name for Work laptop").fill("Old laptop")
    page.get_by_role("button", name="Save name").click()
    expect(keys).to_contain_text("Old laptop")
    stored = gateway.api("GET", "/profile/passkeys", admin_token).json()["passkeys"]
    assert [p["name"] for p in stored] == ["Old laptop"]

    page.get_by_role("button", name="Delete Old laptop").click()
    dialog = page.get_by_role("dialog", name="Delete the passkey Old laptop?")
    dialog.get_by_role("button", name="Delete passkey").click()
    expect(page.get_by_text("You have no passkeys yet.")).to_be_visible()
    assert gateway.api("GET", "/profile/passkeys", admin_token).json()["passkeys"] == []


def test_sessions_listed_and_revoked(
    page: Any, browser: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    # another browser (Firefox on Linux, as far as the gateway can tell) signed in too
    other = browser.new_context(user_agent=FIREFOX_LINUX)
    try:
        other_page = other.new_page()
        signed_in(other_page, gateway)

        def other_status() -> int:
            return int(other.request.get(gateway.url + "/api/v1/auth/me").status)

        assert other_status() == 200

        signed_in(page, gateway)
        page.goto(gateway.url + "/profile")
        sessions = page.get_by_role("list", name="Sign-in sessions")
        expect(sessions.get_by_role("listitem")).to_have_count(3)  # this one, Firefox, the API
        expect(sessions.get_by_role("listitem").filter(has_text="This device")).to_contain_text(
            "Chrome"
        )
        firefox = sessions.get_by_role("listitem").filter(has_text="Firefox on Linux")
        expect(firefox).to_contain_text("127.0.0.1")
        screens.check(page, "profile-sessions", scroll_to=sessions)

        firefox.get_by_role("button", name=re.compile("^Sign out Firefox on Linux")).click()
        expect(page.get_by_text("Signed out Firefox on Linux.")).to_be_visible()
        expect(sessions.get_by_role("listitem")).to_have_count(2)
        # the other browser's cookie is refused from now on
        assert other_status() == 401
        other_page.reload()
        expect(other_page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
        assert me_status(gateway, admin_token) == 200

        # all others: the API token goes too, this browser stays
        page.get_by_role("button", name="Sign out all other sessions").click()
        page.get_by_role("dialog").get_by_role("button", name="Sign them out").click()
        expect(page.get_by_text("Every other session is signed out.")).to_be_visible()
        expect(sessions.get_by_role("listitem")).to_have_count(1)
        assert me_status(gateway, admin_token) == 401
        assert page.context.request.get(gateway.url + "/api/v1/auth/me").status == 200
    finally:
        other.close()


def test_terminal_preferences_stored(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    page.add_init_script(NO_WEBGL)  # the preview's text in the DOM, for the test to read
    signed_in(page, gateway)
    page.goto(gateway.url + "/profile")
    defaults = gateway.api("GET", "/profile/ssh-prefs", admin_token).json()
    expect(page.get_by_label("Font size")).to_have_value(str(defaults["fontSize"]))

    # out of range: said next to the field, nothing stored
    page.get_by_label("Font size").fill("100")
    page.get_by_role("button", name="Save terminal settings").click()
    expect(page.get_by_label("Font size")).to_have_accessible_description("Between 6 and 72.")
    assert gateway.api("GET", "/profile/ssh-prefs", admin_token).json() == defaults

    page.get_by_label("Font", exact=True).fill('"DejaVu Sans Mono", monospace')
    page.get_by_label("Font size").fill("18")
    page.get_by_label("Cursor", exact=True).select_option("bar")
    page.get_by_label("Colours").select_option(label="Dracula")
    page.get_by_label("Scrollback lines").fill("20000")
    page.get_by_label("Blinking cursor").set_checked(not defaults["cursorBlink"])
    # the live preview is the app's terminal (xterm.js), restyled as the form changes
    preview = page.get_by_role("figure", name="Preview of the terminal with these settings")
    expect(preview).to_contain_text("notes.txt")
    expect(preview).to_have_css("background-color", "rgb(40, 42, 54)")
    rows = page.get_by_text("you@server:~$ ls")
    expect(rows).to_have_css("font-size", "18px")
    page.get_by_role("button", name="Save terminal settings").click()
    expect(page.get_by_text("Your terminal settings are saved.")).to_be_visible()
    assert gateway.api("GET", "/profile/ssh-prefs", admin_token).json() == {
        "fontFamily": '"DejaVu Sans Mono", monospace',
        "fontSize": 18,
        "cursorStyle": "bar",
        "cursorBlink": not defaults["cursorBlink"],
        "theme": "dracula",
        "scrollback": 20000,
    }
    screens.check(page, "profile-terminal", scroll_to=preview)

    # after a reload the form shows what is stored
    page.reload()
    expect(page.get_by_label("Scrollback lines")).to_have_value("20000")
    page.get_by_role("button", name="Use the gateway's defaults").click()
    expect(page.get_by_text("Back to the gateway's defaults.")).to_be_visible()
    expect(page.get_by_label("Font size")).to_have_value(str(defaults["fontSize"]))
    assert gateway.api("GET", "/profile/ssh-prefs", admin_token).json() == defaults


def test_passkeys_card_only_when_the_gateway_offers_passkeys(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    signed_in(page, gateway)
    # straight into /profile (a reload): the app asks /auth/providers itself
    page.goto(gateway.url + "/profile")
    expect(page.get_by_role("heading", name="Passkeys")).to_be_visible()
    gateway.set_settings(admin_token, security__passkey_enabled=False)
    page.reload()
    expect(page.get_by_role("heading", name="Where you are signed in")).to_be_visible()
    expect(page.get_by_role("heading", name="Passkeys")).to_have_count(0)
