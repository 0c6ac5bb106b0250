"""Administration, roles: create from a copy, the grouped permission editor with each
permission's description, rename, delete refused while users hold the role, reset a
built-in role; a user holding the new role sees what it allows and nothing more.
"""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from .conftest import Gateway, Screens, signed_in
from .test_admin_users import open_admin, sign_in_as

pytestmark = pytest.mark.peer("chromium")

DAVE_PASSWORD = "dave's long passphrase"


def role_named(gateway: Gateway, token: str, name: str) -> dict[str, Any] | None:
    roles = gateway.api("GET", "/roles", token).json()["roles"]
    return next((r for r in roles if r["name"] == name), None)


def test_roles_editor(
    page: Any, browser: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    user_defaults = role_named(gateway, admin_token, "user")
    assert user_defaults is not None and "connections.create" in user_defaults["permissions"]

    signed_in(page, gateway)
    open_admin(page)
    page.get_by_role("navigation", name="Administration").get_by_role("link", name="Roles").click()
    expect(page.get_by_role("heading", name="Roles")).to_be_visible()
    expect(page.get_by_role("row", name="admin Built-in")).to_be_visible()
    screens.check(page, "admin-roles")

    # a new role, starting from the permissions of "user"
    page.get_by_role("button", name="New role").click()
    dialog = page.get_by_role("dialog", name="New role")
    dialog.get_by_label("Name").fill("Auditor")
    dialog.get_by_label("Description").fill("Reads the audit log")
    dialog.get_by_label("Start with").select_option(label="The permissions of user")
    dialog.get_by_role("button", name="Create role").click()
    expect(page.get_by_role("heading", name="Role: Auditor")).to_be_visible()
    created = role_named(gateway, admin_token, "Auditor")
    assert created is not None and created["permissions"] == user_defaults["permissions"]
    assert page.url.endswith(f"/admin/roles/{created['id']}")

    # the editor: groups as the API groups them, each permission with what it allows
    connections = page.get_by_role("group", name="Connections")
    create = connections.get_by_role("checkbox", name="connections.create")
    expect(create).to_be_checked()
    expect(create).to_have_accessible_description("Create connections of their own")
    audit = page.get_by_role("group", name="Audit").get_by_role("checkbox", name="audit.view_any")
    expect(audit).to_have_accessible_description(
        "Read every user's audit log entries (without it: only their own)"
    )
    expect(page.get_by_role("button", name="Save role")).to_be_disabled()
    create.uncheck()
    audit.check()
    page.get_by_role("textbox", name="Name", exact=True).fill("Auditors")
    screens.check(page, "admin-role-editor")
    page.get_by_role("button", name="Save role").click()
    expect(page.get_by_text("Auditors is saved.")).to_be_visible()
    stored = role_named(gateway, admin_token, "Auditors")
    assert stored is not None and stored["id"] == created["id"]
    assert "connections.create" not in stored["permissions"]
    assert "audit.view_any" in stored["permissions"]
    assert set(stored["permissions"]) == (
        set(user_defaults["permissions"]) - {"connections.create"} | {"audit.view_any"}
    )
    assert stored["description"] == "Reads the audit log"

    # a user holding it: no "new connection", the audit log is the only admin section,
    # and the API refuses a connection
    dave = gateway.api(
        "POST",
        "/users",
        admin_token,
        json={"username": "dave", "password": DAVE_PASSWORD, "role": "Auditors"},
    )
    assert dave.status_code == 201, dave.text
    other = browser.new_context(viewport={"width": 1280, "height": 800})
    try:
        as_dave = other.new_page()
        sign_in_as(as_dave, gateway, "dave", DAVE_PASSWORD)
        expect(as_dave.get_by_role("link", name="New connection")).to_have_count(0)
        status = as_dave.evaluate(
            """async () => (await fetch("/api/v1/connections", {
                method: "POST", headers: {"Content-Type": "application/json"},
                body: JSON.stringify({name: "x", protocol: "ssh", host: "10.0.0.1", port: 22}),
            })).status"""
        )
        assert status == 403
        open_admin(as_dave)
        nav = as_dave.get_by_role("navigation", name="Administration")
        expect(nav.get_by_role("link")).to_have_text(["Audit log"])
        assert as_dave.url.endswith("/admin/audit")
        as_dave.goto(gateway.url + "/admin/roles")
        expect(as_dave.get_by_role("heading", name="Page not found")).to_be_visible()
    finally:
        other.close()

    # deleting a role a user holds is refused, with the server's reason; nothing changes
    page.get_by_role("button", name="Delete role").click()
    page.get_by_role("dialog", name="Delete Auditors?").get_by_role(
        "button", name="Delete role"
    ).click()
    expect(page.get_by_role("alert")).to_have_text(
        "Cannot delete role: 1 user(s) still assigned to it."
    )
    assert role_named(gateway, admin_token, "Auditors") is not None

    # once nobody holds it, it goes
    moved = gateway.api("PUT", f"/users/{dave.json()['id']}", admin_token, json={"role": "user"})
    assert moved.status_code == 200, moved.text
    page.get_by_role("button", name="Delete role").click()
    page.get_by_role("dialog", name="Delete Auditors?").get_by_role(
        "button", name="Delete role"
    ).click()
    expect(page.get_by_role("heading", name="Roles")).to_be_visible()
    expect(page.get_by_role("link", name="Auditors")).to_have_count(0)
    assert role_named(gateway, admin_token, "Auditors") is None

    # a built-in role: name fixed, permissions editable, reset to the defaults
    page.get_by_role("link", name="user", exact=True).click()
    expect(page.get_by_role("heading", name="Role: user")).to_be_visible()
    expect(page.get_by_role("textbox", name="Name", exact=True)).to_have_count(0)
    share = page.get_by_role("checkbox", name="connections.share")
    share.uncheck()
    page.get_by_role("button", name="Save role").click()
    expect(page.get_by_text("user is saved.")).to_be_visible()
    changed = role_named(gateway, admin_token, "user")
    assert changed is not None and "connections.share" not in changed["permissions"]
    page.get_by_role("button", name="Reset to defaults").click()
    page.get_by_role("dialog", name="Reset user to its defaults?").get_by_role(
        "button", name="Reset role"
    ).click()
    expect(page.get_by_text("user has its default permissions again.")).to_be_visible()
    expect(share).to_be_checked()
    reset = role_named(gateway, admin_token, "user")
    assert reset is not None and reset["permissions"] == user_defaults["permissions"]
    assert {"role.created", "role.updated", "role.deleted", "role.reset"} <= set(
        gateway.audit_types(admin_token)
    )
