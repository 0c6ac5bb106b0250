"""First run, sign-in with each method /auth/providers offers, TOTP, logout, idle timeout."""

from __future__ import annotations

import re
import sqlite3
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pyotp
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import (
    SPARES,
    Gateway,
    Screens,
    next_item,
    signed_in,
    wants_default_gateway,
    wants_spare,
)

pytestmark = pytest.mark.peer("chromium")

STRONG = "orbit canyon lantern 42 maple"


def test_first_run_creates_the_admin_with_strength_feedback(
    page: Any, gateway: Gateway, screens: Screens, request: pytest.FixtureRequest
) -> None:
    assert wants_default_gateway(request.node)  # the module's shared gateway
    # this test's set-up has started the next module's gateway (none when the next test
    # is in this module, or when run alone)
    assert (SPARES.spare is not None) == wants_spare(next_item(request))
    page.goto(gateway.url + "/")
    expect(page.get_by_role("heading", name="Set up your gateway")).to_be_visible()
    page.get_by_label("Username").fill("ada")
    page.get_by_label("Display name").fill("Ada Lovelace")
    password = page.get_by_label("Password", exact=True)
    password.fill("password")
    expect(page.get_by_text("Strength: Very weak")).to_be_visible()
    expect(page.get_by_text("The gateway refuses a password this easy to guess")).to_be_visible()
    screens.check(page, "setup")
    # the meter and the refusal agree: `password` is refused, in the form and by the server
    page.get_by_label("Confirm password").fill("password")
    page.get_by_role("button", name="Create administrator").click()
    expect(password).to_have_accessible_description(
        re.compile("Choose a stronger password: the gateway refuses this one")
    )
    screens.check(page, "setup-weak-refused")
    assert httpx.get(f"{gateway.url}/api/v1/auth/status").json() == {"needsSetup": True}
    refused = httpx.post(
        f"{gateway.url}/api/v1/auth/setup", json={"username": "ada", "password": "password"}
    )
    assert (refused.status_code, refused.json()["code"]) == (400, "weak_password")
    password.fill(STRONG)
    expect(page.get_by_text(re.compile(r"Strength: (Strong|Very strong)"))).to_be_visible()
    page.get_by_label("Confirm password").fill(STRONG + "x")
    page.get_by_role("button", name="Create administrator").click()
    expect(page.get_by_text("The passwords do not match.")).to_be_visible()
    page.get_by_label("Confirm password").fill(STRONG)
    page.get_by_role("button", name="Create administrator").click()
    expect(page.get_by_role("heading", name="Welcome, Ada Lovelace")).to_be_visible()
    expect(page.get_by_role("heading", name="No connections yet")).to_be_visible()
    screens.check(page, "shell-empty")

    # the server has exactly that admin, with that password and display name
    login = httpx.post(
        f"{gateway.url}/api/v1/auth/login", json={"username": "ada", "password": STRONG}
    )
    assert login.status_code == 200, login.text
    users = gateway.api("GET", "/users", login.json()["token"]).json()
    users = users["users"] if isinstance(users, dict) else users
    assert [(u["username"], u["displayName"], u["role"]) for u in users] == [
        ("ada", "Ada Lovelace", "admin")
    ]


