"""Personal API tokens in the profile: made with a subset of one's permissions, the secret
shown once and working as a Bearer token against the real gateway, revoked from the list."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import httpx
import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import Gateway, Screens, signed_in

pytestmark = pytest.mark.peer("chromium")


def test_a_token_made_in_the_profile_works_until_revoked(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    signed_in(page, gateway)
    page.goto(f"{gateway.url}/profile")
    card = page.get_by_role("region", name="API tokens")
    expect(card.get_by_text("You have no API tokens.")).to_be_visible()
    card.get_by_role("button", name="New token").click()
    dialog = page.get_by_role("dialog", name="New API token")
    dialog.get_by_label("Name", exact=True).fill("nightly export")

    # safe defaults: short-lived, and not one permission ticked (not a full admin token)
    expect(dialog.get_by_label("Expires after")).to_have_value("7")
    permissions = dialog.get_by_role("group", name="Permissions").get_by_role("checkbox")
    assert permissions.count() > 20  # the admin holds every permission, and none is ticked
    for index in range(permissions.count()):
        expect(permissions.nth(index)).not_to_be_checked()
    screens.check(page, "profile-new-token")
    dialog.get_by_role("button", name="Create token").click()
    expect(dialog.get_by_role("alert")).to_contain_text("Tick the permissions the script needs")
    assert gateway.api("GET", "/profile/api-tokens", admin_token).json()["tokens"] == []

    for wanted in ("connections.import_export", "audit.view_any"):
        dialog.get_by_role("checkbox", name=wanted, exact=True).check()
    dialog.get_by_role("button", name="Create token").click()

    secret = card.get_by_label("New token").inner_text().strip()
    assert secret.startswith("hgt_")
    expect(card.get_by_role("status")).to_contain_text("it is not shown again")
    screens.check(page, "profile-token-made")
    bearer = {"Authorization": f"Bearer {secret}"}
    me = httpx.get(f"{gateway.url}/api/v1/auth/me", headers=bearer).json()["user"]
    assert sorted(me["permissions"]) == ["audit.view_any", "connections.import_export"]
    (made,) = gateway.api("GET", "/profile/api-tokens", admin_token).json()["tokens"]
    lifetime = datetime.fromisoformat(made["expiresAt"]) - datetime.fromisoformat(made["createdAt"])
    assert lifetime == timedelta(days=7)  # the default lifetime, as made
    exported = httpx.get(f"{gateway.url}/api/v1/connections/export/ssh-config", headers=bearer)
    assert exported.status_code == 200
    assert httpx.get(f"{gateway.url}/api/v1/users", headers=bearer).status_code == 403

    card.get_by_role("button", name="Done").click()
    expect(card.get_by_label("New token")).to_have_count(0)  # never shown again
    page.reload()
    row = page.get_by_role("list", name="Your API tokens").get_by_role("listitem")
    expect(row).to_contain_text("nightly export")
    expect(row).to_contain_text("last used")
    expect(row).not_to_contain_text(secret)
    row.get_by_role("button", name="Revoke nightly export").click()
    confirm = page.get_by_role("dialog", name="Revoke nightly export?")
    confirm.get_by_role("button", name="Revoke").click()
    expect(row).to_contain_text("revoked")
    assert httpx.get(f"{gateway.url}/api/v1/auth/me", headers=bearer).status_code == 401


def test_an_admin_sees_and_revokes_another_users_token(
    page: Any, gateway: Gateway, admin_token: str, screens: Screens
) -> None:
    made = gateway.api(
        "POST", "/users", admin_token,
        json={"username": "tom", "password": ADMIN_PASSWORD, "role": "user"},
    )  # fmt: skip
    assert made.status_code == 201, made.text
    tom = gateway.login("tom")
    body = {"name": "tom's backup job", "expiresInDays": 7, "permissions": ["connections.create"]}
    created = gateway.api("POST", "/profile/api-tokens", tom, json=body)
    assert created.status_code == 201, created.text
    bearer = {"Authorization": f"Bearer {created.json()['secret']}"}
    assert httpx.get(f"{gateway.url}/api/v1/auth/me", headers=bearer).status_code == 200

    signed_in(page, gateway)
    page.get_by_role("link", name="Administration").click()
    page.get_by_role("navigation", name="Administration").get_by_role(
        "link", name="API tokens"
    ).click()
    listing = page.get_by_role("list", name="Everyone's API tokens")
    expect(listing).to_contain_text("tom's backup job")
    expect(listing).to_contain_text("tom")
    screens.check(page, "admin-api-tokens")
    listing.get_by_role("button", name="Revoke tom's backup job of tom").click()
    page.get_by_role("dialog").get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("status").filter(has_text="is revoked")).to_be_visible()
    # the list shows working tokens by default: the revoked one leaves it
    expect(page.get_by_text("No user has a working API token.")).to_be_visible()
    assert httpx.get(f"{gateway.url}/api/v1/auth/me", headers=bearer).status_code == 401
    states = gateway.api("GET", "/api-tokens", admin_token).json()["tokens"]
    assert [t["state"] for t in states] == ["revoked"]
