"""A passkey as the second step after a password, in Chromium with a virtual authenticator
(CDP WebAuthn) against a real gateway (one per module).

Each step checks what the gateway stored (audit) as well as the screen.
"""

from __future__ import annotations

from typing import Any

import pyotp
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import Gateway, Screens
from .test_passkey import REGISTER

pytestmark = pytest.mark.peer("chromium")

PIA_PASSWORD = "pia keeps a passphrase"


def sign_in_with_password(page: Any, origin: str, username: str, password: str) -> None:
    page.goto(origin + "/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()


def sign_out(page: Any) -> None:
    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("button", name="Sign in", exact=True)).to_be_visible()


def last_login(gateway: Gateway, token: str) -> dict[str, Any]:
    entries = gateway.api("GET", "/audit", token, params={"eventType": "auth.login"}).json()
    return dict(entries["entries"][0]["details"])


def test_a_required_second_step_set_up_and_answered_with_a_passkey(
    page: Any, gateway: Gateway, admin_token: str, virtual_authenticator: str, screens: Screens
) -> None:
    made = gateway.api(
        "POST", "/users", admin_token,
        json={"username": "pia", "password": PIA_PASSWORD, "role": "user"},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    gateway.set_settings(
        admin_token, security__require_mfa="roles", security__require_mfa_roles="user"
    )
    # WebAuthn needs a domain for its relying party id: localhost, not 127.0.0.1
    origin = f"http://localhost:{gateway.port}"

    sign_in_with_password(page, origin, "pia", PIA_PASSWORD)
    expect(page.get_by_role("heading", name="Set up two-step verification")).to_be_visible()
    expect(page.get_by_role("heading", name="Add a passkey")).to_be_visible()
    expect(page.get_by_role("button", name="Set up two-step verification")).to_be_visible()
    expect(page.get_by_role("navigation", name="Connections")).to_have_count(0)
    screens.check(page, "onboarding-passkey")
    page.get_by_label("Name of the new passkey").fill("Pia's laptop")
    page.get_by_role("button", name="Add passkey").click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    registered = gateway.api(
        "GET", "/audit", admin_token, params={"eventType": "auth.passkey_registered"}
    ).json()["entries"]
    assert [e["details"]["passkeyName"] for e in registered] == ["Pia's laptop"]

    sign_out(page)
    sign_in_with_password(page, origin, "pia", PIA_PASSWORD)
    card = page.get_by_role("main")
    expect(page.get_by_role("heading", name="Two-step verification")).to_be_visible()
    expect(card.get_by_role("button", name="Use your passkey")).to_be_visible()
    # a passkey is all pia holds: no code is offered
    expect(card.get_by_role("button", name="Use a code from your authenticator app")).to_have_count(
        0
    )
    expect(page.get_by_role("navigation", name="Connections")).to_have_count(0)
    screens.check(page, "signin-passkey-step")
    card.get_by_role("button", name="Use your passkey").click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    login = last_login(gateway, admin_token)
    assert login["method"] == "local" and login["secondFactor"] == "passkey", login


def test_with_a_code_and_a_passkey_the_person_picks(
    page: Any, gateway: Gateway, admin_token: str, virtual_authenticator: str, screens: Screens
) -> None:
    origin = f"http://localhost:{gateway.port}"
    sign_in_with_password(page, origin, "admin", ADMIN_PASSWORD)
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    page.evaluate(REGISTER)
    started = gateway.api("POST", "/profile/mfa/setup", admin_token).json()
    totp = pyotp.TOTP(started["secret"])
    enabled = gateway.api("POST", "/profile/mfa/verify", admin_token, json={"token": totp.now()})
    assert enabled.status_code == 200, enabled.text

    sign_out(page)
    sign_in_with_password(page, origin, "admin", ADMIN_PASSWORD)
    card = page.get_by_role("main")
    card.get_by_role("button", name="Use a code from your authenticator app").click()
    expect(card.get_by_label("Authentication code")).to_be_visible()
    expect(card.get_by_role("button", name="Use your passkey instead")).to_be_visible()
    screens.check(page, "signin-second-step-code")
    card.get_by_role("button", name="Use your passkey instead").click()
    card.get_by_role("button", name="Use your passkey").click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    assert last_login(gateway, admin_token)["secondFactor"] == "passkey"