def test_wrong_password_then_sign_in_and_out(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    page.goto(gateway.url + "/connections/nowhere")  # a deep link: sign-in first
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    screens.check(page, "signin")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill("not the password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_have_text("Wrong username or password.")
    screens.check(page, "signin-wrong-password")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text("You are signed out.")

    types = gateway.audit_types(admin_token)
    assert types.index("auth.logout") < types.index("auth.login") < types.index("auth.login_failed")
    # the cookie is gone: a reload stays signed out
    page.reload()
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def make_user(gateway: Gateway, token: str, username: str, password: str = ADMIN_PASSWORD) -> None:
    response = gateway.api(
        "POST", "/users", token, json={"username": username, "password": password, "role": "user"}
    )
    assert response.status_code in {200, 201}, response.text


def test_a_locked_account_says_until_when(page: Any, gateway: Gateway, admin_token: str) -> None:
    gateway.set_settings(admin_token, security__max_login_attempts=2)
    make_user(gateway, admin_token, "bob")
    page.goto(gateway.url + "/")
    page.get_by_label("Username").fill("bob")
    for _ in range(2):
        page.get_by_label("Password").fill("wrong password")
        page.get_by_role("button", name="Sign in", exact=True).click()
        expect(page.get_by_role("alert")).to_have_text("Wrong username or password.")
        page.get_by_label("Password").fill("")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)  # right, but too late
    page.get_by_role("button", name="Sign in", exact=True).click()
    alert = page.get_by_role("alert")
    expect(alert).to_contain_text("This account is locked")
    expect(alert).to_contain_text(re.compile(r"until \d\d:\d\d \(in (29|30) minutes\)"))
    # the server holds the lock
    users = gateway.api("GET", "/users", admin_token).json()["users"]
    assert next(u for u in users if u["username"] == "bob")["lockedUntil"]


def test_too_many_attempts_say_how_long_to_wait(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    # 30 failed logins per 15 minutes per client address; the browser's is the 31st
    for n in range(30):
        httpx.post(
            f"{gateway.url}/api/v1/auth/login", json={"username": f"nobody{n}", "password": "x"}
        )
    page.goto(gateway.url + "/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_have_text(
        re.compile(r"Too many attempts\. Wait \d+ (minutes?|seconds?) and try again\.")
    )


def test_totp_step_and_trusted_device(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    setup = gateway.api("POST", "/profile/mfa/setup", admin_token)
    assert setup.status_code == 200, setup.text
    totp = pyotp.TOTP(setup.json()["secret"])
    verified = gateway.api("POST", "/profile/mfa/verify", admin_token, json={"token": totp.now()})
    assert verified.status_code == 200, verified.text

    page.goto(gateway.url + "/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("heading", name="Two-step verification")).to_be_visible()
    page.get_by_label("Authentication code").fill("000000" if totp.now() != "000000" else "111111")
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("alert")).to_have_text(
        "That code is not right. Enter the current code from your authenticator app."
    )
    screens.check(page, "signin-totp")
    # a code accepted once is refused afterwards: use the next window's code
    page.get_by_label("Authentication code").fill(totp.at(time.time() + 30))
    page.get_by_label("Trust this device for 30 days").check()
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    cookies = {c["name"] for c in page.context.cookies()}
    assert {"hostgate_token", "hostgate_trusted_device"} <= cookies

    # signed out and in again from this browser: no code asked
    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()


def test_sign_in_offers_exactly_the_providers(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    gateway.set_settings(
        admin_token,
        auth__ldap_enabled=True,
        auth__oidc_enabled=True,
        auth__oidc_button_label="Sign in with Example SSO",
        security__passkey_enabled=False,
    )
    page.goto(gateway.url + "/")
    expect(page.get_by_role("radio", name="Local account")).to_be_checked()
    expect(page.get_by_role("radio", name="Directory (LDAP)")).to_be_visible()
    expect(page.get_by_role("button", name="Sign in with Example SSO")).to_be_visible()
    expect(page.get_by_role("button", name="Sign in with a passkey")).to_have_count(0)

    # local off leaves the local admin no way in: an OIDC administrator keeps one
    add_oidc_admin(gateway)
    gateway.set_settings(admin_token, auth__local_enabled=False, auth__ldap_enabled=False)
    page.reload()
    expect(page.get_by_role("button", name="Sign in with Example SSO")).to_be_visible()
    expect(page.get_by_label("Password")).to_have_count(0)


def add_oidc_admin(gateway: Gateway) -> None:
    """An administrator OIDC created (as a first OIDC sign-in with an admin role map)."""
    now = datetime.now(UTC).replace(tzinfo=None).isoformat(sep=" ")
    with sqlite3.connect(gateway.data_dir / "hostgate.db") as db:
        db.execute(
            "INSERT INTO users (id, username, username_key, display_name, email, avatar_text,"
            " role_id, auth_provider, provider_id, failed_login_count, mfa_enabled,"
            " dismissed_warnings, ssh_prefs, created_at, updated_at)"
            " SELECT 'sso-admin', 'sso-admin', 'sso-admin', 'SSO admin', '', 'SA', id,"
            " 'oidc', 'sub-1', 0, 0, '[]', '{}', ?, ? FROM roles WHERE name = 'admin'",
            (now, now),
        )


def test_the_oidc_return_paths(page: Any, gateway: Gateway, admin_token: str) -> None:
    reason = "The%20identity%20provider%20refused%3A%20access_denied"
    page.goto(gateway.url + "/?sso_error=" + reason)
    expect(page.get_by_role("alert")).to_have_text(
        "Single sign-on failed: The identity provider refused: access_denied"
    )
    assert page.url == gateway.url + "/"
    # a session cookie (as the callback sets it) and the success return: in the app
    signed_in(page, gateway)
    page.goto(gateway.url + "/?sso=success")
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    assert page.url == gateway.url + "/"


def test_idle_timeout_signs_out_with_a_notice(
    page: Any, gateway: Gateway, admin_token: str
) -> None:
    gateway.set_settings(admin_token, security__idle_timeout_minutes=1)
    signed_in(page, gateway)
    # the session was last used ten minutes ago, as if the tab had sat idle
    with sqlite3.connect(gateway.data_dir / "hostgate.db") as db:
        rows = db.execute("SELECT id, last_used_at FROM login_sessions").fetchall()
        for session_id, last_used in rows:
            then = datetime.fromisoformat(str(last_used)) - timedelta(minutes=10)
            db.execute(
                "UPDATE login_sessions SET last_used_at = ? WHERE id = ?",
                (then.isoformat(sep=" "), session_id),
            )
    page.evaluate("window.dispatchEvent(new Event('focus'))")  # the tab comes back
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
    expect(page.get_by_role("status")).to_have_text(
        "Idle timeout: you were signed out after 1 minute without activity."
    )
    page.reload()  # the server ended the session: the cookie no longer works
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()
