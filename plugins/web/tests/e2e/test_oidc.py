"""Single sign-on through the suite's real OIDC provider, in the browser, both ways back."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.oidc import OidcProvider, oidc_provider  # noqa: F401 - the fixture

from .conftest import AXE_SOURCE, DESKTOP, Console, Gateway

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
