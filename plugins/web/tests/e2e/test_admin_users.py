"""Administration, users: create, edit, lockout and unlock, password reset, suspend and resume,
delete; and what a role without ``connections.create`` leaves of the app.

Each step checks what the gateway stored (through the API with the admin's token) as
well as what the screen shows.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")

CAROL_PASSWORD = "carol's first passphrase"
CAROL_NEW_PASSWORD = "carol's second passphrase"


def user_named(gateway: Gateway, token: str, username: str) -> dict[str, Any] | None:
    users = gateway.api("GET", "/users", token).json()["users"]
    return next((u for u in users if u["username"] == username), None)


def login_status(gateway: Gateway, username: str, password: str) -> int:
    response = httpx.post(
        f"{gateway.url}/api/v1/auth/login",
        json={"username": username, "password": password},
        timeout=60,
    )
    return response.status_code


def open_admin(page: Any) -> None:
    """Through the top bar, the way a person gets there."""
    page.get_by_role("navigation", name="Sections").get_by_role(
        "link", name="Administration"
    ).click()
    expect(page.get_by_role("navigation", name="Administration")).to_be_visible()


def row_menu(page: Any, username: str) -> None:
    page.get_by_label(f"Actions for {username}").click()


def sign_in_as(page: Any, gateway: Gateway, username: str, password: str) -> None:
    page.goto(gateway.url + "/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Sign in", exact=True).click()
    page.get_by_role("navigation", name="Connections").wait_for()


def test_users_and_a_role_without_connections_create(
    page: Any, browser: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    # a role like "user" but without connections.create
    viewer = gateway.api(
        "POST",
        "/roles",
        admin_token,
        json={"name": "viewer", "permissions": ["connections.edit_own", "connections.use_ssh"]},
    )
    assert viewer.status_code == 201, viewer.text
    gateway.set_settings(admin_token, security__max_login_attempts=2)

    signed_in(page, gateway)
    open_admin(page)
    assert page.url.endswith("/admin/users")
    expect(page.get_by_role("heading", name="Users")).to_be_visible()
    expect(page.get_by_role("row", name="admin")).to_contain_text("(you)")

    # create: a short password is refused next to its field, nothing is stored
    page.get_by_role("button", name="New user").click()
    dialog = page.get_by_role("dialog", name="New user")
    dialog.get_by_label("Username").fill("carol")
    dialog.get_by_label("Password").fill("short")
    dialog.get_by_label("Display name").fill("Carol Jones")
    dialog.get_by_label("E-mail").fill("carol@example.org")
    dialog.get_by_label("Role").select_option("viewer")
    screens.check(page, "admin-users-new")
    dialog.get_by_role("button", name="Create user").click()
    expect(dialog.get_by_label("Password")).to_have_accessible_description(
        "At least 8 characters. Must be at least 8 characters long."
    )
    assert user_named(gateway, admin_token, "carol") is None

    dialog.get_by_label("Password").fill(CAROL_PASSWORD)
    dialog.get_by_role("button", name="Create user").click()
    # a password an administrator set: by default she chooses her own at the first sign-in
    expect(
        page.get_by_text("carol can sign in now and will choose a new password first.")
    ).to_be_visible()
    carol = user_named(gateway, admin_token, "carol")
    assert carol is not None and carol["mustChangePassword"] is True
    assert (carol["displayName"], carol["email"], carol["role"]) == (
        "Carol Jones",
        "carol@example.org",
        "viewer",
    )
    # the same name again: said next to the username
    page.get_by_role("button", name="New user").click()
    dialog.get_by_label("Username").fill("carol")
    dialog.get_by_label("Password").fill(CAROL_PASSWORD)
    dialog.get_by_role("button", name="Create user").click()
    expect(dialog.get_by_label("Username")).to_have_accessible_description(
        "That username is taken."
    )
    dialog.get_by_role("button", name="Cancel").click()

    # search
    page.get_by_label("Search users").fill("jones")
    expect(page.get_by_role("row")).to_have_count(2)  # the heading row and carol
    expect(page.get_by_role("row", name="carol")).to_contain_text("viewer")
    page.get_by_label("Search users").fill("nobody here")
    expect(page.get_by_text("No user matches.")).to_be_visible()
    page.get_by_label("Search users").fill("")

    # edit
    row_menu(page, "carol")
    page.get_by_role("button", name="Edit").click()
    edit = page.get_by_role("dialog", name="Edit carol")
    expect(edit.get_by_label("Display name")).to_have_value("Carol Jones")
    edit.get_by_label("E-mail").fill("not an address")
    edit.get_by_role("button", name="Save user").click()
    expect(edit.get_by_label("E-mail")).to_have_attribute("aria-invalid", "true")
    assert user_named(gateway, admin_token, "carol")["email"] == "carol@example.org"  # type: ignore[index]
    edit.get_by_label("E-mail").fill("cj@example.org")
    edit.get_by_label("Display name").fill("Carol J.")
    edit.get_by_role("button", name="Save user").click()
    expect(page.get_by_text("carol is saved.")).to_be_visible()
    carol = user_named(gateway, admin_token, "carol")
    assert carol is not None and (carol["displayName"], carol["email"]) == (
        "Carol J.",
        "cj@example.org",
    )

    # two wrong passwords lock carol (max_login_attempts 2): the list says until when
    assert login_status(gateway, "carol", "wrong password 1") == 401
    assert login_status(gateway, "carol", "wrong password 2") in {401, 423}
    locked = user_named(gateway, admin_token, "carol")
    assert locked is not None and locked["lockedUntil"] is not None
    page.reload()
    row = page.get_by_role("row", name="carol")
    expect(row).to_contain_text("Locked")
    expect(row).to_contain_text("until ")
    expect(row).to_contain_text("2 failed sign-ins")
    screens.check(page, "admin-users")
    row_menu(page, "carol")
    page.get_by_role("button", name="Unlock").click()
    expect(page.get_by_text("carol is unlocked.")).to_be_visible()
    expect(row).to_contain_text("Can sign in")
    expect(row).to_contain_text("0 failed sign-ins")
    unlocked = user_named(gateway, admin_token, "carol")
    assert unlocked is not None
    assert (unlocked["lockedUntil"], unlocked["failedLoginCount"]) == (None, 0)
    assert "user.unlocked" in gateway.audit_types(admin_token)

    # reset password: the old one stops working, the new one works
    row_menu(page, "carol")
    page.get_by_role("button", name="Reset password").click()
    reset = page.get_by_role("dialog", name="Reset carol's password")
    reset.get_by_label("New password").fill(CAROL_NEW_PASSWORD)
    reset.get_by_label("They choose their own at the next sign-in").uncheck()
    reset.get_by_role("button", name="Set password").click()
    expect(page.get_by_text("carol's password is changed")).to_be_visible()
    assert login_status(gateway, "carol", CAROL_PASSWORD) == 401
    assert login_status(gateway, "carol", CAROL_NEW_PASSWORD) == 200

    # carol, holding "viewer": no "new connection" anywhere, no administration, and the
    # API refuses the call the missing control would have made
    other = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        as_carol = other.new_page()
        sign_in_as(as_carol, gateway, "carol", CAROL_NEW_PASSWORD)
        expect(as_carol.get_by_role("heading", name="Welcome, Carol J.")).to_be_visible()
        expect(as_carol.get_by_text("Your role cannot create connections")).to_be_visible()
        expect(as_carol.get_by_role("link", name="New connection")).to_have_count(0)
        expect(as_carol.get_by_role("link", name="Create your first connection")).to_have_count(0)
        expect(as_carol.get_by_role("link", name="Sessions")).to_be_visible()
        expect(as_carol.get_by_role("link", name="Administration")).to_have_count(0)
        status = as_carol.evaluate(
            """async () => (await fetch("/api/v1/connections", {
                method: "POST", headers: {"Content-Type": "application/json"},
                body: JSON.stringify({name: "x", protocol: "ssh", host: "10.0.0.1", port: 22}),
            })).status"""
        )
        assert status == 403
        # a deep link into the administration is not there for her
        as_carol.goto(gateway.url + "/admin/users")
        expect(as_carol.get_by_role("heading", name="Page not found")).to_be_visible()
        expect(as_carol.get_by_role("navigation", name="Administration")).to_have_count(0)
    finally:
        other.close()

    # delete (never yourself: the admin's own row has no Delete)
    row_menu(page, "admin")
    expect(page.get_by_role("button", name="Delete")).to_have_count(0)
    page.keyboard.press("Escape")
    row_menu(page, "carol")
    page.get_by_role("button", name="Delete").click()
    confirm = page.get_by_role("dialog", name="Delete carol?")
    confirm.get_by_role("button", name="Delete user").click()
    expect(page.get_by_text("carol is deleted.")).to_be_visible()
    expect(page.get_by_role("row", name="carol")).to_have_count(0)
    assert user_named(gateway, admin_token, "carol") is None
    assert "user.deleted" in gateway.audit_types(admin_token)


DAVE_PASSWORD = "dave's long passphrase"


def test_suspend_signs_out_and_resume_lets_back_in(
    page: Any, browser: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    created = gateway.api(
        "POST",
        "/users",
        admin_token,
        json={"username": "dave", "password": DAVE_PASSWORD, "displayName": "Dave Brown"},
    )
    assert created.status_code == 201, created.text
    other = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        as_dave = other.new_page()
        sign_in_as(as_dave, gateway, "dave", DAVE_PASSWORD)

        signed_in(page, gateway)
        open_admin(page)
        row = page.get_by_role("row", name="dave")
        expect(row).to_contain_text("Can sign in")
        # never yourself: the admin's own row has no Suspend
        row_menu(page, "admin")
        expect(page.get_by_role("button", name="Suspend")).to_have_count(0)
        page.keyboard.press("Escape")

        row_menu(page, "dave")
        page.get_by_role("button", name="Suspend").click()
        confirm = page.get_by_role("dialog", name="Suspend dave?")
        expect(confirm).to_contain_text("signed out everywhere")
        screens.check(page, "admin-users-suspend")
        confirm.get_by_role("button", name="Suspend user").click()
        expect(page.get_by_text("dave is suspended and signed out everywhere.")).to_be_visible()
        expect(row).to_contain_text("Suspended")
        screens.check(page, "admin-users-suspended", scroll_to=row)
        dave = user_named(gateway, admin_token, "dave")
        assert dave is not None and dave["suspended"] is True
        assert "user.suspended" in gateway.audit_types(admin_token)

        # dave's open page: its next request finds the sign-in ended
        as_dave.get_by_role("navigation", name="Sections").get_by_role(
            "link", name="Sessions"
        ).click()
        expect(as_dave.get_by_role("button", name="Sign in", exact=True)).to_be_visible()
        expect(as_dave.get_by_text("Your session was ended. Sign in again.")).to_be_visible()
        as_dave.get_by_label("Username").fill("dave")
        as_dave.get_by_label("Password").fill(DAVE_PASSWORD)
        as_dave.get_by_role("button", name="Sign in", exact=True).click()
        expect(
            as_dave.get_by_text("This account is suspended. Ask an administrator to resume it.")
        ).to_be_visible()
        # a wrong password is told only that
        as_dave.get_by_label("Password").fill("not dave's passphrase")
        as_dave.get_by_role("button", name="Sign in", exact=True).click()
        expect(as_dave.get_by_text("Wrong username or password.")).to_be_visible()
        expect(as_dave.get_by_text("This account is suspended.")).to_have_count(0)

        row_menu(page, "dave")
        page.get_by_role("button", name="Resume").click()
        expect(page.get_by_text("dave can sign in again.")).to_be_visible()
        expect(row).to_contain_text("Can sign in")
        assert user_named(gateway, admin_token, "dave")["suspended"] is False  # type: ignore[index]
        assert "user.resumed" in gateway.audit_types(admin_token)
        sign_in_as(as_dave, gateway, "dave", DAVE_PASSWORD)
        expect(as_dave.get_by_role("heading", name="Welcome, Dave Brown")).to_be_visible()
    finally:
        other.close()
