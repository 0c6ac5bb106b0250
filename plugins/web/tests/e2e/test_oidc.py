"""Single sign-on through the suite's real OIDC provider, in the browser, both ways back."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pyotp
import pytest
from playwright.sync_api import expect

from testsupport.oidc import OidcProvider, oidc_provider  # noqa: F401 - the fixture

from .conftest import AXE_SOURCE, DESKTOP, Console, Gateway, Screens

pytestmark = pytest.mark.peer("chromium")


@pytest.fixture
def sso_page(browser: Any) -> Iterator[Any]:
    """A page that accepts the provider's test certificate; console errors fail the test."""
    context = browser.new_context(viewport=DESKTOP, ignore_https_errors=True)
    context.add_init_script(path=AXE_SOURCE)
    # the provider's page links a stylesheet from a CDN: answered here, nothing leaves
    context.route(
        "https://cdn.jsdelivr.net/**",
        lambda route: route.fulfill(status=200, content_type="text/css", body=""),
    )
    console = Console()
    page = context.new_page()
    page.set_default_timeout(15_000)
    page.on("console", console.on_message)
    page.on("pageerror", console.on_page_error)
    yield page
    context.close()
    assert not console.errors, "\n".join(console.errors)


def test_single_sign_on_round_trip_and_refusal(
    sso_page: Any,
    gateway: Gateway,
    admin_token: str,
    oidc_provider: OidcProvider,  # noqa: F811
) -> None:
    page = sso_page
    callback = f"{gateway.url}/api/v1/auth/oidc/callback"
    client = oidc_provider.register_client(callback)
    oidc_provider.set_user("ada-sso", name="Ada Sso", email="ada@example.com")
    gateway.set_settings(
        admin_token,
        auth__oidc_enabled=True,
        auth__oidc_issuer=oidc_provider.issuer,
        auth__oidc_client_id=client.client_id,
        auth__oidc_client_secret=client.client_secret,
        auth__oidc_redirect_uri=callback,
        auth__oidc_ca_cert=oidc_provider.ca_pem,
        auth__oidc_button_label="Sign in with Example SSO",
    )
    page.goto(gateway.url + "/")
    page.get_by_role("button", name="Sign in with Example SSO").click()
    page.get_by_placeholder("sub").fill("ada-sso")  # the provider's own form
    page.get_by_role("button", name="Authorize").click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    expect(page).to_have_url(gateway.url + "/")  # ?sso=success is consumed
    users = gateway.api("GET", "/users", admin_token).json()["users"]
    sso_user = next(u for u in users if u["authProvider"] == "oidc")
    assert sso_user["displayName"] == "Ada Sso"

    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="Sign in with Example SSO").click()
    page.get_by_role("button", name="Deny").click()
    expect(page.get_by_role("alert")).to_contain_text("Single sign-on failed:")
    expect(page).to_have_url(gateway.url + "/")
    expect(page.get_by_role("heading", name="Sign in")).to_be_visible()


def test_single_sign_on_then_the_accounts_own_code(
    sso_page: Any,
    screens: Screens,
    gateway: Gateway,
    admin_token: str,
    oidc_provider: OidcProvider,  # noqa: F811
) -> None:
    """An SSO account holding TOTP: the provider's sign-in alone opens nothing, the code does."""
    page = sso_page
    callback = f"{gateway.url}/api/v1/auth/oidc/callback"
    client = oidc_provider.register_client(callback)
    oidc_provider.set_user("tess-sso", name="Tess Sso", email="tess@example.com")
    gateway.set_settings(
        admin_token,
        auth__oidc_enabled=True,
        auth__oidc_issuer=oidc_provider.issuer,
        auth__oidc_client_id=client.client_id,
        auth__oidc_client_secret=client.client_secret,
        auth__oidc_redirect_uri=callback,
        auth__oidc_ca_cert=oidc_provider.ca_pem,
        auth__oidc_button_label="Sign in with Example SSO",
    )

    def single_sign_on() -> None:
        page.get_by_role("button", name="Sign in with Example SSO").click()
        page.get_by_placeholder("sub").fill("tess-sso")
        page.get_by_role("button", name="Authorize").click()

    page.goto(gateway.url + "/")
    single_sign_on()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    token = next(c["value"] for c in page.context.cookies() if c["name"] == "hostgate_token")
    secret = gateway.api("POST", "/profile/mfa/setup", token).json()["secret"]
    totp = pyotp.TOTP(secret)
    verified = gateway.api("POST", "/profile/mfa/verify", token, json={"token": totp.now()})
    assert verified.status_code == 200, verified.text

    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    single_sign_on()
    expect(page.get_by_role("heading", name="Two-step verification")).to_be_visible()
    expect(page).to_have_url(gateway.url + "/")  # ?sso=second_step is consumed
    screens.check(page, "sso-second-step")
    page.get_by_label("Authentication code").fill(totp.at(time.time() + 30))
    page.get_by_role("button", name="Verify").click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    logins = gateway.api("GET", "/audit?eventType=auth.login", admin_token).json()
    latest = logins["entries"][0]
    users = gateway.api("GET", "/users", admin_token).json()["users"]
    tess = next(u for u in users if u["displayName"] == "Tess Sso")
    assert latest["username"] == tess["username"] and tess["authProvider"] == "oidc"
    assert latest["details"]["method"] == "oidc" and latest["details"]["mfa"] is True
