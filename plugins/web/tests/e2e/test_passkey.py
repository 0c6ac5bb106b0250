"""Passkey sign-in through Chromium's virtual authenticator (CDP WebAuthn)."""

from __future__ import annotations

from typing import Any

import pytest
from playwright.sync_api import expect

from testsupport.gateway import ADMIN_PASSWORD

from .conftest import Gateway

pytestmark = pytest.mark.peer("chromium")

# Registering belongs to the profile screen; until it exists, the page registers the
# passkey itself through the documented routes, the way that screen will.
REGISTER = """async () => {
  const post = (path, body) => fetch(path, {
    method: "POST", headers: {"Content-Type": "application/json"}, body: JSON.stringify(body),
  }).then(async (r) => { if (!r.ok) throw new Error(await r.text()); return r.json(); });
  const { options, challengeId } = await post("/api/v1/profile/passkeys/register/options", {});
  const credential = await navigator.credentials.create({
    publicKey: PublicKeyCredential.parseCreationOptionsFromJSON(options),
  });
  return post("/api/v1/profile/passkeys/register/verify",
    { challengeId, response: credential.toJSON(), name: "Virtual key" });
}"""


def test_sign_in_with_a_passkey(page: Any, gateway: Gateway, admin_token: str) -> None:
    gateway.set_settings(admin_token, security__passkey_enabled=True)
    # WebAuthn needs a domain for its relying party id: localhost, not 127.0.0.1
    origin = f"http://localhost:{gateway.port}"
    cdp = page.context.new_cdp_session(page)
    cdp.send("WebAuthn.enable")
    cdp.send(
        "WebAuthn.addVirtualAuthenticator",
        {
            "options": {
                "protocol": "ctap2",
                "transport": "internal",
                "hasResidentKey": True,
                "hasUserVerification": True,
                "isUserVerified": True,
                "automaticPresenceSimulation": True,
            }
        },
    )
    page.goto(origin + "/")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(ADMIN_PASSWORD)
    page.get_by_role("button", name="Sign in", exact=True).click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    page.evaluate(REGISTER)
    passkeys = gateway.api("GET", "/profile/passkeys", admin_token).json()
    assert [p["name"] for p in passkeys["passkeys"]] == ["Virtual key"]

    page.get_by_role("button", name="account menu").click()
    page.get_by_role("button", name="Sign out").click()
    page.get_by_role("button", name="Sign in with a passkey").click()
    expect(page.get_by_role("navigation", name="Connections")).to_be_visible()
    entries = gateway.api("GET", "/audit", admin_token, params={"eventType": "auth.login"}).json()
    assert entries["entries"][0]["details"].get("method") == "passkey", entries["entries"][0]
