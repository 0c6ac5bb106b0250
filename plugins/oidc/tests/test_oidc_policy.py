"""Every request to the identity provider obeys the target network policy."""

from __future__ import annotations

from typing import Any

import pytest
from hostgate_oidc.provider import _secure_url

from testsupport.fixtures import store_unchecked

pytestmark = pytest.mark.peer("oidc-provider-mock")


async def denials(client: Any, admin: Any) -> list[dict[str, Any]]:
    response = await client.get("/api/v1/audit?eventType=network.denied", headers=admin.headers)
    return list((await response.get_json())["entries"])


async def test_discovery_of_a_refused_issuer_is_not_fetched(client, admin, kernel, oidc_on):
    await kernel.settings.update({"network.deny": "127.0.0.1"})
    for _ in range(3):  # anyone may ask; the refusal is remembered for a few seconds
        answer = await client.get("/api/v1/auth/oidc/authorize")
        body = await answer.get_json()
        assert answer.status_code == 502, body
        assert body["code"] == "oidc_target_denied"
        assert "network.deny" in body["error"]
    [entry] = await denials(client, admin)
    assert entry["details"]["purpose"] == "oidc"
    assert entry["target"] == oidc_on["auth.oidc_issuer"].removeprefix("https://").rstrip("/")


async def test_endpoints_the_discovery_document_names_are_checked_too(
    flow, client, admin, kernel, oidc_provider, oidc_on
):
    oidc_provider.set_user("sub-carol", preferred_username="carol")
    url = await flow.start()  # discovery allowed and cached
    params = await flow.sign_in(url, "sub-carol")
    await kernel.settings.update({"network.deny": "127.0.0.1"})
    message = flow.sso_error(await flow.callback(params))
    assert "token endpoint" in message
    assert "network policy does not allow" in message
    [entry] = await denials(client, admin)
    assert entry["details"]["purpose"] == "oidc"

    await kernel.settings.update({"network.deny": ""})
    answer = await flow.login("sub-carol")
    assert answer.headers["Location"] == "/?sso=success"


@pytest.mark.parametrize("url", ["https://[::1", "https://a\x00b/jwks", "ftp://idp.example/"])
def test_a_url_that_does_not_parse_is_not_usable(url):
    assert not _secure_url(url)


async def test_an_issuer_that_does_not_parse_is_a_clear_502(client, kernel, oidc_on):
    # refused when saved now; one stored by an older release is still used safely
    await store_unchecked(kernel, "auth.oidc_issuer", "https://[::1")
    answer = await client.get("/api/v1/auth/oidc/authorize")
    assert answer.status_code == 502
    assert (await answer.get_json())["code"] == "oidc_misconfigured"


@pytest.mark.parametrize("issuer", ["http://idp.example.org", "https://[::1", "idp.example.org"])
async def test_a_bad_issuer_is_refused_when_saved_and_sign_in_keeps_working(
    client, kernel, admin, oidc_on, issuer
):
    answer = await client.put(
        "/api/v1/settings",
        json={"auth.oidc_issuer": issuer, "auth.oidc_client_id": "someone-else"},
        headers=admin.headers,
    )
    assert answer.status_code == 400
    body = await answer.get_json()
    assert body["code"] == "invalid_input"
    assert body["error"].startswith("auth.oidc_issuer: must be an https:// URL")
    assert kernel.settings.get("auth.oidc_issuer") == oidc_on["auth.oidc_issuer"]
    assert kernel.settings.get("auth.oidc_client_id") == oidc_on["auth.oidc_client_id"]
    # the provider is still reached: a 400 at save time, not a 502 at sign-in
    start = await client.get("/api/v1/auth/oidc/authorize")
    assert start.status_code == 200, await start.get_data(as_text=True)
