"""Directory (LDAP) sign-in through the form, against the suite's real slapd."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.slapd import SlapdServer, slapd_server  # noqa: F401 - the fixture

from .conftest import Gateway

pytestmark = pytest.mark.peer("chromium")


def test_sign_in_with_a_directory_account(
    page: Any,
    gateway: Gateway,
    admin_token: str,
    slapd_server: SlapdServer,  # noqa: F811
) -> None:
    gateway.set_settings(
        admin_token,
        auth__ldap_enabled=True,
        auth__ldap_url=slapd_server.url,
        auth__ldap_bind_dn=slapd_server.bind_dn,
        auth__ldap_bind_password=slapd_server.bind_password,
        auth__ldap_search_base=slapd_server.suffix,
        auth__ldap_username_attr="uid",
    )
    page.goto(gateway.url + "/")
    page.get_by_role("radio", name="Directory (LDAP)").check()
    page.get_by_label("Username").fill("alice")
    page.get_by_label("Password").fill("wrong")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("alert")).to_have_text("Wrong username or password.")
    page.get_by_label("Password").fill("alice-password")
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("heading", name="Welcome, Alice Liddell")).to_be_visible()
    users = gateway.api("GET", "/users", admin_token).json()["users"]
    alice = next(u for u in users if u["username"] == "alice")
    assert alice["authProvider"] == "ldap"
